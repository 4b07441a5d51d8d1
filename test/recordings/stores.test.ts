// The two recording stores behind one interface: local files and S3 (against the fake S3 of
// test/support/fakeS3.ts, which checks every signature). Both pass the same conformance
// cases; then what only one of them has: path safety and atomic writes for files, addressing
// styles, signatures and S3 errors for S3. The fake's signature check is its own SigV4
// implementation, proven here against the signed examples of the S3 documentation, so the
// SDK's requests passing it means they are signed as S3 wants.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { localRecordingStore } from '../../src/recordings/local.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { S3Error, s3RecordingStore } from '../../src/recordings/s3.js';
import { RangeNotSatisfiableError, RecordingExistsError, type RecordingStore } from '../../src/recordings/store.js';
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
const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

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

    test('a put with ifAbsent writes a new key; on a taken key it fails and leaves the object as it was (a recording is never overwritten)', async () => {
      const key = newKey();
      await store().put(key, Readable.from([DIGITS]), 'audio/wav', DIGITS.length, { ifAbsent: true });
      await assert.rejects(store().put(key, Readable.from([Buffer.from('other')]), 'audio/wav', 5, { ifAbsent: true }), RecordingExistsError);
      await assert.rejects(store().put(key, Buffer.from('other'), 'audio/wav', undefined, { ifAbsent: true }), RecordingExistsError);
      assert.equal(await text((await store().get(key))!.stream), DIGITS.toString());
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

test('local store: concurrent ifAbsent writes of one key store exactly one of them, whole, and leave no temporary file', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'recordings-race-'));
  try {
    const store = localRecordingStore(dir);
    const teamId = randomUUID();
    const key = recordingKey(teamId, randomUUID());
    const bodies = Array.from({ length: 8 }, (_, i) => Buffer.alloc(64 * 1024, 65 + i));
    const results = await Promise.allSettled(bodies.map((body) => store.put(key, Readable.from([body]), 'audio/wav', body.length, { ifAbsent: true })));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof RecordingExistsError, String(r.reason));
    const stored = Buffer.from(await text((await store.get(key))!.stream), 'utf8');
    assert.ok(bodies.some((body) => body.equals(stored)), 'one body, whole');
    assert.equal(readdirSync(path.join(dir, teamId)).length, 1, 'only the recording');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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

  test('ifAbsent is If-None-Match: * on the wire: S3 answers a taken key 412 PreconditionFailed, thrown as RecordingExistsError', async () => {
    const key = newKey();
    s3.requests.length = 0;
    await pathStyle().put(key, DIGITS, 'audio/wav', undefined, { ifAbsent: true });
    await assert.rejects(virtualHosted().put(key, Readable.from([Buffer.from('other')]), 'audio/wav', 5, { ifAbsent: true }), RecordingExistsError);
    await pathStyle().put(key, Buffer.from('replaced'), 'audio/wav');
    assert.deepEqual(
      s3.requests.map((r) => [r.method, r.status, r.code ?? null]),
      [
        ['PUT', 200, null],
        ['PUT', 412, 'PreconditionFailed'],
        ['PUT', 200, null],
      ],
      'a put without ifAbsent is unconditional',
    );
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
});

// The signed requests of "Signature Calculations for the Authorization Header" in the S3 API
// reference (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html):
// bucket examplebucket in us-east-1, 24 May 2013, the documentation's example keys.
const EXAMPLE = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  region: 'us-east-1',
  host: 'examplebucket.s3.amazonaws.com',
  date: '20130524T000000Z',
  emptyHash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
};
const exampleAuthorization = (signedHeaders: string, signature: string) =>
  `AWS4-HMAC-SHA256 Credential=${EXAMPLE.accessKeyId}/20130524/${EXAMPLE.region}/s3/aws4_request,SignedHeaders=${signedHeaders},Signature=${signature}`;
