// Secrets of a local install (src/config/localSecrets.ts): generated once into the data
// folder, owner-only, reused, never a constant, and never overriding the environment.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ensureLocalSecrets, LOCAL_SECRETS, localSecret, localSecretsFile } from '../../src/config/localSecrets.js';

const freshDir = () => mkdtempSync(path.join(os.tmpdir(), 'local-secrets-'));
const NAMES = Object.keys(LOCAL_SECRETS);

test('unset secrets are generated into <DATA_DIR>/secrets.json, mode 0600, and put into the environment', () => {
  const dir = freshDir();
  const env: NodeJS.ProcessEnv = {};
  const result = ensureLocalSecrets(dir, env);
  assert.deepEqual(result.generated.sort(), [...NAMES].sort());
  assert.equal(result.file, localSecretsFile(dir));
  assert.equal(statSync(result.file).mode & 0o777, 0o600);
  const stored = JSON.parse(readFileSync(result.file, 'utf8'));
  for (const name of NAMES) {
    assert.equal(env[name], stored[name], name);
    assert.ok(Buffer.from(env[name]!, name === 'SECRETS_ENCRYPTION_KEY' ? 'base64' : 'base64url').length >= 24, `${name} carries at least 24 random bytes`);
  }
  assert.equal(Buffer.from(env.SECRETS_ENCRYPTION_KEY!, 'base64').length, 32, 'an AES-256 key');
});

test('a second start reuses the kept secrets; two installs never share one', () => {
  const dir = freshDir();
  const first: NodeJS.ProcessEnv = {};
  ensureLocalSecrets(dir, first);
  const again: NodeJS.ProcessEnv = {};
  const result = ensureLocalSecrets(dir, again);
  assert.deepEqual(result.generated, []);
  assert.deepEqual(result.reused.sort(), [...NAMES].sort());
  for (const name of NAMES) assert.equal(again[name], first[name], name);

  const other: NodeJS.ProcessEnv = {};
  ensureLocalSecrets(freshDir(), other);
  for (const name of NAMES) assert.notEqual(other[name], first[name], name);
});

test('a value set in the environment wins and is never written to the file', () => {
  const dir = freshDir();
  const env: NodeJS.ProcessEnv = { MEDIA_EDGE_SECRET: 'operator-chosen-secret-0123456789' };
  const result = ensureLocalSecrets(dir, env);
  assert.equal(env.MEDIA_EDGE_SECRET, 'operator-chosen-secret-0123456789');
  assert.ok(!result.generated.includes('MEDIA_EDGE_SECRET'));
  const stored = readFileSync(result.file, 'utf8');
  assert.ok(!stored.includes('operator-chosen-secret'), 'the operator’s value stays out of the file');
  assert.ok(!('MEDIA_EDGE_SECRET' in JSON.parse(stored)));
  // Unset later: generated then, and kept.
  const later: NodeJS.ProcessEnv = {};
  assert.deepEqual(ensureLocalSecrets(dir, later).generated, ['MEDIA_EDGE_SECRET']);
  assert.equal(localSecret(dir, 'MEDIA_EDGE_SECRET', {}), later.MEDIA_EDGE_SECRET);
});

test('a secrets file others can read is tightened to the owner; a damaged one stops start-up with its path', () => {
  const dir = freshDir();
  ensureLocalSecrets(dir, {});
  const file = localSecretsFile(dir);
  chmodSync(file, 0o644);
  ensureLocalSecrets(dir, {});
  assert.equal(statSync(file).mode & 0o777, 0o600);

  writeFileSync(file, 'not json');
  assert.throws(() => ensureLocalSecrets(dir, {}), (err: Error) => err.message.includes(file) && /not valid JSON/.test(err.message));
});
