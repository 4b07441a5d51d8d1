// The encryption of secrets kept in the database (src/secrets/secretBox.ts) and its
// settings: the stored format, key ids and rotation, what a wrong key or an altered value
// does, and the validation of SECRETS_ENCRYPTION_KEY(_PREVIOUS) at start-up.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig, secretBox } from '../../src/config/index.js';
import { decodeSecretsKey, isSealed, SecretBox, secretsKeyId, SecretUnreadable } from '../../src/secrets/secretBox.js';

const key = () => randomBytes(32);
const base = { NODE_ENV: 'test' } as NodeJS.ProcessEnv;

describe('SecretBox', () => {
  test('seal gives enc:v1:<key id>:<base64url> without the plaintext; open gives it back', () => {
    const k = key();
    const box = new SecretBox(k);
    const secret = 'whsec_c2VjcmV0IHRoYXQgbXVzdCBub3QgbGVhaw==';
    const sealed = box.seal(secret, 'webhook-endpoint:1');
    assert.match(sealed, /^enc:v1:[0-9a-f]{8}:[A-Za-z0-9_-]+$/);
    assert.equal(sealed.split(':')[2], secretsKeyId(k));
    assert.equal(box.keyId, secretsKeyId(k));
    assert.ok(!sealed.includes(secret) && !sealed.includes(secret.slice(6, 20)));
    assert.ok(isSealed(sealed) && box.isCurrent(sealed));
    assert.equal(box.open(sealed, 'webhook-endpoint:1'), secret);
    assert.notEqual(box.seal(secret, 'webhook-endpoint:1'), sealed, 'a fresh IV each time');
    assert.equal(box.open(box.seal('', 'c'), 'c'), '', 'the empty string round-trips');
    const unicode = '{"name":"Zoë ☎️","emoji":"\u{1F600}"}';
    assert.equal(box.open(box.seal(unicode, 'c'), 'c'), unicode, 'UTF-8 round-trips byte for byte');
  });

  test('a value written before encryption (no enc: prefix) opens as it is', () => {
    const box = new SecretBox(key());
    assert.equal(box.open('whsec_legacy', 'hook:x'), 'whsec_legacy');
    assert.equal(box.open('{"success":true}', 'idempotency:x'), '{"success":true}');
    assert.ok(!isSealed('whsec_legacy'));
  });

  test('another key, another context, an altered or truncated value, or an unknown version fail with SecretUnreadable', () => {
    const box = new SecretBox(key());
    const other = new SecretBox(key());
    const sealed = box.seal('s3cret', 'hook:a');
    assert.throws(() => other.open(sealed, 'hook:a'), (err: unknown) => {
      assert.ok(err instanceof SecretUnreadable);
      assert.match(err.message, new RegExp(`key id ${box.keyId}, which is neither SECRETS_ENCRYPTION_KEY \\(key id ${other.keyId}\\) nor one of SECRETS_ENCRYPTION_KEY_PREVIOUS`));
      return true;
    });
    assert.throws(() => box.open(sealed, 'hook:b'), /does not decrypt: it was altered or belongs to another record/);
    const payload = sealed.split(':')[3];
    const flipped = `${box.currentPrefix}${payload.slice(0, 10)}${payload[10] === 'A' ? 'B' : 'A'}${payload.slice(11)}`;
    assert.throws(() => box.open(flipped, 'hook:a'), SecretUnreadable);
    assert.throws(() => box.open(`${box.currentPrefix}AAAA`, 'hook:a'), /truncated/);
    assert.throws(() => box.open(sealed.replace('enc:v1:', 'enc:v2:'), 'hook:a'), /unknown format "v2"/);
  });

  test('rotation: a previous key only opens; the current one seals', () => {
    const oldKey = key();
    const before = new SecretBox(oldKey);
    const sealedBefore = before.seal('kept', 'c');
    const after = new SecretBox(key(), [oldKey]);
    assert.equal(after.open(sealedBefore, 'c'), 'kept');
    assert.ok(!after.isCurrent(sealedBefore));
    assert.ok(after.isCurrent(after.seal('kept', 'c')));
    assert.notEqual(after.keyId, before.keyId);
  });

  test('keys are 32 bytes in base64, base64url or hex; anything else is refused', () => {
    const k = key();
    for (const text of [k.toString('base64'), k.toString('base64url'), k.toString('hex'), k.toString('hex').toUpperCase(), ` ${k.toString('base64')}\n`]) {
      assert.ok(decodeSecretsKey(text)?.equals(k), text);
    }
    for (const text of ['', 'short', randomBytes(16).toString('base64'), randomBytes(31).toString('hex'), randomBytes(33).toString('base64'), `${k.toString('base64').slice(0, 43)}!`]) {
      assert.equal(decodeSecretsKey(text), undefined, text);
    }
  });
});

describe('SECRETS_ENCRYPTION_KEY settings', () => {
  test('a malformed key stops start-up naming the variable and the expected form', () => {
    for (const [name, value] of [
      ['SECRETS_ENCRYPTION_KEY', 'not-a-key'],
      ['SECRETS_ENCRYPTION_KEY', randomBytes(16).toString('base64')],
      ['SECRETS_ENCRYPTION_KEY_PREVIOUS', `${key().toString('base64')},nope`],
    ]) {
      assert.throws(() => loadConfig({ ...base, SECRETS_ENCRYPTION_KEY: key().toString('base64'), [name]: value }), (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.equal(err.variable, name);
        assert.match(err.message, /32 random bytes in base64 \(44 characters\) or hex \(64 characters\)/);
        return true;
      });
    }
  });

  test('unset, the config loads, and secretBox() refuses naming the variable', () => {
    const config = loadConfig({ ...base, SECRETS_ENCRYPTION_KEY: '' });
    assert.equal(config.SECRETS_ENCRYPTION_KEY, undefined);
    assert.throws(() => secretBox(config), (err: unknown) => err instanceof ConfigError && err.variable === 'SECRETS_ENCRYPTION_KEY' && /is required/.test(err.message));
  });

  test('secretBox() seals under the key and opens with each previous one', () => {
    const [current, old1, old2] = [key(), key(), key()];
    const config = loadConfig({
      ...base,
      SECRETS_ENCRYPTION_KEY: current.toString('hex'),
      SECRETS_ENCRYPTION_KEY_PREVIOUS: `${old1.toString('base64')},${old2.toString('base64url')}`,
    });
    const box = secretBox(config);
    assert.equal(box.keyId, secretsKeyId(current));
    assert.equal(secretBox(config), box, 'one box per key set');
    for (const old of [old1, old2]) assert.equal(box.open(new SecretBox(old).seal('x', 'c'), 'c'), 'x');
  });
});
