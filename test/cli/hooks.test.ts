// The operator CLI's hooks commands, run as an operator runs them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { insertList } from '../../src/db/repositories/lists.js';
import { testPool } from '../support/app.js';
import { operatorCli } from '../support/cli.js';

const { admin, adminJson, adminFails } = operatorCli(undefined, { inProcess: true });

let pool: Pool;
let boot: any;

before(async () => {
  pool = await testPool();
  boot = await adminJson(['bootstrap', '--team-name', 'hooks cli']);
});

after(async () => {
  await pool.end();
});

describe('hooks commands', () => {
  test('hooks create --list makes an add_to_list hook; a list of another team is refused', async () => {
    const list = await insertList(pool, boot.team_id, 'webhook leads');
    const out = await adminJson(['hooks', 'create', '--team', boot.team_id, '--list', list.id]);
    assert.deepEqual(Object.keys(out).sort(), ['id', 'path', 'secret', 'token']);
    const stored = await pool.query('SELECT automation FROM hooks WHERE id = $1', [out.id]);
    assert.deepEqual(stored.rows[0].automation, { kind: 'add_to_list', list_id: list.id });

    const other = await adminJson(['teams', 'create', '--name', 'other']);
    const foreign = await admin(['hooks', 'create', '--team', other.team_id, '--list', list.id]);
    assert.notEqual(foreign.code, 0);
    assert.match(foreign.stderr, new RegExp(`list ${list.id} not found`));
  });

  test('hooks create refuses --list together with --script and --from', async () => {
    const list = await insertList(pool, boot.team_id, 'l');
    const run = await admin(['hooks', 'create', '--team', boot.team_id, '--list', list.id, '--script', boot.script_id, '--from', boot.from_number]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /--list cannot be combined/);
  });

  test('hooks list shows each hook’s automation and whether it is signed, never its token or secret', async () => {
    const out = await adminJson(['hooks', 'list', '--team', boot.team_id]);
    const bootHook = out.hooks.find((h: any) => h.id === boot.hook.id);
    assert.deepEqual(bootHook.automation, { kind: 'schedule_call', script_id: boot.script_id, from_number: boot.from_number });
    assert.equal(bootHook.signed, true);
    assert.equal(bootHook.revoked_at, null);
    const text = JSON.stringify(out);
    assert.ok(!text.includes(boot.hook.token) && !text.includes(boot.hook.secret), 'no token or secret in the list');
    const readable = await admin(['hooks', 'list', '--team', boot.team_id]);
    assert.match(readable.stdout, new RegExp(`${boot.hook.id}  schedule_call \\(script ${boot.script_id}, from \\${boot.from_number}\\)  signed`));
  });

  test('hooks revoke sets revoked_at once; revoking again keeps it; an unknown hook is an error', async () => {
    const hook = await adminJson(['hooks', 'create', '--team', boot.team_id]);
    const first = await adminJson(['hooks', 'revoke', hook.id]);
    assert.equal(first.id, hook.id);
    assert.ok(!Number.isNaN(Date.parse(first.revoked_at)));
    const again = await adminJson(['hooks', 'revoke', hook.id]);
    assert.equal(again.revoked_at, first.revoked_at);
    const listed = await adminJson(['hooks', 'list', '--team', boot.team_id]);
    assert.equal(listed.hooks.find((h: any) => h.id === hook.id).revoked_at, first.revoked_at);
    const unknown = await admin(['hooks', 'revoke', '00000000-0000-4000-8000-000000000000']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /not found/);
  });
});

describe('hooks create --signature', () => {
  test('standard-webhooks without --secret generates a whsec_ secret; it is stored sealed, listed as standard-webhooks, and --help names the option', async () => {
    const out = await adminJson(['hooks', 'create', '--team', boot.team_id, '--signature', 'standard-webhooks']);
    assert.deepEqual(Object.keys(out).sort(), ['id', 'path', 'secret', 'token']);
    assert.match(out.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const stored = await pool.query('SELECT signature_scheme, secret FROM hooks WHERE id = $1', [out.id]);
    assert.equal(stored.rows[0].signature_scheme, 'standard-webhooks');
    assert.notEqual(stored.rows[0].secret, out.secret, 'the secret is not stored in clear');

    const listed = await adminJson(['hooks', 'list', '--team', boot.team_id]);
    const hook = listed.hooks.find((h: any) => h.id === out.id);
    assert.equal(hook.signed, true);
    assert.equal(hook.signature, 'standard-webhooks');
    assert.ok(!JSON.stringify(listed).includes(out.secret), 'no secret in the list');
    const readable = await admin(['hooks', 'list', '--team', boot.team_id]);
    assert.match(readable.stdout, new RegExp(`${out.id}  none \\(runs are recorded, nothing else happens\\)  signed \\(standard-webhooks\\)  created `));

    const help = await admin(['--help']);
    assert.match(help.stdout, /hooks create --team TEAM .*\[--signature SIGNATURE\]/);
    assert.match(help.stdout, /--signature +how requests are signed: x-webhook-signature .* or standard-webhooks/);
  });

  test('standard-webhooks with a whsec_ --secret keeps it; the default scheme and unsigned hooks are listed as before', async () => {
    const secret = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    const given = await adminJson(['hooks', 'create', '--team', boot.team_id, '--signature', 'standard-webhooks', '--secret', secret]);
    assert.equal(given.secret, secret);
    const legacy = await adminJson(['hooks', 'create', '--team', boot.team_id, '--secret', 'plain-text-secret']);
    const explicit = await adminJson(['hooks', 'create', '--team', boot.team_id, '--signature', 'x-webhook-signature', '--secret', 'another-secret']);
    const unsigned = await adminJson(['hooks', 'create', '--team', boot.team_id]);
    const listed = await adminJson(['hooks', 'list', '--team', boot.team_id]);
    const scheme = (id: string) => listed.hooks.find((h: any) => h.id === id).signature;
    assert.equal(scheme(given.id), 'standard-webhooks');
    assert.equal(scheme(legacy.id), 'x-webhook-signature');
    assert.equal(scheme(explicit.id), 'x-webhook-signature');
    assert.equal(scheme(unsigned.id), null);
    assert.equal(scheme(boot.hook.id), 'x-webhook-signature');
  });

  test('an unknown scheme, a secret that is not whsec_ base64 for standard-webhooks, and x-webhook-signature without a secret are refused, writing nothing', async () => {
    const count = async () => Number((await pool.query('SELECT count(*) FROM hooks WHERE team_id = $1', [boot.team_id])).rows[0].count);
    const before = await count();
    await adminFails(['hooks', 'create', '--team', boot.team_id, '--signature', 'svix'], /--signature must be one of x-webhook-signature, standard-webhooks/);
    await adminFails(
      ['hooks', 'create', '--team', boot.team_id, '--signature', 'standard-webhooks', '--secret', 'not-a-whsec-secret'],
      /A Standard Webhooks secret must be whsec_ followed by the base64 of 24 to 64 bytes/,
    );
    await adminFails(['hooks', 'create', '--team', boot.team_id, '--signature', 'standard-webhooks', '--secret', `whsec_${Buffer.alloc(16).toString('base64')}`], /24 to 64 bytes/);
    await adminFails(['hooks', 'create', '--team', boot.team_id, '--signature', 'x-webhook-signature'], /--signature x-webhook-signature needs --secret/);
    assert.equal(await count(), before);
  });
});
