// Event webhook secrets and signatures against the Standard Webhooks specification's own
// test vector, so any receiver using one of that specification's libraries verifies them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateWebhookSecret, signWebhookMessage, webhookSecretKey, webhookSignatureHeader } from '../../src/domain/webhookSignatures.js';

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
