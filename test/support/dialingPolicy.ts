// The dialing-policy tests (test/workflows/dialingPolicy*.test.ts, split by group so that
// parallel lanes run them side by side): each file has its own call workflow environment
// (test/support/callWorkflowEnv.ts) and shares these helpers.
import assert from 'node:assert/strict';
import type { CallingWindow } from '../../src/domain/callingWindows.js';
import type { RetryPolicy } from '../../src/domain/retryPolicy.js';
import { addDays, offsetMs, zonedInstant, zonedParts } from '../../src/domain/timeZones.js';
import { scheduleCall } from '../../src/services/calls.js';
import type { TestTeam } from './app.js';
import { callTestConfig, calleeNumber } from './calls.js';
import { callWorkflowEnv, type CallWorkflowEnv, type StartedCallWorkflowEnv } from './callWorkflowEnv.js';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
export const iso = (ms: number) => new Date(ms).toISOString();

export const weekdays: CallingWindow = { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '17:00' };

export interface Schedule {
  at: number;
  lastFour?: string;
  phone?: string;
  timezone?: string;
  window?: CallingWindow | null;
  retry?: RetryPolicy | null;
  scriptId?: string;
}

export interface DialingPolicyEnv extends CallWorkflowEnv {
  /** Schedules a call of the team through the calls service. */
  schedule(team: TestTeam, s: Schedule): ReturnType<typeof scheduleCall>;
}

/** The file's call workflow environment (a 2-second batch poll, a window of twice the ceiling) and `schedule`. */
export function dialingPolicyEnv(onStarted?: (started: StartedCallWorkflowEnv) => void): DialingPolicyEnv {
  const calls = callWorkflowEnv(callTestConfig({ BATCH_POLL_SECONDS: '2', BATCH_WINDOW_FACTOR: '2' }), onStarted);
  return Object.assign(calls, {
    schedule: (team: TestTeam, s: Schedule) =>
      scheduleCall(calls.deps, {
        teamId: team.teamId,
        fromNumber: team.fromNumber,
        scriptId: s.scriptId ?? team.scriptId,
        contact: { phone_number: s.phone ?? calleeNumber(s.lastFour ?? '9001'), first_name: 'Ada', ...(s.timezone ? { timezone: s.timezone } : {}) },
        scheduledTime: new Date(s.at),
        callingWindow: s.window,
        retryPolicy: s.retry,
      }),
  });
}

/** The instant of local `hh:mm` on the first `weekday` (0 = Monday) on or after `fromMs` in `zone`. */
export function nextLocal(zone: string, fromMs: number, weekday: number, minutes: number): number {
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
export function nextTransition(zone: string, fromMs: number, direction: 'forward' | 'back'): number {
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
export function startedAt(row: { actual_time: Date | null }, expected: number, what: string): void {
  const actual = row.actual_time!.getTime();
  assert.ok(actual >= expected && actual < expected + 60_000, `${what}: started ${iso(actual)}, expected ${iso(expected)}`);
}
