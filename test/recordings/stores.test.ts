// The two recording stores behind one interface: local files and S3 (against the fake S3 of
// test/support/fakeS3.ts, which checks every signature). Both pass the same conformance
// cases; then what only one of them has: path safety and atomic writes for files, addressing
// styles, signatures and S3 errors for S3.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { localRecordingStore } from '../../src/recordings/local.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { S3Error, s3RecordingStore } from '../../src/recordings/s3.js';
import { signRequest, sha256Hex } from '../../src/recordings/sigv4.js';
import { RangeNotSatisfiableError, type RecordingStore } from '../../src/recordings/store.js';
import { startFakeS3, type FakeS3 } from '../support/fakeS3.js';

const CREDENTIALS = { accessKeyId: 'AKIATESTFAKE0001', secretAccessKey: 'fake-secret-0123456789abcdefghij', region: 'eu-west-1' };
const BUCKET = 'recordings-test';

async function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const newKey = () => recordingKey(randomUUID(), randomUUID());
const DIGITS = Buffer.from('0123456789abcdefghij');

/** The cases every store passes. */
function conformance(name: string, store: () => RecordingStore) {
  describe(`${name}: the RecordingStore contract`, () => {
    test('put a Buffer, get it back whole with its size and content type; exists; delete', async () => {
      const key = newKey();
      assert.equal(await store().exists(key), false);
      await store().put(key, DIGITS, 'audio/wav');
      assert.equal(await store().exists(key), true);
      const got = await store().get(key);
      assert.ok(got);
      assert.equal(got.size, 20);
      assert.equal(got.partial, false);
      assert.deepEqual([got.start, got.end], [0, 19]);
      assert.equal(got.contentType, 'audio/wav');
      assert.equal(await text(got.stream), DIGITS.toString());
      await store().delete(key);
      assert.equal(await store().exists(key), false);
      assert.equal(await store().get(key), undefined);
      await store().delete(key); // deleting a missing key is fine
    });

    test('put a stream with its size, and a stream without one', async () => {
      const key = newKey();
      await store().put(key, Readable.from([Buffer.from('abc'), Buffer.from('def')]), 'audio/wav', 6);
      assert.equal(await text((await store().get(key))!.stream), 'abcdef');
      await store().put(key, Readable.from([Buffer.from('xyz')]), 'audio/wav');
      assert.equal(await text((await store().get(key))!.stream), 'xyz', 'a second put replaces the object');
    });

    test('ranges: start-end, start-, -suffix (clamped to the object), and unsatisfiable ones', async () => {
      const key = newKey();
      await store().put(key, DIGITS, 'audio/wav');
      const cases = [
        [{ start: 2, end: 5 }, '2345', 2, 5],
        [{ start: 15 }, 'fghij', 15, 19],
        [{ suffix: 3 }, 'hij', 17, 19],
        [{ start: 18, end: 1000 }, 'ij', 18, 19],
        [{ suffix: 50 }, DIGITS.toString(), 0, 19],
      ] as const;
      for (const [range, body, start, end] of cases) {
        const got = await store().get(key, range);
        assert.ok(got, JSON.stringify(range));
        assert.equal(got.partial, true);
        assert.deepEqual([got.start, got.end, got.size], [start, end, 20], JSON.stringify(range));
        assert.equal(await text(got.stream), body, JSON.stringify(range));
      }
      await assert.rejects(store().get(key, { start: 20 }), (err: unknown) => err instanceof RangeNotSatisfiableError && err.size === 20);
      assert.equal(await store().get(newKey(), { start: 0 }), undefined, 'a range of a missing key is still not found');
    });

    test('keys that could leave their folder are refused before any I/O', async () => {
      for (const key of ['../etc/passwd', '/abs/olute.wav', 'a/../../b.wav', 'a/./b.wav', 'a//b.wav', 'a\\b.wav', '', '.hidden/x.wav', 'a/b.wav\n']) {
        await assert.rejects(store().put(key, DIGITS, 'audio/wav'), /invalid recording key/, JSON.stringify(key));
        await assert.rejects(store().get(key), /invalid recording key/, JSON.stringify(key));
      }
    });
  });
}

describe('local store', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'recordings-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  conformance('local', () => localRecordingStore(dir));

  test('files live at <dir>/<team_id>/<call_id>.wav; a failed write leaves neither the file nor a temporary one', async () => {
    const store = localRecordingStore(dir);
    const teamId = randomUUID();
    const callId = randomUUID();
    const key = recordingKey(teamId, callId);
    await store.put(key, DIGITS, 'audio/wav');
    assert.deepEqual(readdirSync(path.join(dir, teamId)), [`${callId}.wav`]);

    const other = recordingKey(teamId, randomUUID());
    const failing = new Readable({
      read() {
        this.push(Buffer.from('part'));
        this.destroy(new Error('source failed'));
      },
    });
    await assert.rejects(store.put(other, failing, 'audio/wav', 100), /source failed/);
    await assert.rejects(store.put(other, Readable.from([Buffer.from('short')]), 'audio/wav', 100), /expected 100 bytes/);
    assert.deepEqual(readdirSync(path.join(dir, teamId)), [`${callId}.wav`], 'only the complete file');
    assert.equal(await store.exists(other), false);
  });
});

