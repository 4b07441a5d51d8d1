// The dialing policy in the call workflow, in the time-skipping environment with the real
// activities over the test database and the simulator: calling windows (weekends, across
// midnight, both daylight-saving transitions, a call not cut off when its window closes),
// retry chains for each outcome, cancel mid-chain, the do-not-call list at dial time, added
// mid-chain and by the callee, carrier pacing, and a batch's chains.
//
// As in callWorkflow.test.ts, results are awaited through a plain client (time skipping stays
// locked: calls run in real time) and the long waits are skipped with env.sleep(), computed
// from the test server's own clock (env.currentTimeMs()), which runs ahead of the wall clock.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { updateTeamDialingPolicy } from '../../src/db/repositories/dialingPolicies.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { addDays, offsetMs, zonedInstant, zonedParts } from '../../src/domain/timeZones.js';
import type { CallingWindow } from '../../src/domain/callingWindows.js';
import type { RetryPolicy } from '../../src/domain/retryPolicy.js';
import { createBatch, showBatch } from '../../src/services/batches.js';
import { cancelCall, scheduleCall, type CallServiceDeps } from '../../src/services/calls.js';
import { callWorkflowId, type CallAdmission } from '../../workflows/contracts.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import { listWithContacts } from '../support/batches.js';
import { callResultOrStuck, callRow, callTestConfig, calleeNumber, historySteps, localActivityResults, startCallWorkerEnv, waitForCall, type CallWorkerEnv } from '../support/calls.js';

let calls: CallWorkerEnv;
let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;
const config = callTestConfig({ BATCH_POLL_SECONDS: '2', BATCH_WINDOW_FACTOR: '2' });
let deps: CallServiceDeps;

before(async () => {
  calls = await startCallWorkerEnv(config);
  ({ env, pool } = calls);
  plain = new Client({ connection: env.connection, namespace: env.namespace });
  deps = { pool, temporal: env.client, config };
});

