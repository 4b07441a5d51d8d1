// The operator CLI's inbound set-up (docs/telephony.md, "Inbound calls"): `numbers add
// --inbound-script` and `numbers set-inbound`, run in-process (test/support/cli.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { DEMO_SCRIPT } from '../../src/domain/scripts/demoScript.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { addTeamNumber } from '../../src/services/phoneNumbers.js';
import { createTestTeam, testPool, type TestTeam } from '../support/app.js';
import { operatorCli } from '../support/cli.js';

const { admin, adminJson, adminFails } = operatorCli(() => ({}), { inProcess: true });

let pool: Pool;
let team: TestTeam;
let other: TestTeam;
let secondScriptId: string;

const uniqueNumber = (tail: number) => `+1646${String(process.pid % 1000).padStart(3, '0')}${String(tail).padStart(4, '0')}`;
const inboundOf = async (teamId: string, phoneNumber: string) =>
  (await pool.query<{ inbound_script_id: string | null }>('SELECT inbound_script_id FROM phone_numbers WHERE team_id = $1 AND phone_number = $2', [teamId, phoneNumber])).rows[0];

before(async () => {
  pool = await testPool();
  team = await createTestTeam(pool);
  other = await createTestTeam(pool);
  secondScriptId = (await insertScript(pool, { teamId: team.teamId, name: 'second', definition: DEMO_SCRIPT })).id;
});

after(async () => {
  await pool.end();
});

describe('numbers and their inbound scripts', () => {
  test('numbers add --inbound-script gives the new number the script', async () => {
    const number = uniqueNumber(1001);
    const added = await adminJson(['numbers', 'add', '--team', team.teamId, '--number', number, '--inbound-script', team.scriptId]);
    assert.equal(added.phone_number, number);
    assert.equal(added.inbound_script_id, team.scriptId);
    assert.deepEqual(await inboundOf(team.teamId, number), { inbound_script_id: team.scriptId });
  });

  test("numbers add with another team's script exits 1 and adds nothing", async () => {
    const number = uniqueNumber(1003);
    await adminFails(['numbers', 'add', '--team', team.teamId, '--number', number, '--inbound-script', other.scriptId], /script .* not found in team/);
    assert.equal(await inboundOf(team.teamId, number), undefined);
  });

  test('numbers set-inbound changes the script, --none clears it', async () => {
    const number = uniqueNumber(1004);
    const plain = await adminJson(['numbers', 'add', '--team', team.teamId, '--number', number]);
    assert.equal(plain.inbound_script_id, null);
    const set = await adminJson(['numbers', 'set-inbound', number, '--team', team.teamId, '--script', secondScriptId]);
    assert.deepEqual(set, { number_id: plain.number_id, phone_number: number, inbound_script_id: secondScriptId });
    assert.deepEqual(await inboundOf(team.teamId, number), { inbound_script_id: secondScriptId });

    const text = await admin(['numbers', 'set-inbound', number, '--team', team.teamId, '--none']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /takes no incoming calls/);
    assert.deepEqual(await inboundOf(team.teamId, number), { inbound_script_id: null });
  });

  test('numbers set-inbound refuses: neither --script nor --none, an unknown number, a number another team answers', async () => {
    const number = uniqueNumber(1005);
    await adminFails(['numbers', 'set-inbound', number, '--team', team.teamId], /exactly one of --script and --none/);
    await adminFails(['numbers', 'set-inbound', number, '--team', team.teamId, '--script', team.scriptId], /number .* not found in team/);

    // The same number in two teams: only one may take its calls.
    await addTeamNumber(pool, { teamId: other.teamId, phoneNumber: number, inboundScriptId: other.scriptId });
    await addTeamNumber(pool, { teamId: team.teamId, phoneNumber: number });
    await adminFails(['numbers', 'set-inbound', number, '--team', team.teamId, '--script', team.scriptId], /already takes incoming calls for another team/);
    assert.deepEqual(await inboundOf(team.teamId, number), { inbound_script_id: null });
  });

  test('--help lists numbers set-inbound and the --inbound-script option', async () => {
    const run = await admin(['--help']);
    assert.equal(run.code, 0);
    assert.ok(run.stdout.includes('  numbers set-inbound NUMBER --team TEAM [--script SCRIPT] [--none]'), run.stdout);
    assert.match(run.stdout, /numbers add --team TEAM --number NUMBER \[--inbound-script INBOUND-SCRIPT\]/);
  });
});
