// A due phone call's admission in one step (src/services/callAdmission.ts) over the test
// database: slot, do-not-call list, dial token and in-progress in that order, each outcome
// leaving the rows as the call workflow expects, and a repeat changing nothing.
// No case here wakes another call, so no Temporal client is needed (the deps carry none).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { findCallById } from '../../src/db/repositories/calls.js';
import { countLiveSlots } from '../../src/db/repositories/concurrencySlots.js';
import { createDialPacer } from '../../src/pacing/dialPacer.js';
import { admitCall, type CallAdmissionDeps } from '../../src/services/callAdmission.js';
import { testConfig, testPool } from '../support/app.js';
import { insertCallRowTeam, insertPhoneCalls } from '../support/callRows.js';

let pool: Pool;
let deps: CallAdmissionDeps;
const FROM = '+12125550100';

before(async () => {
  pool = await testPool();
  deps = {
    pool,
    config: testConfig(),
    temporal: undefined as never,
    // Real pacing, kept in memory, at one dial per 100 s per number: at one a second, two
    // admissions more than a second apart on a busy machine found the token free again.
    dialPacer: createDialPacer({ perNumberRate: 0.01, store: { kind: 'memory' } }),
  };
});

after(async () => {
  await pool.end();
});

async function teamWithCalls(maxConcurrent: number, n: number, from?: string): Promise<{ teamId: string; calls: string[] }> {
  const team = await insertCallRowTeam(pool, maxConcurrent);
  return { teamId: team.id, calls: await insertPhoneCalls(pool, team, n, { from }) };
}

const row = async (callId: string) => (await findCallById(pool, callId))!;
const fixedClock = (at: string) => () => new Date(at);

describe('admitCall', () => {
  test('a free slot, an unlisted number and a free token: in progress at the given time with its token; a repeat answers started without a second slot', async () => {
    // A caller number of its own, so no other test holds its token.
    const { teamId, calls } = await teamWithCalls(2, 1, `+1212555${String(1000 + (process.pid % 9000)).padStart(4, '0')}`);
    const first = await admitCall(deps, teamId, calls[0], fixedClock('2026-11-26T10:00:00.000Z'));
    assert.equal(first.outcome, 'started');
    assert.ok(first.outcome === 'started' && first.dialTokenAt && !first.waitForDialToken, JSON.stringify(first));
    const started = await row(calls[0]);
    assert.deepEqual([started.status, started.progress, started.actual_time?.toISOString()], ['in-progress', 'dialling', '2026-11-26T10:00:00.000Z']);
    assert.equal(await countLiveSlots(pool, teamId), 1);

    const again = await admitCall(deps, teamId, calls[0], fixedClock('2026-11-26T10:05:00.000Z'));
    assert.deepEqual(again, { outcome: 'started', actualTime: '2026-11-26T10:00:00.000Z', waitForDialToken: true }, 'a repeat keeps the start and takes a fresh token at the dial');
    assert.equal(await countLiveSlots(pool, teamId), 1);
  });

  test('no free dial token: in progress, waiting for its token (waiting_for_dial_slot)', async () => {
    const { teamId, calls } = await teamWithCalls(2, 2, `+1212556${String(1000 + (process.pid % 9000)).padStart(4, '0')}`);
    const now = fixedClock('2026-11-26T10:00:00.000Z');
    assert.equal((await admitCall(deps, teamId, calls[0], now)).outcome, 'started');
    const second = await admitCall(deps, teamId, calls[1], now);
    assert.ok(second.outcome === 'started' && second.waitForDialToken && !second.dialTokenAt, JSON.stringify(second));
    assert.equal((await row(calls[1])).progress, 'waiting_for_dial_slot');
  });

  test('the ceiling reached: waiting in line (waiting_for_slot), still scheduled', async () => {
    const { teamId, calls } = await teamWithCalls(1, 2);
    await admitCall(deps, teamId, calls[0], fixedClock('2026-11-26T10:00:00.000Z'));
    assert.deepEqual(await admitCall(deps, teamId, calls[1], fixedClock('2026-11-26T10:00:00.000Z')), { outcome: 'waiting' });
    const waiting = await row(calls[1]);
    assert.deepEqual([waiting.status, waiting.progress, waiting.actual_time], ['scheduled', 'waiting_for_slot', null]);
    assert.equal(await countLiveSlots(pool, teamId), 1);
  });

  test('a listed number: do_not_call, holding its slot, never started', async () => {
    const { teamId, calls } = await teamWithCalls(1, 1);
    const listed = (await row(calls[0])).to_number!;
    await pool.query(`INSERT INTO do_not_call (team_id, phone_number, source) VALUES ($1, $2, 'api')`, [teamId, listed]);
    assert.deepEqual(await admitCall(deps, teamId, calls[0], fixedClock('2026-11-26T10:00:00.000Z')), { outcome: 'do_not_call', phoneNumber: listed });
    const call = await row(calls[0]);
    assert.deepEqual([call.status, call.actual_time], ['scheduled', null]);
    assert.equal(await countLiveSlots(pool, teamId), 1, 'the slot is released by the call ending (completeCall)');
  });

  test('a call cancelled meanwhile: not_scheduled, and a slot it held is given back', async () => {
    const { teamId, calls } = await teamWithCalls(1, 1);
    await pool.query(`UPDATE calls SET status = 'cancelled', progress = 'done', end_reason = 'cancelled', end_time = now() WHERE id = $1`, [calls[0]]);
    assert.deepEqual(await admitCall(deps, teamId, calls[0], fixedClock('2026-11-26T10:00:00.000Z')), { outcome: 'not_scheduled', status: 'cancelled' });
    assert.equal(await countLiveSlots(pool, teamId), 0);
  });
});
