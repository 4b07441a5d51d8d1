// A call workflow test file's environment: one time-skipping test server and one call worker
// (the real activities over the test database, the simulator) for the whole file, started
// before its tests and stopped after them, and the readers its tests share.
//
// Results are awaited through a plain client (time skipping stays locked: calls run in real
// time) and long waits are skipped with env.sleep() (skipTo), computed from the test
// server's own clock (env.currentTimeMs()), which runs ahead of the wall clock.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Config } from '../../src/config/index.js';
import type { Pool } from '../../src/db/pool.js';
import { scheduleCall, type CallServiceDeps } from '../../src/services/calls.js';
import { callWorkflowId, type CallAdmission } from '../../workflows/contracts.js';
import type { TestTeam } from './app.js';
import { callResultOrStuck, calleeNumber, historySteps, localActivityResults, startCallWorkerEnv, type CallWorkerEnv } from './calls.js';

export interface StartedCallWorkflowEnv {
  env: TestWorkflowEnvironment;
  pool: Pool;
  /** A client that leaves time skipping locked (see the header). */
  plain: Client;
  deps: CallServiceDeps;
}

export interface CallWorkflowEnv extends Readonly<StartedCallWorkflowEnv> {
  readonly config: Config;
  /** The call's workflow result (real time); a call stuck for `timeoutMs` fails the test saying where. */
  result(callId: string, timeoutMs?: number): ReturnType<typeof callResultOrStuck>;
  /** The steps of the call's workflow history. */
  steps(callId: string): Promise<string[]>;
  /** The outcome of each admitCall step of the call (slot, do-not-call list, dial token, in-progress in one). */
  admissions(callId: string): Promise<string[]>;
  /** Skips the test server's clock to `ms` (no-op when it is there already). */
  skipTo(ms: number): Promise<void>;
  /** When the call's dial activity ended (placeCall's marker, or placePacedCall's completion), on the server's clock. */
  dialTime(callId: string): Promise<number>;
}

/**
 * Starts the file's environment and call worker before its tests and stops them after. The
 * returned object's fields are there once it has started, when `onStarted` is called with
 * them, in the same hook: node 20 runs a file's top-level `before` hooks without waiting for
 * one to end before the next, so a `before` of the file's own could run before this one ends.
 */
export function callWorkflowEnv(config: Config, onStarted?: (started: StartedCallWorkflowEnv) => void): CallWorkflowEnv {
  let calls: CallWorkerEnv | undefined;
  let plain: Client | undefined;
  let deps: CallServiceDeps | undefined;
  const started = (): StartedCallWorkflowEnv => {
    if (!calls || !plain || !deps) throw new Error('the call workflow environment is not started (used outside a test?)');
    return { env: calls.env, pool: calls.pool, plain, deps };
  };

  before(async () => {
    calls = await startCallWorkerEnv(config);
    plain = new Client({ connection: calls.env.connection, namespace: calls.env.namespace });
    deps = { pool: calls.pool, temporal: calls.env.client, config };
    onStarted?.(started());
  });

  after(async () => {
    await calls?.stop();
  });

  const history = (callId: string) => started().plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();

  return {
    get env() {
      return started().env;
    },
    get pool() {
      return started().pool;
    },
    get plain() {
      return started().plain;
    },
    get deps() {
      return started().deps;
    },
    config,
    result: (callId, timeoutMs = 120_000) => callResultOrStuck(started().pool, started().plain, callId, timeoutMs),
    steps: async (callId) => historySteps(await history(callId)),
    admissions: async (callId) => (localActivityResults(await history(callId), 'admitCall') as CallAdmission[]).map((a) => a.outcome),
    async skipTo(ms) {
      const { env } = started();
      const now = await env.currentTimeMs();
      if (ms > now) await env.sleep(ms - now);
    },
    async dialTime(callId) {
      const events = (await history(callId)).events ?? [];
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
    },
  };
}

/** Schedules a call of the team to Ada Lovelace at a fresh number whose last four digits pick the simulator's outcome. */
export function scheduleSimulatedCall(deps: CallServiceDeps, team: TestTeam, lastFour: string, extra: { scheduledTime?: Date; phone?: string } = {}) {
  return scheduleCall(deps, {
    teamId: team.teamId,
    fromNumber: team.fromNumber,
    scriptId: team.scriptId,
    contact: { phone_number: extra.phone ?? calleeNumber(lastFour), first_name: 'Ada', last_name: 'Lovelace' },
    scheduledTime: extra.scheduledTime,
  });
}
