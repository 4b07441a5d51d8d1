// The X-Call-Token format (src/domain/webCallTokens.ts) pinned to a value computed outside
// the project: printf 'web-call:<id>:<exp>' | openssl dgst -sha256 -hmac <secret> -binary | base64url.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkWebCallToken, mintWebCallToken } from '../../src/domain/webCallTokens.js';

const SECRET = 'media-edge-secret-for-vector-0001';
const CALL_ID = '00000000-0000-4000-8000-000000000001';
const EXP = 1_800_000_000;
const OPENSSL_VECTOR = '1800000000.L3_EInk-lW848VL4Yy2yhq1_4JoUT1IrcJH8UyNoy2Y';

test('a call token is <exp>.<base64url HMAC-SHA256 of web-call:<call_id>:<exp>>, as openssl computes it', () => {
  assert.equal(mintWebCallToken(SECRET, CALL_ID, new Date(EXP * 1000 + 999)), OPENSSL_VECTOR);
  assert.deepEqual(checkWebCallToken(SECRET, CALL_ID, OPENSSL_VECTOR, EXP * 1000 - 1), { valid: true, expiresAt: new Date(EXP * 1000) });
  assert.deepEqual(checkWebCallToken(SECRET, CALL_ID, OPENSSL_VECTOR, EXP * 1000), { valid: false, reason: 'expired' });
  // The expiry is inside the MAC: moving it on makes the token invalid, not longer-lived.
  assert.deepEqual(checkWebCallToken(SECRET, CALL_ID, OPENSSL_VECTOR.replace('1800000000', '1900000000'), EXP * 1000), { valid: false, reason: 'invalid' });
});
