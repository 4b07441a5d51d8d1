// teams set-policy and teams policy as an operator runs them: each part set, merged and
// cleared, every bad option named, and the help.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { testPool } from '../support/app.js';
import { operatorCli } from '../support/cli.js';

const { admin, adminJson, adminFails } = operatorCli(undefined, { inProcess: true });

let pool: Pool;
let teamId: string;

before(async () => {
  pool = await testPool();
  teamId = (await adminJson(['teams', 'create', '--name', 'policy test'])).team_id;
});

after(async () => {
  await pool.end();
});

describe('teams set-policy', () => {
  test('a team without a policy: no window, no zone, no retries, no team rate', async () => {
    assert.deepEqual(await adminJson(['teams', 'policy', '--team', teamId]), {
      team_id: teamId,
      calling_window: null,
      timezone: null,
      retry_policy: null,
      dial_rate: null,
      updated_at: null,
    });
  });

  test('sets the window, zone, retry policy and dial rate; a later call changes only what it names; --clear removes parts', async () => {
    const set = await adminJson([
      'teams', 'set-policy', '--team', teamId,
      '--window-days', 'mon-fri', '--window-start', '09:00', '--window-end', '20:00',
      '--timezone', 'europe/paris',
      '--retry-policy', '{"rang-out":{"max_attempts":3,"delay_seconds":3600}}',
      '--dial-rate', '2.5',
    ]);
    assert.deepEqual(set.calling_window, { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '20:00' });
    assert.equal(set.timezone, 'Europe/Paris');
    assert.deepEqual(set.retry_policy, { 'rang-out': { max_attempts: 3, delay_seconds: 3600 } });
    assert.equal(set.dial_rate, 2.5);
    const merged = await adminJson(['teams', 'set-policy', '--team', teamId, '--window-days', 'sat,sun', '--window-start', '10:00', '--window-end', '24:00']);
    assert.deepEqual(merged.calling_window, { days: ['sat', 'sun'], start: '10:00', end: '24:00' });
    assert.equal(merged.timezone, 'Europe/Paris');
    assert.equal(merged.dial_rate, 2.5);
    const cleared = await adminJson(['teams', 'set-policy', '--team', teamId, '--clear', 'window,dial-rate']);
    assert.equal(cleared.calling_window, null);
    assert.equal(cleared.dial_rate, null);
    assert.deepEqual(cleared.retry_policy, { 'rang-out': { max_attempts: 3, delay_seconds: 3600 } });
    const { rows } = await pool.query('SELECT timezone, calling_window FROM team_dialing_policies WHERE team_id = $1', [teamId]);
    assert.deepEqual(rows[0], { timezone: 'Europe/Paris', calling_window: null });
    const text = await admin(['teams', 'policy', '--team', teamId]);
    assert.match(text.stdout, /calling window {2}none \(any time\)/);
    assert.match(text.stdout, /default zone {4}Europe\/Paris/);
  });

  test('each bad option is named; nothing is written', async () => {
    const t = (await adminJson(['teams', 'create', '--name', 'bad options'])).team_id;
    const base = ['teams', 'set-policy', '--team', t];
    await adminFails([...base, '--window-days', 'mon-fri'], /--window-days, --window-start and --window-end go together/);
    await adminFails([...base, '--window-days', 'weekdays', '--window-start', '09:00', '--window-end', '17:00'], /--window-days must be days such as mon-fri/);
    await adminFails([...base, '--window-days', 'mon', '--window-start', '9am', '--window-end', '17:00'], /--window-start must be a time HH:MM/);
    await adminFails([...base, '--window-days', 'mon', '--window-start', '09:00', '--window-end', '25:00'], /--window-end must be a time HH:MM/);
    await adminFails([...base, '--window-days', 'mon', '--window-start', '09:00', '--window-end', '09:00'], /--window-end must differ from --window-start/);
    await adminFails([...base, '--timezone', '+02:00'], /--timezone must be an IANA time zone/);
    await adminFails([...base, '--retry-policy', 'three times'], /--retry-policy must be JSON/);
    await adminFails([...base, '--retry-policy', '{"completed":{"max_attempts":2,"delay_seconds":60}}'], /--retry-policy: completed is not a retryable status/);
    await adminFails([...base, '--retry-policy', '{"voicemail":{"max_attempts":11,"delay_seconds":30}}'], /voicemail.max_attempts must be a whole number from 1 to 10; voicemail.delay_seconds must be a whole number from 60 to 604800/);
    await adminFails([...base, '--dial-rate', '0'], /--dial-rate must be a number of calls per second above 0/);
    await adminFails([...base, '--clear', 'everything'], /--clear takes window, timezone, retry-policy, dial-rate/);
    await adminFails(base, /nothing to set/);
    await adminFails(['teams', 'set-policy', '--team', '00000000-0000-4000-8000-000000000000', '--dial-rate', '1'], /team 00000000-0000-4000-8000-000000000000 not found/);
    const { rows } = await pool.query('SELECT 1 FROM team_dialing_policies WHERE team_id = $1', [t]);
    assert.equal(rows.length, 0);
  });

  test('--help lists both commands with their options', async () => {
    const run = await admin(['--help']);
    assert.equal(run.code, 0);
    for (const text of ['  teams set-policy --team TEAM', '--window-days', '--retry-policy', '--dial-rate', '--clear', '  teams policy --team TEAM']) {
      assert.ok(run.stdout.includes(text), `help shows ${text}`);
    }
  });
});
