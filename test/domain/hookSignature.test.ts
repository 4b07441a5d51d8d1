import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseSignatureHeader, signWebhookBody, webhookSignatureValid } from '../../src/domain/hookSignature.js';

const SECRET = 'whsec_test';
const hmac = (secret: string, body: Buffer | string) => createHmac('sha256', secret).update(body).digest('hex');

describe('webhook signature', () => {
  const body = Buffer.from('{"phone_number":"+14155550123"}');
  const good = hmac(SECRET, body);

  const cases: Array<[string, string | undefined, boolean]> = [
    ['sha256=<hex> of the body is accepted', `sha256=${good}`, true],
    ['bare hex is accepted', good, true],
    ['upper-case hex and prefix are accepted', `SHA256=${good.toUpperCase()}`, true],
    ['surrounding spaces are ignored', `  sha256=${good} `, true],
    ['a missing header is rejected', undefined, false],
    ['an empty header is rejected', '', false],
    ['another algorithm prefix is rejected', `sha1=${good}`, false],
    ['a truncated digest is rejected', `sha256=${good.slice(0, 63)}`, false],
    ['a digest with one extra character is rejected', `sha256=${good}0`, false],
    ['non-hex characters are rejected', `sha256=${'z'.repeat(64)}`, false],
    ['the digest under another secret is rejected', `sha256=${hmac('other', body)}`, false],
    ['the digest of another body is rejected', `sha256=${hmac(SECRET, '{"phone_number":"+14155550124"}')}`, false],
  ];
  for (const [name, header, valid] of cases) {
    test(name, () => assert.equal(webhookSignatureValid(SECRET, body, header), valid));
  }

  test('the signature covers the exact bytes: re-serialising the JSON breaks it', () => {
    const raw = Buffer.from('{ "name" : "Zoë 👋",\n\t"phone" : "+14155550123" }\r\n');
    const signature = signWebhookBody(SECRET, raw);
    assert.equal(webhookSignatureValid(SECRET, raw, signature), true);
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(raw.toString('utf8'))));
    assert.equal(webhookSignatureValid(SECRET, reserialised, signature), false);
  });

  test('any body signed with its secret verifies, and flipping any byte fails it', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 300 }), fc.string({ minLength: 1 }), fc.nat(), (bytes, secret, at) => {
        const raw = Buffer.from(bytes);
        const signature = `sha256=${signWebhookBody(secret, raw)}`;
        assert.equal(webhookSignatureValid(secret, raw, signature), true);
        const tampered = Buffer.from(raw);
        tampered[at % tampered.length] ^= 0x01;
        assert.equal(webhookSignatureValid(secret, tampered, signature), false);
      }),
    );
  });

  test('parseSignatureHeader returns the 32 digest bytes or undefined', () => {
    assert.equal(parseSignatureHeader(`sha256=${'ab'.repeat(32)}`)?.length, 32);
    assert.equal(parseSignatureHeader('sha256='), undefined);
    assert.equal(parseSignatureHeader(undefined), undefined);
  });
});
