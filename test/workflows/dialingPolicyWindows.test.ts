// The dialing policy in the call workflow, calling windows: weekends, across midnight, both
// daylight-saving transitions, a call not cut off when its window closes, cancel while waiting.
// The environment and helpers: test/support/dialingPolicy.ts (the other groups are in
// dialingPolicyRetries.test.ts and dialingPolicyPacing.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { zonedParts } from '../../src/domain/timeZones.js';
import type { CallingWindow } from '../../src/domain/callingWindows.js';
import { cancelCall, type CallServiceDeps } from '../../src/services/calls.js';
import { createTestTeam } from '../support/app.js';
import { callRow, waitForCall } from '../support/calls.js';
import { DAY, dialingPolicyEnv, HOUR, iso, nextLocal, nextTransition, startedAt, weekdays } from '../support/dialingPolicy.js';
import { WORKFLOW_TEST } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: CallServiceDeps;
const policy = dialingPolicyEnv((started) => ({ env, pool, deps } = started));
const { schedule, result, skipTo } = policy;

describe('calling windows', () => {
  test('due on a Saturday with a weekday window: scheduled, waiting_for_window, then started Monday 09:00 in the callee’s zone; scheduled_time unchanged', WORKFLOW_TEST, async () => {
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

  test('across midnight: a call due at 01:30 inside Friday’s 22:00–02:00 window starts at once; one due at 03:00 waits for Saturday 22:00', WORKFLOW_TEST, async () => {
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

  test('spring forward (Europe/Paris): a window opening in the skipped hour opens when the clocks jump; 09:00 the next morning is 07:00 UTC', WORKFLOW_TEST, async () => {
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

  test('fall back (America/New_York): a window opening in the repeated hour opens at its first occurrence; 09:00 that Sunday is 14:00 UTC', WORKFLOW_TEST, async () => {
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

  test('a call in progress when its window closes is not cut off', WORKFLOW_TEST, async () => {
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

  test('cancel-call while a call waits for its window ends it cancelled', WORKFLOW_TEST, async () => {
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
