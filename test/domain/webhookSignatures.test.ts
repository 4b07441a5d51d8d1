// Event webhook secrets and signatures against the Standard Webhooks specification's own
// test vector, so any receiver using one of that specification's libraries verifies them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  generateWebhookSecret,
  isWebhookSecret,
  signWebhookMessage,
  verifyStandardWebhook,
  webhookSecretKey,
  webhookSignatureHeader,
} from '../../src/domain/webhookSignatures.js';

const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

test('the signature of the specification’s test vector', () => {
  assert.equal(signWebhookMessage(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body), VECTOR.signature);
});

test('the header carries one signature per secret, newest first, separated by a space', () => {
  const other = generateWebhookSecret();
  const header = webhookSignatureHeader([other, VECTOR.secret], VECTOR.id, VECTOR.timestamp, VECTOR.body);
  const parts = header.split(' ');
  assert.equal(parts.length, 2);
  assert.equal(parts[0], signWebhookMessage(other, VECTOR.id, VECTOR.timestamp, VECTOR.body));
  assert.equal(parts[1], VECTOR.signature);
});

test('a new secret is whsec_ and the base64 of 32 random bytes, different every time', () => {
  const secrets = new Set(Array.from({ length: 50 }, generateWebhookSecret));
  assert.equal(secrets.size, 50);
  for (const secret of secrets) {
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(webhookSecretKey(secret).length, 32);
  }
});

test('any change of id, timestamp or body changes the signature', () => {
  const base = signWebhookMessage(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body);
  assert.notEqual(signWebhookMessage(VECTOR.secret, `${VECTOR.id}x`, VECTOR.timestamp, VECTOR.body), base);
  assert.notEqual(signWebhookMessage(VECTOR.secret, VECTOR.id, VECTOR.timestamp + 1, VECTOR.body), base);
  assert.notEqual(signWebhookMessage(VECTOR.secret, VECTOR.id, VECTOR.timestamp, `${VECTOR.body} `), base);
});

// Verification of inbound Standard Webhooks requests (hooks created with --signature
// standard-webhooks), against the specification's vector and the scenarios of its reference
// libraries' test suites: missing headers, a timestamp that is no number, a wrong, partial or
// empty signature, several signatures of which one is valid, the secret with and without its
// prefix, and timestamps outside the five minutes either way.
describe('verifyStandardWebhook', () => {
  const headers = { id: VECTOR.id, timestamp: String(VECTOR.timestamp), signature: VECTOR.signature };
  const clock = { nowSeconds: VECTOR.timestamp, toleranceSeconds: 300 };

  test('the specification’s vector verifies, with the secret with or without its whsec_ prefix', () => {
    assert.deepEqual(verifyStandardWebhook(VECTOR.secret, headers, VECTOR.body, clock), { ok: true, id: VECTOR.id, timestamp: VECTOR.timestamp });
    assert.equal(verifyStandardWebhook(VECTOR.secret.slice('whsec_'.length), headers, VECTOR.body, clock).ok, true);
    assert.equal(verifyStandardWebhook(VECTOR.secret, headers, Buffer.from(VECTOR.body), clock).ok, true);
  });

  test('a missing webhook-id, webhook-timestamp or webhook-signature is refused', () => {
    for (const missing of ['id', 'timestamp', 'signature'] as const) {
      assert.deepEqual(verifyStandardWebhook(VECTOR.secret, { ...headers, [missing]: undefined }, VECTOR.body, clock), { ok: false, problem: 'missing_headers' }, missing);
      assert.deepEqual(verifyStandardWebhook(VECTOR.secret, { ...headers, [missing]: '' }, VECTOR.body, clock), { ok: false, problem: 'missing_headers' }, missing);
    }
  });

  test('a timestamp that is not decimal Unix seconds is refused', () => {
    for (const timestamp of ['hello', '1614265330.5', '-1614265330', '0x603800f2', '1614265330abc', '16142653300000000']) {
      assert.deepEqual(verifyStandardWebhook(VECTOR.secret, { ...headers, timestamp }, VECTOR.body, clock), { ok: false, problem: 'malformed_timestamp' }, timestamp);
    }
  });

  test('a wrong, partial or empty signature is refused', () => {
    for (const signature of ['v1,dawfeoifkpqwoekfpqoekf', VECTOR.signature.slice(0, 8), 'v1,', 'v1', `v2,${VECTOR.signature.slice(3)}`, VECTOR.signature.slice(3)]) {
      assert.deepEqual(verifyStandardWebhook(VECTOR.secret, { ...headers, signature }, VECTOR.body, clock), { ok: false, problem: 'bad_signature' }, signature);
    }
    assert.equal(verifyStandardWebhook(generateWebhookSecret(), headers, VECTOR.body, clock).ok, false, 'another secret');
    assert.equal(verifyStandardWebhook(VECTOR.secret, headers, `${VECTOR.body} `, clock).ok, false, 'another body');
    assert.equal(verifyStandardWebhook(VECTOR.secret, { ...headers, id: `${VECTOR.id}x` }, VECTOR.body, clock).ok, false, 'another id');
  });

  test('one valid signature among others (other versions, other secrets) is enough', () => {
    const signature = [
      'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      VECTOR.signature,
      'v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==',
    ].join(' ');
    assert.equal(verifyStandardWebhook(VECTOR.secret, { ...headers, signature }, VECTOR.body, clock).ok, true);
  });

  test('a timestamp more than the tolerance in the past or the future is refused; at the tolerance it is accepted', () => {
    const at = (nowSeconds: number) => verifyStandardWebhook(VECTOR.secret, headers, VECTOR.body, { nowSeconds, toleranceSeconds: 300 });
    assert.deepEqual(at(VECTOR.timestamp + 301), { ok: false, problem: 'too_old' });
    assert.deepEqual(at(VECTOR.timestamp - 301), { ok: false, problem: 'too_new' });
    assert.equal(at(VECTOR.timestamp + 300).ok, true);
    assert.equal(at(VECTOR.timestamp - 300).ok, true);
  });

  test('the signature covers the body’s exact bytes, also when they are not valid UTF-8', () => {
    const body = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    const signature = signWebhookMessage(VECTOR.secret, VECTOR.id, VECTOR.timestamp, body);
    assert.notEqual(signature, signWebhookMessage(VECTOR.secret, VECTOR.id, VECTOR.timestamp, body.toString('utf8')));
    assert.equal(verifyStandardWebhook(VECTOR.secret, { ...headers, signature }, body, clock).ok, true);
    assert.equal(verifyStandardWebhook(VECTOR.secret, { ...headers, signature }, body.toString('utf8'), clock).ok, false);
  });
});

test('isWebhookSecret: whsec_ and the canonical base64 of 24 to 64 bytes', () => {
  assert.equal(isWebhookSecret(generateWebhookSecret()), true);
  assert.equal(isWebhookSecret(VECTOR.secret), true);
  assert.equal(isWebhookSecret(`whsec_${Buffer.alloc(64, 1).toString('base64')}`), true);
  assert.equal(isWebhookSecret(`whsec_${Buffer.alloc(23, 1).toString('base64')}`), false, 'too short');
  assert.equal(isWebhookSecret(`whsec_${Buffer.alloc(65, 1).toString('base64')}`), false, 'too long');
  assert.equal(isWebhookSecret(VECTOR.secret.slice('whsec_'.length)), false, 'no prefix');
  assert.equal(isWebhookSecret('whsec_api_test_secret_that_is_long_enough'), false, 'not base64');
  assert.equal(isWebhookSecret(''), false);
});