after(async () => {
  await calls?.stop();
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();
const result = (callId: string) => callResultOrStuck(pool, plain, callId, 120_000);
const steps = async (callId: string) => historySteps(await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory());
/** The outcome of each admitCall step of the call (slot, do-not-call list, dial token, in-progress in one). */
const admissions = async (callId: string) =>
  (localActivityResults(await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory(), 'admitCall') as CallAdmission[]).map((a) => a.outcome);

interface Schedule {
  at: number;
  lastFour?: string;
  phone?: string;
  timezone?: string;
  window?: CallingWindow | null;
  retry?: RetryPolicy | null;
  scriptId?: string;
}

async function schedule(team: TestTeam, s: Schedule) {
  return scheduleCall(deps, {
    teamId: team.teamId,
    fromNumber: team.fromNumber,
    scriptId: s.scriptId ?? team.scriptId,
    contact: { phone_number: s.phone ?? calleeNumber(s.lastFour ?? '9001'), first_name: 'Ada', ...(s.timezone ? { timezone: s.timezone } : {}) },
    scheduledTime: new Date(s.at),
    callingWindow: s.window,
    retryPolicy: s.retry,
  });
}

/** Skips the test server's clock to `ms` (no-op when it is there already). */
async function skipTo(ms: number): Promise<void> {
  const now = await env.currentTimeMs();
  if (ms > now) await env.sleep(ms - now);
}

/** The instant of local `hh:mm` on the first `weekday` (0 = Monday) on or after `fromMs` in `zone`. */
function nextLocal(zone: string, fromMs: number, weekday: number, minutes: number): number {
  const p = zonedParts(fromMs, zone);
  for (let i = 0; i < 15; i += 1) {
    const d = addDays(p.year, p.month, p.day, i);
    if (d.weekday !== weekday) continue;
    const t = zonedInstant(d.year, d.month, d.day, minutes, zone);
    if (t > fromMs) return t;
  }
  throw new Error('no such day');
}

/** The next instant after `fromMs` at which `zone`'s offset grows (spring forward) or shrinks (fall back). */
function nextTransition(zone: string, fromMs: number, direction: 'forward' | 'back'): number {
  let t = Math.ceil(fromMs / HOUR) * HOUR;
  for (let i = 0; i < 400 * 24; i += 1, t += HOUR) {
    const change = offsetMs(t + HOUR, zone) - offsetMs(t, zone);
    if ((direction === 'forward' && change > 0) || (direction === 'back' && change < 0)) {
      let lo = t;
      let hi = t + HOUR;
      while (hi - lo > 1000) {
        const mid = Math.floor((lo + hi) / 2);
        if (offsetMs(mid, zone) === offsetMs(t, zone)) lo = mid;
        else hi = mid;
      }
      return hi;
    }
  }
  throw new Error(`no ${direction} transition in ${zone}`);
}

/** Asserts the call started at `expected` (the workflow's clock moves a few ms per activity). */
function startedAt(row: { actual_time: Date | null }, expected: number, what: string): void {
  const actual = row.actual_time!.getTime();
  assert.ok(actual >= expected && actual < expected + 60_000, `${what}: started ${iso(actual)}, expected ${iso(expected)}`);
}

const weekdays: CallingWindow = { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' };

/** When the call's dial activity ended (placeCall's marker, or placePacedCall's completion), on the server's clock. */
async function dialTime(callId: string): Promise<number> {
  const events = (await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory()).events ?? [];
  const at = (e: (typeof events)[number]) => Number(e.eventTime!.seconds) * 1000 + Math.floor((e.eventTime!.nanos ?? 0) / 1e6);
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'placePacedCall');
  if (scheduled) {
    const completed = events.find((e) => e.activityTaskCompletedEventAttributes && Number(e.activityTaskCompletedEventAttributes.scheduledEventId) === Number(scheduled.eventId));
    return at(completed!);
  }
  const index = historySteps({ events } as never).indexOf('placeCall');
  const markers = events.filter((e) => e.markerRecordedEventAttributes && historySteps({ events: [e] } as never)[0] === 'placeCall');
  assert.ok(index >= 0 && markers.length, 'a dial');
  return at(markers[0]);
}

describe('calling windows', () => {
  test('due on a Saturday with a weekday window: scheduled, waiting_for_window, then started Monday 09:00 in the callee’s zone; scheduled_time unchanged', async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const saturday = nextLocal('Europe/Paris', now + HOUR, 5, 10 * 60);
    const monday = nextLocal('Europe/Paris', saturday, 0, 9 * 60);
    const call = await schedule(team, { at: saturday, timezone: 'Europe/Paris', window: weekdays });
    assert.equal(call.call.dial_after!.toISOString(), iso(monday));
    await skipTo(saturday + 60_000);
    const waiting = await waitForCall(pool, call.callId, (c) => c.progress === 'waiting_for_window');
    assert.equal(waiting.status, 'scheduled');
    assert.equal(waiting.dial_after!.toISOString(), iso(monday));
    await skipTo(monday - 60_000);
    assert.equal((await callRow(pool, call.callId)).status, 'scheduled', 'still waiting a minute before the window opens');
    await skipTo(monday);
    assert.equal((await result(call.callId)).status, 'completed');
    const row = await callRow(pool, call.callId);
    startedAt(row, monday, 'Monday 09:00 Paris');
    assert.equal(row.scheduled_time.toISOString(), iso(saturday), 'scheduled_time keeps what was asked for');
    const local = zonedParts(row.actual_time!.getTime(), 'Europe/Paris');
    assert.deepEqual([local.weekday, local.hour], [0, 9]);
  });

  test('across midnight: a call due at 01:30 inside Friday’s 22:00–02:00 window starts at once; one due at 03:00 waits for Saturday 22:00', async () => {
    const team = await createTestTeam(pool);
    const zone = 'America/New_York';
    const night: CallingWindow = { days: ['fri', 'sat'], start: '22:00', end: '02:00' };
    const now = await env.currentTimeMs();
    const inside = nextLocal(zone, now + HOUR, 5, 90); // Saturday 01:30: Friday's window
    const outside = nextLocal(zone, inside, 5, 180); // Saturday 03:00
    const saturdayNight = nextLocal(zone, outside, 5, 22 * 60);
    const a = await schedule(team, { at: inside, timezone: zone, window: night });
    const b = await schedule(team, { at: outside, timezone: zone, window: night });
    assert.equal(a.call.dial_after!.toISOString(), iso(inside), 'inside its window: dialled at its time');
    assert.equal(b.call.dial_after!.toISOString(), iso(saturdayNight));
    await skipTo(inside);
    assert.equal((await result(a.callId)).status, 'completed');
    startedAt(await callRow(pool, a.callId), inside, 'inside the window across midnight');
    await skipTo(outside + 60_000);
    await waitForCall(pool, b.callId, (c) => c.progress === 'waiting_for_window');
    await skipTo(saturdayNight);
    assert.equal((await result(b.callId)).status, 'completed');
    startedAt(await callRow(pool, b.callId), saturdayNight, 'Saturday 22:00');
  });

  test('spring forward (Europe/Paris): a window opening in the skipped hour opens when the clocks jump; 09:00 the next morning is 07:00 UTC', async () => {
    const team = await createTestTeam(pool);
    const zone = 'Europe/Paris';
    const jump = nextTransition(zone, await env.currentTimeMs(), 'forward');
    const before = jump - 3 * HOUR; // Saturday 23:00 local
    const gap = await schedule(team, { at: before, timezone: zone, window: { days: ['sun'], start: '02:30', end: '05:00' } });
    const morning = await schedule(team, { at: before, timezone: zone, window: { days: ['sat', 'sun'], start: '09:00', end: '20:00' } });
    assert.equal(gap.call.dial_after!.toISOString(), iso(jump));
    assert.equal(morning.call.dial_after!.toISOString(), iso(jump + 6 * HOUR));
    await skipTo(before + 60_000);
    await waitForCall(pool, gap.callId, (c) => c.progress === 'waiting_for_window');
    await waitForCall(pool, morning.callId, (c) => c.progress === 'waiting_for_window');
    await skipTo(jump);
    assert.equal((await result(gap.callId)).status, 'completed');
    const g = await callRow(pool, gap.callId);
    startedAt(g, jump, 'the end of the skipped hour');
    assert.equal(zonedParts(g.actual_time!.getTime(), zone).hour, 3);
    await skipTo(jump + 6 * HOUR);
    assert.equal((await result(morning.callId)).status, 'completed');
    const m = await callRow(pool, morning.callId);
    startedAt(m, jump + 6 * HOUR, '09:00 summer time');
    assert.equal(new Date(jump + 6 * HOUR).getUTCHours(), 7, 'summer time: 09:00 is 07:00 UTC');
    assert.equal(zonedParts(m.actual_time!.getTime(), zone).hour, 9);
  });

  test('fall back (America/New_York): a window opening in the repeated hour opens at its first occurrence; 09:00 that Sunday is 14:00 UTC', async () => {
    const team = await createTestTeam(pool);
    const zone = 'America/New_York';
    const back = nextTransition(zone, await env.currentTimeMs(), 'back'); // 02:00 EDT becomes 01:00 EST
    const before = back - 8 * HOUR;
    const repeated = await schedule(team, { at: before, timezone: zone, window: { days: ['sun'], start: '01:30', end: '03:00' } });
    const morning = await schedule(team, { at: before, timezone: zone, window: { days: ['sun'], start: '09:00', end: '20:00' } });
    const firstOneThirty = back - 30 * 60_000;
    const nine = back + 8 * HOUR; // 01:00 EST + 8 h
    assert.equal(repeated.call.dial_after!.toISOString(), iso(firstOneThirty));
    assert.equal(morning.call.dial_after!.toISOString(), iso(nine));
    await skipTo(before + 60_000);
    await waitForCall(pool, repeated.callId, (c) => c.progress === 'waiting_for_window');
    await skipTo(firstOneThirty);
    assert.equal((await result(repeated.callId)).status, 'completed');
    startedAt(await callRow(pool, repeated.callId), firstOneThirty, 'the first 01:30');
    await skipTo(nine);
    assert.equal((await result(morning.callId)).status, 'completed');
    const m = await callRow(pool, morning.callId);
    startedAt(m, nine, '09:00 standard time');
    assert.equal(new Date(nine).getUTCHours(), 14, 'standard time: 09:00 is 14:00 UTC');
    assert.equal(zonedParts(m.actual_time!.getTime(), zone).hour, 9);
  });

  test('a call in progress when its window closes is not cut off', async () => {
    const team = await createTestTeam(pool);
    const zone = 'UTC';
    const now = await env.currentTimeMs();
    const end = Math.ceil((now + HOUR) / DAY) * DAY + 17 * HOUR; // 17:00 UTC on some day
    const at = end - 1_000; // 16:59:59: inside, one second before the window closes
    const call = await schedule(team, { at, timezone: zone, window: { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '17:00' } });
    await skipTo(at);
    assert.equal((await result(call.callId)).status, 'completed');
    const row = await callRow(pool, call.callId);
    assert.ok(row.actual_time!.getTime() < end, 'started inside the window');
    assert.ok(row.end_time!.getTime() > end, 'and ran on after it closed');
  });

  test('cancel-call while a call waits for its window ends it cancelled', async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const saturday = nextLocal('Asia/Tokyo', now + HOUR, 5, 12 * 60);
    const call = await schedule(team, { at: saturday, timezone: 'Asia/Tokyo', window: weekdays });
    await skipTo(saturday + 60_000);
    await waitForCall(pool, call.callId, (c) => c.progress === 'waiting_for_window');
    await cancelCall(deps, team.teamId, call.callId);
    const ended = await result(call.callId);
    assert.deepEqual([ended.status, ended.endReason], ['cancelled', 'cancelled']);
  });
});