const GET_OBJECT = {
  method: 'GET',
  path: '/test.txt',
  headers: {
    Range: 'bytes=0-9',
    'x-amz-content-sha256': EXAMPLE.emptyHash,
    'x-amz-date': EXAMPLE.date,
    Authorization: exampleAuthorization('host;range;x-amz-content-sha256;x-amz-date', 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41'),
  },
};
const PUT_OBJECT = {
  method: 'PUT',
  path: '/test%24file.text',
  body: 'Welcome to Amazon S3.',
  headers: {
    Date: 'Fri, 24 May 2013 00:00:00 GMT',
    'x-amz-date': EXAMPLE.date,
    'x-amz-storage-class': 'REDUCED_REDUNDANCY',
    'x-amz-content-sha256': '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
    Authorization: exampleAuthorization('date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class', '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd'),
  },
};
const GET_LIFECYCLE = {
  method: 'GET',
  path: '/?lifecycle',
  headers: {
    'x-amz-date': EXAMPLE.date,
    'x-amz-content-sha256': EXAMPLE.emptyHash,
    Authorization: exampleAuthorization('host;x-amz-content-sha256;x-amz-date', 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543'),
  },
};
const LIST_OBJECTS = {
  method: 'GET',
  path: '/?max-keys=2&prefix=J',
  headers: {
    'x-amz-date': EXAMPLE.date,
    'x-amz-content-sha256': EXAMPLE.emptyHash,
    Authorization: exampleAuthorization('host;x-amz-content-sha256;x-amz-date', '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7'),
  },
};

describe("the fake S3's signature check, against the examples of the S3 documentation", () => {
  let s3: FakeS3;
  before(async () => {
    s3 = await startFakeS3({
      accessKeyId: EXAMPLE.accessKeyId,
      secretAccessKey: EXAMPLE.secretAccessKey,
      region: EXAMPLE.region,
      buckets: ['examplebucket'],
      virtualHostBase: 's3.amazonaws.com',
      now: () => Date.parse('2013-05-24T00:00:00Z'),
    });
  });
  after(async () => s3?.close());

  /** Sends a request to the fake as if to examplebucket.s3.amazonaws.com (the Host header is what is signed). */
  function send(request: { method: string; path: string; headers: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
    const body = Buffer.from(request.body ?? '');
    const url = new URL(s3.url);
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: url.hostname, port: url.port, method: request.method, path: request.path, headers: { ...request.headers, Host: EXAMPLE.host, 'Content-Length': String(body.length) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
  const codeOf = (xml: string) => /<Code>([^<]*)<\/Code>/.exec(xml)?.[1];

  test('the documented GET Object, PUT Object, GET Bucket Lifecycle and List Objects requests pass it', async () => {
    s3.objects.set('examplebucket/test.txt', { body: Buffer.from('Welcome to Amazon S3.'), contentType: 'text/plain', etag: '"x"', lastModified: new Date() });
    const get = await send(GET_OBJECT);
    assert.deepEqual([get.status, get.body], [206, 'Welcome to']);
    const put = await send(PUT_OBJECT);
    assert.equal(put.status, 200, put.body);
    assert.equal(s3.objects.get('examplebucket/test$file.text')?.body.toString(), 'Welcome to Amazon S3.');
    // Signed well; the fake then answers that it has no bucket operations.
    for (const request of [GET_LIFECYCLE, LIST_OBJECTS]) {
      const res = await send(request);
      assert.deepEqual([res.status, codeOf(res.body)], [501, 'NotImplemented'], request.path);
    }
  });

  test('the same requests altered in any signed part fail it: path, header, query, method, time; a body unlike its hash too', async () => {
    const altered = [
      { ...GET_OBJECT, path: '/test.txt2' },
      { ...GET_OBJECT, headers: { ...GET_OBJECT.headers, Range: 'bytes=0-10' } },
      { ...GET_OBJECT, method: 'HEAD' },
      { ...GET_OBJECT, headers: { ...GET_OBJECT.headers, 'x-amz-date': '20130524T000001Z' } },
      { ...LIST_OBJECTS, path: '/?max-keys=3&prefix=J' },
      { ...PUT_OBJECT, headers: { ...PUT_OBJECT.headers, 'x-amz-storage-class': 'STANDARD' } },
    ];
    for (const request of altered) {
      const res = await send(request);
      assert.equal(res.status, 403, `${request.method} ${request.path}`);
      if (request.method !== 'HEAD') assert.equal(codeOf(res.body), 'SignatureDoesNotMatch', `${request.method} ${request.path}`);
    }
    const unsignedHeader = await send({ ...GET_OBJECT, headers: { ...GET_OBJECT.headers, 'x-amz-meta-extra': 'x' } });
    assert.deepEqual([unsignedHeader.status, codeOf(unsignedHeader.body)], [403, 'AccessDenied']);
    const otherBody = await send({ ...PUT_OBJECT, body: 'Welcome to Amazon S4.' });
    assert.deepEqual([otherBody.status, codeOf(otherBody.body)], [400, 'XAmzContentSHA256Mismatch']);
  });
});
