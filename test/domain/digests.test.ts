// How secrets are kept (src/domain/digests.ts, src/domain/apiKeys.ts): the SHA-256 (hex) of
// a 256-bit random token, compared in constant time. The stored form must never change
// (every issued API key, hook token and session token would stop working), so it is pinned
// to the FIPS 180-2 examples. A fast hash is right here: the tokens are random, not
// passwords, so there is nothing for a slow hash to protect against.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { apiKeyPrefix, generateApiKey } from '../../src/domain/apiKeys.js';
import { digestsEqual, hashSecret } from '../../src/domain/digests.js';

describe('secret digests', () => {
  test('hashSecret is the hex SHA-256 of FIPS 180-2 ("abc", and the empty string)', () => {
    assert.equal(hashSecret('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(hashSecret(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  test('an API key is <prefix>_<256 random bits>, stored as its hashSecret only', () => {
    const { apiKey, prefix, hash } = generateApiKey();
    assert.match(apiKey, /^va[a-z0-9]{10}_[A-Za-z0-9_-]{43}$/);
    assert.equal(apiKeyPrefix(apiKey), prefix);
    assert.equal(hash, hashSecret(apiKey));
    assert.notEqual(generateApiKey().apiKey, apiKey);
  });

  test('digestsEqual: the same digest only; another or a shorter one is not equal', () => {
    const digest = hashSecret('abc');
    assert.equal(digestsEqual(digest, hashSecret('abc')), true);
    assert.equal(digestsEqual(digest, hashSecret('abd')), false);
    assert.equal(digestsEqual(digest, `${digest.slice(0, -1)}e`), false);
    assert.equal(digestsEqual(digest, digest.slice(0, 62)), false);
    assert.equal(digestsEqual(digest, ''), false);
  });
});