describe('retry chains', () => {
  const outcomes: [string, string, string][] = [
    ['0001', 'rang-out', 'no_answer'],
    ['0002', 'voicemail', 'voicemail'],
    ['0003', 'User rejected', 'declined'],
    ['0004', 'failed', 'provider_error'],
    ['0005', 'User unavailable', 'unreachable'],
    ['0006', 'hang-up', 'User Hangup'],
    ['0007', 'dropout', 'connection_lost'],
  ];

  /** The call after `callId` in its chain, once its workflow has made it. */
  async function nextOf(callId: string): Promise<string | null> {
    return (await callRow(pool, callId)).next_attempt_call_id;
  }

  test('each retryable outcome: three attempts 60 s after each end, the same number, contact and script, then the chain ends', async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 10 });
    const now = await env.currentTimeMs();
    const firsts = await Promise.all(
      outcomes.map(([lastFour, status]) => schedule(team, { at: now, lastFour, retry: { [status]: { max_attempts: 3, delay_seconds: 60 } } })),
    );
    const chains = firsts.map((c) => [c.callId]);
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const ends = await Promise.all(chains.map((chain) => result(chain[attempt - 1])));
      ends.forEach((end, i) => assert.deepEqual([end.status, end.endReason], [outcomes[i][1], outcomes[i][2]], `attempt ${attempt} of ${outcomes[i][1]}`));
      const next = await Promise.all(chains.map((chain) => nextOf(chain[attempt - 1])));
      if (attempt === 3) {
        assert.deepEqual(next, Array(outcomes.length).fill(null), 'max_attempts counts the first call: no fourth');
        break;
      }
      next.forEach((id, i) => {
        assert.ok(id, `${outcomes[i][1]} attempt ${attempt} scheduled the next`);
        chains[i].push(id);
      });
      const rows = await Promise.all(chains.map((chain) => callRow(pool, chain[attempt])));
      const previous = await Promise.all(chains.map((chain) => callRow(pool, chain[attempt - 1])));
      rows.forEach((row, i) => {
        assert.equal(row.status, 'scheduled');
        assert.equal(row.scheduled_time.getTime(), previous[i].end_time!.getTime() + 60_000, 'delay_seconds after the end');
      });
      await skipTo(Math.max(...rows.map((r) => r.scheduled_time.getTime())));
    }
    for (const chain of chains) {
      const rows = await Promise.all(chain.map((id) => callRow(pool, id)));
      assert.deepEqual(rows.map((r) => r.attempt), [1, 2, 3]);
      assert.deepEqual(rows.map((r) => r.original_call_id), [null, chain[0], chain[0]]);
      assert.deepEqual(rows.map((r) => r.next_attempt_call_id), [chain[1], chain[2], null]);
      assert.equal(new Set(rows.map((r) => `${r.to_number} ${r.contact_id} ${r.script_id} ${r.from_number}`)).size, 1);
      // Made through the workflow of the call that ended, as an activity of its own, before its end.
      const made = await steps(chain[0]);
      assert.ok(made.indexOf('scheduleNextAttempt') >= 0 && made.indexOf('scheduleNextAttempt') < made.indexOf('completeCall'), made.join(', '));
    }
  });

  test('a completed call, and an outcome the policy does not name, end their chain at once', async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const policy = { 'rang-out': { max_attempts: 3, delay_seconds: 60 } };
    const completed = await schedule(team, { at: now, lastFour: '9002', retry: policy });
    const voicemail = await schedule(team, { at: now, lastFour: '0002', retry: policy });
    assert.equal((await result(completed.callId)).status, 'completed');
    assert.equal((await result(voicemail.callId)).status, 'voicemail');
    assert.equal(await nextOf(completed.callId), null);
    assert.equal(await nextOf(voicemail.callId), null);
    assert.ok(!(await steps(completed.callId)).includes('scheduleNextAttempt'), 'decided in the workflow: no activity at all');
  });

  test('cancelling the scheduled retry stops the chain', async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const first = await schedule(team, { at: now, lastFour: '0001', retry: { 'rang-out': { max_attempts: 5, delay_seconds: 3600 } } });
    assert.equal((await result(first.callId)).status, 'rang-out');
    const retry = (await nextOf(first.callId))!;
    assert.ok(retry);
    await cancelCall(deps, team.teamId, retry);
    await skipTo((await callRow(pool, retry)).scheduled_time.getTime() + 60_000);
    assert.equal((await result(retry)).status, 'cancelled');
    assert.equal(await nextOf(retry), null, 'a cancelled call is not retried');
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM calls WHERE original_call_id = $1', [first.callId]);
    assert.equal(rows[0].n, 1);
  });

  test('a number put on the do-not-call list mid-chain: the retry ends failed / do_not_call at dial time and the chain stops', async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const phone = calleeNumber('0001');
    const first = await schedule(team, { at: now, phone, retry: { 'rang-out': { max_attempts: 5, delay_seconds: 60 }, failed: { max_attempts: 5, delay_seconds: 60 } } });
    assert.equal((await result(first.callId)).status, 'rang-out');
    const retry = (await nextOf(first.callId))!;
    await pool.query(`INSERT INTO do_not_call (team_id, phone_number, source) VALUES ($1, $2, 'api')`, [team.teamId, phone]);
    await skipTo((await callRow(pool, retry)).scheduled_time.getTime());
    const ended = await result(retry);
    assert.deepEqual([ended.status, ended.endReason], ['failed', 'do_not_call']);
    assert.equal(await nextOf(retry), null, 'retries stop at the list, even with a policy for failed');
    const row = await callRow(pool, retry);
    assert.equal(row.actual_time, null, 'never started');
    assert.equal(row.provider_call_id, null, 'never dialled');
    assert.equal(row.system_notes[0].kind, 'do_not_call');
    const history = await steps(retry);
    assert.deepEqual(await admissions(retry), ['do_not_call'], history.join(', '));
    assert.ok(!history.includes('placeCall'), history.join(', '));
  });

  test('the callee asks not to be called again (simulator 3668): listed with source call, and the hang-up is not retried', async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const phone = calleeNumber('3668');
    const call = await schedule(team, { at: now, phone, retry: { 'hang-up': { max_attempts: 3, delay_seconds: 60 } } });
    assert.equal((await result(call.callId)).status, 'hang-up');
    const { rows } = await pool.query('SELECT source, call_id FROM do_not_call WHERE team_id = $1 AND phone_number = $2', [team.teamId, phone]);
    assert.deepEqual(rows[0], { source: 'call', call_id: call.callId });
    assert.equal(await nextOf(call.callId), null);
    const row = await callRow(pool, call.callId);
    assert.match(row.conversation.map((t) => t.text).join(' '), /do not call me again/);
  });
});

