// Helpers for call tests: a worker with the real call activities over the test database,
// and small readers of call rows.
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import type { Config } from '../../src/config/index.js';
import type { Pool } from '../../src/db/pool.js';
import { findCallById, type CallRecord } from '../../src/db/repositories/calls.js';
import { createLogger } from '../../src/logging/logger.js';
import { workflowBundle } from '../../src/temporal/worker.js';
import { callWorkflowId, type CallWorkflowResult } from '../../workflows/contracts.js';
import { testConfig, testPool } from './app.js';
import { createTimeSkippingEnv } from './temporal.js';

export const CALLS_TASK_QUEUE = 'calls-test';

/** Test configuration for call tests: their own task queue, a 3-second simulated call. */
export function callTestConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  // Pacing as good as off (one dial per millisecond per number), except in the tests about it.
  return testConfig({ TEMPORAL_TASK_QUEUE: CALLS_TASK_QUEUE, SIMULATOR_CALL_SECONDS: '3', DIAL_RATE_PER_NUMBER: '1000', ...overrides });
}

/** A worker running every workflow and the real activities over `pool`. */
export async function createCallWorker(env: TestWorkflowEnvironment, pool: Pool, config: Config, client?: Client): Promise<Worker> {
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workflowBundle: await workflowBundle(),
    activities: createActivities({ config, pool, logger: createLogger('silent'), temporal: client ?? env.client }),
  });
}

export interface CallWorkerEnv {
  env: TestWorkflowEnvironment;
  pool: Pool;
  /** Shuts the worker down, then tears down the environment and ends the pool. */
  stop(): Promise<void>;
}

/** A time-skipping environment, the test pool, and a call worker (createCallWorker) running on them. */
export async function startCallWorkerEnv(config: Config): Promise<CallWorkerEnv> {
  const env = await createTimeSkippingEnv();
  let pool: Pool | undefined;
  try {
    pool = await testPool();
    const worker = await createCallWorker(env, pool, config);
    const running = worker.run();
    const open = pool;
    return {
      env,
      pool,
      stop: async () => {
        worker.shutdown();
        await running;
        await env.teardown();
        await open.end();
      },
    };
  } catch (err) {
    await env.teardown();
    await pool?.end();
    throw err;
  }
}

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;
type HistoryEvent = NonNullable<History['events']>[number];

/**
 * What one history event is, in a word or two (undefined for workflow tasks and the like):
 * the type of an activity or of a local activity (its marker), `timer 3s`, `signal <name>`.
 */
export function historyStep(e: HistoryEvent): string | undefined {
  if (e.activityTaskScheduledEventAttributes) return e.activityTaskScheduledEventAttributes.activityType?.name ?? undefined;
  const marker = e.markerRecordedEventAttributes;
  if (marker?.markerName === 'core_local_activity') {
    const data = marker.details?.data?.payloads?.[0]?.data;
    return data ? (JSON.parse(Buffer.from(data).toString()) as { activity_type?: string }).activity_type : 'local activity';
  }
  if (e.timerStartedEventAttributes) return `timer ${Number(e.timerStartedEventAttributes.startToFireTimeout?.seconds)}s`;
  if (e.workflowExecutionSignaledEventAttributes) return `signal ${e.workflowExecutionSignaledEventAttributes.signalName}`;
  return undefined;
}

/** The results of the local activities of type `type` in a history, in order (their markers' payloads). */
export function localActivityResults(history: History, type: string): unknown[] {
  const results: unknown[] = [];
  for (const e of history.events ?? []) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity' || historyStep(e) !== type) continue;
    const data = marker.details?.result?.payloads?.[0]?.data;
    results.push(data ? JSON.parse(Buffer.from(data).toString()) : undefined);
  }
  return results;
}

/** The memo of each memo upsert (Workflow Properties Modified event) in a history, in order, its fields decoded. */
export function memoUpserts(history: History): Record<string, unknown>[] {
  return (history.events ?? [])
    .map((e) => e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields)
    .filter((fields) => fields !== undefined && fields !== null)
    .map((fields) => Object.fromEntries(Object.entries(fields).map(([key, p]) => [key, p.data ? JSON.parse(Buffer.from(p.data).toString()) : null])));
}

/** The steps of a history in order (historyStep of each event that is one). */
export function historySteps(history: History): string[] {
  return (history.events ?? []).map(historyStep).filter((s): s is string => s !== undefined);
}

export async function callRow(pool: Pool, callId: string): Promise<CallRecord> {
  const call = await findCallById(pool, callId);
  if (!call) throw new Error(`call ${callId} not found`);
  return call;
}

/**
 * The call workflow's result, awaited through `client` (a plain client leaves time skipping
 * locked: real time). A call that has not ended within `timeoutMs` fails the test with its
 * row and its last workflow events (activity names, timer lengths), to say where it stuck.
 */
export async function callResultOrStuck(pool: Pool, client: Client, callId: string, timeoutMs: number): Promise<CallWorkflowResult> {
  const handle = client.workflow.getHandle(callWorkflowId(callId));
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(async () => {
      const row = await callRow(pool, callId).catch(() => undefined);
      const history = await handle.fetchHistory().catch(() => undefined);
      const last = (history?.events ?? []).slice(-6).map((e) => `${e.eventId} ${e.eventType} ${historyStep(e) ?? ''}`);
      reject(new Error(`call ${callId} did not end: row ${row?.status}/${row?.progress}; last events ${last.join(' | ')}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([handle.result(), stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until `predicate` holds for the call row (real time; for mid-way looks). */
export async function waitForCall(pool: Pool, callId: string, predicate: (c: CallRecord) => boolean, timeoutMs = 20_000): Promise<CallRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const call = await callRow(pool, callId);
    if (predicate(call)) return call;
    if (Date.now() > deadline) throw new Error(`call ${callId} did not reach the expected state; it is ${call.status}/${call.progress}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let calleeSeq = 0;

/** A fresh valid callee number whose last four digits pick the simulator's outcome (docs/calls.md "Simulated outcomes"). */
export function calleeNumber(lastFour: string): string {
  calleeSeq += 1;
  const exchange = 200 + ((process.pid + calleeSeq * 7 + Math.floor(Math.random() * 700)) % 700);
  return `+1415${exchange}${lastFour}`;
}