describe('S3 store against the fake S3', () => {
  let s3: FakeS3;
  before(async () => {
    s3 = await startFakeS3({ ...CREDENTIALS, buckets: [BUCKET] });
  });
  after(async () => s3?.close());

  const pathStyle = () => s3RecordingStore({ ...CREDENTIALS, endpoint: s3.url, bucket: BUCKET, forcePathStyle: true });
  const virtualHosted = () => s3RecordingStore({ ...CREDENTIALS, endpoint: s3.virtualHostUrl, bucket: BUCKET, forcePathStyle: false, lookup: s3.lookup });
  conformance('S3 path-style', pathStyle);
  conformance('S3 virtual-hosted-style', virtualHosted);

  test('path-style puts the bucket in the path, virtual-hosted-style in the host name', async () => {
    const key = newKey();
    s3.requests.length = 0;
    await pathStyle().put(key, DIGITS, 'audio/wav');
    await virtualHosted().exists(key);
    assert.equal(s3.requests[0].path, `/${BUCKET}/${key}`);
    assert.match(s3.requests[0].host, /^127\.0\.0\.1:\d+$/);
    assert.equal(s3.requests[1].path, `/${key}`);
    assert.match(s3.requests[1].host, new RegExp(`^${BUCKET}\\.s3\\.localhost:\\d+$`));
    assert.deepEqual(s3.requests.map((r) => r.status), [200, 200]);
    assert.equal(s3.objects.get(`${BUCKET}/${key}`)?.contentType, 'audio/wav');
  });

  test('a Buffer is sent with its SHA-256, a sized stream as UNSIGNED-PAYLOAD; both verified', async () => {
    s3.requests.length = 0;
    await pathStyle().put(newKey(), DIGITS, 'audio/wav');
    await pathStyle().put(newKey(), Readable.from([DIGITS]), 'audio/wav', DIGITS.length);
    assert.deepEqual(s3.requests.map((r) => r.payloadHash), [sha256Hex(DIGITS), 'UNSIGNED-PAYLOAD']);
  });

  test('a wrong secret: S3 answers 403 SignatureDoesNotMatch and the store throws it', async () => {
    const wrong = s3RecordingStore({ ...CREDENTIALS, secretAccessKey: 'not-the-secret-0123456789', endpoint: s3.url, bucket: BUCKET, forcePathStyle: true });
    await assert.rejects(wrong.put(newKey(), DIGITS, 'audio/wav'), (err: unknown) => err instanceof S3Error && err.status === 403 && err.code === 'SignatureDoesNotMatch');
    await assert.rejects(wrong.put(newKey(), Readable.from([DIGITS]), 'audio/wav', DIGITS.length), (err: unknown) => err instanceof S3Error && err.code === 'SignatureDoesNotMatch');
    await assert.rejects(wrong.get(newKey()), (err: unknown) => err instanceof S3Error && err.code === 'SignatureDoesNotMatch');
    await assert.rejects(wrong.exists(newKey()), (err: unknown) => err instanceof S3Error && err.status === 403);
    const unknownKeyId = s3RecordingStore({ ...CREDENTIALS, accessKeyId: 'AKIANOBODY', endpoint: s3.url, bucket: BUCKET, forcePathStyle: true });
    await assert.rejects(unknownKeyId.get(newKey()), (err: unknown) => err instanceof S3Error && err.code === 'InvalidAccessKeyId');
  });

  test('a missing key is not found (GET 404 NoSuchKey, HEAD 404); a missing bucket is an error', async () => {
    const key = newKey();
    s3.requests.length = 0;
    assert.equal(await pathStyle().get(key), undefined);
    assert.equal(await pathStyle().exists(key), false);
    assert.deepEqual(s3.requests.map((r) => [r.status, r.code]), [[404, 'NoSuchKey'], [404, 'NoSuchKey']]);
    const noBucket = s3RecordingStore({ ...CREDENTIALS, endpoint: s3.url, bucket: 'no-such-bucket', forcePathStyle: true });
    await assert.rejects(noBucket.get(key), (err: unknown) => err instanceof S3Error && err.code === 'NoSuchBucket');
  });

  test('the fake rejects what S3 rejects: a body that does not match its hash, a tampered path', async () => {
    // A request signed for one object but sent for another.
    const url = new URL(`${s3.url}/${BUCKET}/${newKey()}`);
    const headers = signRequest({ method: 'GET', url, headers: {}, payloadHash: sha256Hex('') }, { ...CREDENTIALS, service: 's3' });
    const tampered = await fetch(`${s3.url}/${BUCKET}/${newKey()}`, { headers });
    assert.equal(tampered.status, 403);
    assert.match(await tampered.text(), /<Code>SignatureDoesNotMatch<\/Code>/);
    const putUrl = new URL(`${s3.url}/${BUCKET}/${newKey()}`);
    const putHeaders = signRequest({ method: 'PUT', url: putUrl, headers: { 'content-length': '3' }, payloadHash: sha256Hex('abc') }, { ...CREDENTIALS, service: 's3' });
    const mismatch = await fetch(putUrl, { method: 'PUT', headers: putHeaders, body: 'abd' });
    assert.equal(mismatch.status, 400);
    assert.match(await mismatch.text(), /<Code>XAmzContentSHA256Mismatch<\/Code>/);
  });
});

describe('Signature Version 4', () => {
  test('matches the GET Object example of the S3 documentation (Range: bytes=0-9)', () => {
    const headers = signRequest(
      { method: 'GET', url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'), headers: { range: 'bytes=0-9' }, payloadHash: sha256Hex('') },
      { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', region: 'us-east-1', service: 's3' },
      new Date('2013-05-24T00:00:00Z'),
    );
    assert.equal(
      headers.authorization,
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });
});