describe('the do-not-call list at dial time', () => {
  test('a number listed after its call was scheduled: failed / do_not_call, never dialled, the check in the history, call.ended recorded', async () => {
    const team = await createTestTeam(pool);
    await pool.query(`INSERT INTO webhook_endpoints (id, team_id, url, events, secret) VALUES ($1, $2, 'https://example.com/hook', ARRAY['call.ended'], 'whsec_test')`, [randomUUID(), team.teamId]);
    const now = await env.currentTimeMs();
    const phone = calleeNumber('9003');
    const call = await schedule(team, { at: now + HOUR, phone });
    await pool.query(`INSERT INTO do_not_call (team_id, phone_number, source) VALUES ($1, $2, 'api')`, [team.teamId, phone]);
    await skipTo(now + HOUR);
    const ended = await result(call.callId);
    assert.deepEqual([ended.status, ended.endReason], ['failed', 'do_not_call']);
    const row = await callRow(pool, call.callId);
    assert.equal(row.provider_call_id, null);
    assert.equal(row.duration, 0);
    const history = await steps(call.callId);
    assert.deepEqual(await admissions(call.callId), ['do_not_call'], 'the check came with the slot, in the admission step');
    assert.ok(!history.includes('placeCall'), history.join(', '));
    const events = await pool.query(`SELECT payload FROM webhook_events WHERE call_id = $1 AND type = 'call.ended'`, [call.callId]);
    assert.equal(events.rows.length, 1, 'the same completion path: call.ended fires');
    assert.equal(events.rows[0].payload.data.call.end_reason, 'do_not_call');
  });

  test('a script step puts the callee on the list (source call, naming the call) and notes it', async () => {
    const team = await createTestTeam(pool);
    const script = await insertScript(pool, {
      teamId: team.teamId,
      name: 'Opt out',
      definition: {
        name: 'Opt out',
        steps: [
          { id: 'hello', type: 'say', text: 'Hello.' },
          { id: 'opt_out', type: 'do_not_call', text: 'We will not call you again.', reason: 'Opted out on the call' },
          { id: 'bye', type: 'end', text: 'Goodbye.' },
        ],
      },
    });
    const phone = calleeNumber('9004');
    const call = await schedule(team, { at: await env.currentTimeMs(), phone, scriptId: script.id });
    assert.equal((await result(call.callId)).status, 'completed');
    const { rows } = await pool.query('SELECT source, call_id, reason FROM do_not_call WHERE team_id = $1 AND phone_number = $2', [team.teamId, phone]);
    assert.deepEqual(rows[0], { source: 'call', call_id: call.callId, reason: 'Opted out on the call' });
    const row = await callRow(pool, call.callId);
    assert.ok(row.system_notes.some((n) => n.kind === 'do_not_call'));
    assert.ok(row.conversation.some((t) => t.text === 'We will not call you again.'));
  });
});

