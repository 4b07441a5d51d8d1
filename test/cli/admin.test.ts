import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { testPool } from '../support/app.js';
import { operatorCli } from '../support/cli.js';

// The commands in-process; the entry point's own behaviour (usage, unknown command, exit
// codes) through the real child process (the last three tests).
const { admin, adminJson } = operatorCli(undefined, { inProcess: true });
const asOperator = operatorCli();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let pool: Pool;
let boot: any;

before(async () => {
  pool = await testPool();
  boot = await adminJson(['bootstrap', '--team-name', 'cli test', '--max-concurrent', '3']);
});

after(async () => {
  await pool.end();
});

describe('operator CLI', () => {
  test('bootstrap --json prints one object with a team, key, script, number and hook', async () => {
    assert.match(boot.team_id, UUID);
    assert.match(boot.key_id, UUID);
    assert.match(boot.script_id, UUID);
    assert.match(boot.from_number, /^\+[1-9]\d{6,14}$/);
    assert.ok(boot.api_key.startsWith('va'));
    assert.equal(boot.hook.path, `/api/v1/hooks/${boot.hook.token}`);
    assert.equal(typeof boot.hook.secret, 'string');
    const team = await pool.query('SELECT name, max_concurrent FROM teams WHERE id = $1', [boot.team_id]);
    assert.deepEqual(team.rows[0], { name: 'cli test', max_concurrent: 3 });
    const hook = await pool.query('SELECT automation FROM hooks WHERE id = $1', [boot.hook.id]);
    assert.deepEqual(hook.rows[0].automation, { kind: 'schedule_call', script_id: boot.script_id, from_number: boot.from_number });
  });

  test('the API key is stored only as a hash', async () => {
    const { rows } = await pool.query('SELECT key_hash, prefix FROM api_keys WHERE id = $1', [boot.key_id]);
    assert.ok(!rows[0].key_hash.includes(boot.api_key));
    assert.equal(boot.api_key.split('_')[0], rows[0].prefix);
  });

  test('teams create prints { team_id } with the default ceiling of 10', async () => {
    const out = await adminJson(['teams', 'create', '--name', 'another']);
    assert.deepEqual(Object.keys(out), ['team_id']);
    const { rows } = await pool.query('SELECT max_concurrent FROM teams WHERE id = $1', [out.team_id]);
    assert.equal(rows[0].max_concurrent, 10);
  });

  test('keys create defaults the name to Default and keys list never shows the key', async () => {
    const created = await adminJson(['keys', 'create', '--team', boot.team_id]);
    assert.equal(created.name, 'Default');
    assert.ok(created.api_key.startsWith(`${created.prefix}_`));
    const named = await adminJson(['keys', 'create', '--team', boot.team_id, '--name', 'robot']);
    assert.equal(named.name, 'robot');
    const run = await admin(['keys', 'list', '--team', boot.team_id, '--json']);
    assert.ok(!run.stdout.includes(created.api_key));
    const listed = JSON.parse(run.stdout);
    const entry = listed.keys.find((k: any) => k.key_id === created.key_id);
    assert.equal(entry.prefix, created.prefix);
    assert.equal(entry.last_used_at, null);
    assert.match(entry.created_at, /^\d{4}-\d{2}-\d{2}T/);
  });

  test('keys revoke prints { key_id, revoked_at } and an unknown key exits non-zero', async () => {
    const created = await adminJson(['keys', 'create', '--team', boot.team_id]);
    const out = await adminJson(['keys', 'revoke', created.key_id]);
    assert.equal(out.key_id, created.key_id);
    assert.ok(!Number.isNaN(Date.parse(out.revoked_at)));
    const missing = await admin(['keys', 'revoke', '00000000-0000-4000-8000-000000000000', '--json']);
    assert.notEqual(missing.code, 0);
    assert.equal(missing.stdout, '');
    assert.match(missing.stderr, /not found/);
  });

  test('numbers add normalises a local number to E.164 and rejects an invalid one', async () => {
    const out = await adminJson(['numbers', 'add', '--team', boot.team_id, '--number', '(415) 555-2671']);
    assert.equal(out.phone_number, '+14155552671');
    assert.match(out.number_id, UUID);
    const bad = await admin(['numbers', 'add', '--team', boot.team_id, '--number', '12', '--json']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--number is not a valid phone number/);
  });

  test('scripts create stores a valid file and names the field of an invalid one', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'scripts-'));
    const good = path.join(dir, 'good.json');
    await writeFile(good, JSON.stringify({ name: 'Hello', steps: [{ id: 'hi', type: 'say', text: 'Hi {{contact.first_name}}' }, { id: 'bye', type: 'end' }] }));
    const out = await adminJson(['scripts', 'create', '--team', boot.team_id, '--file', good]);
    assert.match(out.script_id, UUID);
    const bad = path.join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ name: 'Broken', steps: [] }));
    const run = await admin(['scripts', 'create', '--team', boot.team_id, '--file', bad, '--json']);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /steps/);
  });

  test('hooks create prints { id, token, path, secret } and checks the script and number belong to the team', async () => {
    const out = await adminJson(['hooks', 'create', '--team', boot.team_id, '--secret', 's3cret', '--script', boot.script_id, '--from', boot.from_number]);
    assert.equal(out.secret, 's3cret');
    assert.equal(out.path, `/api/v1/hooks/${out.token}`);
    const unsigned = await adminJson(['hooks', 'create', '--team', boot.team_id]);
    assert.equal(unsigned.secret, null);
    const other = await adminJson(['teams', 'create', '--name', 'stranger']);
    const foreign = await admin(['hooks', 'create', '--team', other.team_id, '--script', boot.script_id, '--from', boot.from_number, '--json']);
    assert.notEqual(foreign.code, 0);
    assert.match(foreign.stderr, /not found|does not belong/);
  });

  test('an unknown command and a missing option exit non-zero with a message on stderr', async () => {
    const unknown = await asOperator.admin(['no-such-command', '--json']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /unknown command/);
    const missing = await asOperator.admin(['keys', 'create', '--json']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /--team is required/);
  });

  test('no command: a usage error, with the message and the command list on stderr', async () => {
    const run = await asOperator.admin([]);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^admin: a command is required/);
    assert.ok(run.stderr.includes('  keys create'), 'the usage lists the commands');
  });

  test('--help lists every command', async () => {
    const run = await asOperator.admin(['--help']);
    assert.equal(run.code, 0);
    for (const name of ['bootstrap', 'teams create', 'keys create', 'keys list', 'keys revoke', 'numbers add', 'scripts create', 'hooks create']) {
      assert.ok(run.stdout.includes(`  ${name}`), `help lists ${name}`);
    }
  });
});
