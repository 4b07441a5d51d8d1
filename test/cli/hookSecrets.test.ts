// The operator CLI stores hook signing secrets encrypted under SECRETS_ENCRYPTION_KEY
// (`hooks create --secret`, `bootstrap`), and refuses a signed hook without the key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { secretBox } from '../../src/config/index.js';
import type { Pool } from '../../src/db/pool.js';
import { insertTeam } from '../../src/db/repositories/teams.js';
import { hookSigningSecret } from '../../src/services/hooks.js';
import { testConfig, testPool } from '../support/app.js';
import { operatorCli } from '../support/cli.js';

const { adminJson } = operatorCli();
const withoutKey = operatorCli(() => ({ SECRETS_ENCRYPTION_KEY: '' }));

let pool: Pool;

before(async () => {
  pool = await testPool();
});

after(async () => {
  await pool.end();
});

const storedHook = async (id: string) =>
  (await pool.query<{ secret: string | null; token_hash: string }>('SELECT secret, token_hash FROM hooks WHERE id = $1', [id])).rows[0];

describe('hook secrets written by the CLI', () => {
  test('bootstrap and hooks create --secret store the secret encrypted; the key of the environment opens it', async () => {
    const boot = await adminJson(['bootstrap', '--team-name', 'hook secrets']);
    const created = await adminJson(['hooks', 'create', '--team', boot.team_id, '--secret', 'operator-chosen-signing-secret']);
    for (const [id, secret] of [[boot.hook.id, boot.hook.secret], [created.id, 'operator-chosen-signing-secret']]) {
      const row = await storedHook(id);
      assert.match(row.secret!, /^enc:v1:[0-9a-f]{8}:/);
      assert.ok(!row.secret!.includes(secret) && !row.secret!.includes(secret.slice(6, 20)), `the secret of ${id} is not in its row`);
      assert.equal(hookSigningSecret(row, secretBox(testConfig())), secret);
    }
  });

  test('without SECRETS_ENCRYPTION_KEY a signed hook is refused naming it, and nothing is written; an unsigned one is made', async () => {
    const team = await insertTeam(pool, { name: 'no key', maxConcurrent: 1 });
    const count = async () => Number((await pool.query('SELECT count(*) AS n FROM hooks WHERE team_id = $1', [team.id])).rows[0].n);
    await withoutKey.adminFails(['hooks', 'create', '--team', team.id, '--secret', 'a-secret'], /SECRETS_ENCRYPTION_KEY is required/);
    await withoutKey.adminFails(['bootstrap', '--team-name', 'no key either'], /SECRETS_ENCRYPTION_KEY is required/);
    assert.equal(await count(), 0);
    assert.equal((await pool.query(`SELECT 1 FROM teams WHERE name = 'no key either'`)).rowCount, 0, 'bootstrap wrote nothing');
    const unsigned = await withoutKey.adminJson(['hooks', 'create', '--team', team.id]);
    assert.equal((await storedHook(unsigned.id)).secret, null);
  });

  test('a malformed SECRETS_ENCRYPTION_KEY stops the CLI naming it', async () => {
    const bad = operatorCli(() => ({ SECRETS_ENCRYPTION_KEY: 'too-short' }));
    await bad.adminFails(['teams', 'create', '--name', 'x'], /Invalid configuration: SECRETS_ENCRYPTION_KEY must be 32 random bytes/);
  });
});