describe('carrier pacing', () => {
  test('five calls due at once from one number at a team rate of 1/s: a slot each, then one dial a second, waiting_for_dial_slot meanwhile', async () => {
    // A slot first, then the dial token: waiting for it, the call is in progress (it holds its slot) and says so.
    const team = await createTestTeam(pool, { maxConcurrent: 10 });
    await updateTeamDialingPolicy(pool, team.teamId, { dial_rate: 1 });
    const now = await env.currentTimeMs();
    const batch = await Promise.all(Array.from({ length: 5 }, (_, i) => schedule(team, { at: now, lastFour: `910${i}` })));
    await Promise.race(batch.map((c) => waitForCall(pool, c.callId, (row) => row.progress === 'waiting_for_dial_slot', 30_000)));
    await Promise.all(batch.map((c) => result(c.callId)));
    // When each dial went out: the end of its dial activity (the paced ones dial at the end of their wait).
    const dials = (await Promise.all(batch.map((c) => dialTime(c.callId)))).sort((a, b) => a - b);
    for (let i = 1; i < dials.length; i += 1) assert.ok(dials[i] - dials[i - 1] >= 500, `dials a second apart: ${dials.map((d) => d - dials[0])}`);
    assert.ok(dials[4] - dials[0] >= 3_500, `five dials at 1/s span four seconds: ${dials[4] - dials[0]} ms`);
    const waited = await Promise.all(batch.map(async (c) => (await steps(c.callId)).includes('placePacedCall')));
    assert.ok(waited.filter(Boolean).length >= 3, 'the calls that found no token waited for one in their dial activity');
    const direct = await Promise.all(batch.map(async (c) => (await steps(c.callId)).includes('placeCall')));
    assert.ok(direct.some(Boolean), 'the first took a free token and dialled at once');
  });
});

describe('batches', () => {
  test('a batch counts a contact done when its chain ends, with every attempt', async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 5 });
    const { listId } = await listWithContacts(pool, team.teamId, 3, '0001');
    const batch = await createBatch(deps as never, {
      teamId: team.teamId,
      listId,
      scriptId: team.scriptId,
      fromNumber: team.fromNumber,
      retryPolicy: { 'rang-out': { max_attempts: 2, delay_seconds: 60 } },
    });
    const deadline = Date.now() + 90_000;
    let progress = (await showBatch(deps, batch.id)).progress;
    while (progress.attempts < 3 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      progress = (await showBatch(deps, batch.id)).progress;
    }
    // The first calls rang out and their retries wait 60 s: the contacts are still calling.
    const first = await pool.query(`SELECT id, next_attempt_call_id FROM calls WHERE team_id = $1 AND attempt = 1`, [team.teamId]);
    await Promise.all(first.rows.map((r) => result(r.id)));
    progress = (await showBatch(deps, batch.id)).progress;
    assert.equal(progress.done_total, 0, 'a chain with a retry ahead is not done');
    assert.equal(progress.calling, 3);
    await skipTo((await env.currentTimeMs()) + 61_000);
    const handle = plain.workflow.getHandle(`batch-${batch.id}`);
    const ended = await Promise.race([handle.result(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('batch did not end')), 90_000))]);
    assert.equal(ended.status, 'completed');
    const shown = await showBatch(deps, batch.id);
    assert.deepEqual(shown.progress.done, { 'rang-out': 3 });
    assert.equal(shown.progress.attempts, 6, 'two calls per contact');
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM calls WHERE team_id = $1`, [team.teamId]);
    assert.equal(rows[0].n, 6);
  });

  test('contacts whose calling window is closed now stay pending while the others are called', async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 5 });
    const hour = new Date().getUTCHours();
    const hh = (h: number) => `${String((h + 24) % 24).padStart(2, '0')}:00`;
    // Open now in UTC for three hours; nine hours ahead (Tokyo), it is closed.
    const window: CallingWindow = { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: hh(hour - 1), end: hh(hour + 2) };
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 4);
    await pool.query(`UPDATE contacts SET timezone = CASE WHEN id = ANY($2::uuid[]) THEN 'Asia/Tokyo' ELSE 'UTC' END WHERE id = ANY($1::uuid[])`, [contactIds, contactIds.slice(2)]);
    const batch = await createBatch(deps as never, { teamId: team.teamId, listId, scriptId: team.scriptId, fromNumber: team.fromNumber, callingWindow: window });
    const deadline = Date.now() + 60_000;
    let states: Record<string, string> = {};
    while (Date.now() < deadline) {
      const { rows } = await pool.query<{ contact_id: string; state: string }>('SELECT contact_id, state FROM batch_contacts WHERE batch_id = $1', [batch.id]);
      states = Object.fromEntries(rows.map((r) => [r.contact_id, r.state]));
      if (contactIds.slice(0, 2).every((id) => states[id] && states[id] !== 'pending')) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(contactIds.slice(0, 2).every((id) => states[id] === 'calling' || states[id] === 'done'), JSON.stringify(states));
    assert.deepEqual(contactIds.slice(2).map((id) => states[id]), ['pending', 'pending']);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM calls WHERE contact_id = ANY($1::uuid[])', [contactIds.slice(2)]);
    assert.equal(rows[0].n, 0, 'no call made only to wait');
    assert.equal((await showBatch(deps, batch.id)).progress.pending, 2);
    await plain.workflow.getHandle(`batch-${batch.id}`).terminate('test over');
  });
});
