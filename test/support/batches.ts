// Helpers for batch tests: lists of fresh contacts, readers of what the calls did, and the
// environment of a batch workflow test file.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Worker, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { PROJECT_ROOT, type Config } from '../../src/config/index.js';
import { createLogger } from '../../src/logging/logger.js';
import type { Pool } from '../../src/db/pool.js';
import { insertList } from '../../src/db/repositories/lists.js';
import { createBatch, wakeListBatches, type BatchServiceDeps, type BatchWorkflowOptions } from '../../src/services/batches.js';
import { addToList } from '../../src/services/lists.js';
import { cachedWorkflowBundle, TEST_WORKFLOW_BUNDLES_DIR } from '../../src/temporal/workflowBundleCache.js';
import { testConfig, testPool, type TestTeam } from './app.js';
import { createTimeSkippingEnv } from './temporal.js';

export const BATCHES_TASK_QUEUE = 'batches-test';

/** Batch tests: their own task queue, 2-second simulated calls, a 2-second poll. */
export function batchTestConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  return testConfig({ TEMPORAL_TASK_QUEUE: BATCHES_TASK_QUEUE, SIMULATOR_CALL_SECONDS: '2', BATCH_POLL_SECONDS: '2', ...overrides });
}

let numberBlock = 0;

/**
 * `n` valid, distinct US numbers whose last four digits are 1000 or more, so the simulated
 * callee answers and the script completes (docs/calls.md "Simulated outcomes"); `lastFour` forces an outcome.
 */
export function calleeNumbers(n: number, lastFour?: string): string[] {
  numberBlock += 1;
  const base = ((process.pid * 13 + numberBlock * 37) % 500) + 200;
  return Array.from({ length: n }, (_, i) => {
    const exchange = base + Math.floor(i / 9000) + (lastFour ? (i % 300) : 0);
    const line = lastFour ?? String(1000 + (i % 9000));
    return `+1415${exchange}${line}`;
  });
}

/** A new list of the team holding `n` new contacts (added through the lists service). */
export async function listWithContacts(pool: Pool, teamId: string, n: number, lastFour?: string): Promise<{ listId: string; contactIds: string[] }> {
  const list = await insertList(pool, teamId, `batch list ${numberBlock}`);
  const contactIds = await addContacts({ pool }, teamId, list.id, n, lastFour);
  return { listId: list.id, contactIds };
}

/** Adds `n` new contacts to a list through the lists service; given a Temporal client, it wakes the list's batches as the API does. */
export async function addContacts(deps: { pool: Pool; temporal?: BatchServiceDeps['temporal'] }, teamId: string, listId: string, n: number, lastFour?: string): Promise<string[]> {
  if (n === 0) return [];
  const numbers = calleeNumbers(n, lastFour);
  const contactsAdded = deps.temporal ? wakeListBatches({ pool: deps.pool, temporal: deps.temporal }) : undefined;
  const result = await addToList({ pool: deps.pool, contactsAdded }, teamId, listId, { contacts: numbers.map((phone_number, i) => ({ phone_number, first_name: `Callee${i}` })) });
  return result.contacts.map((c) => c.id);
}

/** How many calls each contact of the team got. */
export async function callsPerContact(pool: Pool, teamId: string): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ contact_id: string; n: number }>('SELECT contact_id, count(*)::int AS n FROM calls WHERE team_id = $1 GROUP BY contact_id', [teamId]);
  return new Map(rows.map((r) => [r.contact_id, r.n]));
}

/**
 * The most calls of the team that were in progress at the same moment, from their
 * actual_time and end_time (workflow time: one clock for every workflow of the test server).
 * A call ending at t and another starting at t do not overlap.
 */
export async function maxInProgress(pool: Pool, teamId: string): Promise<number> {
  const { rows } = await pool.query<{ actual_time: Date; end_time: Date }>(
    'SELECT actual_time, end_time FROM calls WHERE team_id = $1 AND actual_time IS NOT NULL',
    [teamId],
  );
  const events: [number, number][] = [];
  for (const r of rows) {
    events.push([r.actual_time.getTime(), 1]);
    events.push([(r.end_time ?? new Date(8.64e15)).getTime(), -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let current = 0;
  let max = 0;
  for (const [, delta] of events) {
    current += delta;
    max = Math.max(max, current);
  }
  return max;
}

export async function countCalls(pool: Pool, teamId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE team_id = $1', [teamId]);
  return rows[0].n;
}

/** Deps of the batch service in tests. */
export function batchDeps(pool: Pool, temporal: BatchServiceDeps['temporal'], config: Config): BatchServiceDeps {
  return { pool, temporal, config };
}

const STAND_IN_PATH = path.join(PROJECT_ROOT, 'test', 'workflows', 'batchCallStandIn.ts');
let standInBundle: Promise<WorkflowBundle> | undefined;

/** The bundle of test/workflows/batchCallStandIn.ts: the real batch workflow and the stand-in call workflow (kept for the run's other files). */
export function batchTestBundle(): Promise<WorkflowBundle> {
  standInBundle ??= cachedWorkflowBundle({ workflowsPath: STAND_IN_PATH, logger: new DefaultLogger('WARN') }, TEST_WORKFLOW_BUNDLES_DIR);
  return standInBundle;
}

/**
 * A worker for batch workflow tests: the real batch workflow and every real activity, with
 * the lean stand-in call workflow of test/workflows/batchCallStandIn.ts (bundled once).
 * `maxCachedWorkflows: 0` for a worker a test stops: the test server does not move the
 * workflow tasks of a stopped worker off its sticky queue, so that worker must not have one.
 */
export async function createBatchWorker(env: TestWorkflowEnvironment, pool: Pool, config: Config, options: { maxCachedWorkflows?: number } = {}): Promise<Worker> {
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    workflowBundle: await batchTestBundle(),
    activities: createActivities({ config, pool, logger: createLogger('silent'), temporal: env.client }),
    ...options,
  });
}

export interface StartedBatchWorkflowEnv {
  env: TestWorkflowEnvironment;
  pool: Pool;
  deps: BatchServiceDeps;
}

export interface BatchWorkflowEnv extends Readonly<StartedBatchWorkflowEnv> {
  readonly config: Config;
  /** Shuts the file's batch worker down (it finishes what it holds first). */
  stopWorker(): Promise<void>;
  /** Starts a new batch worker in place of the stopped one. */
  startWorker(options?: { maxCachedWorkflows?: number }): Promise<void>;
}

/**
 * A batch workflow test file's environment: a time-skipping test server, the test pool and a
 * batch worker (createBatchWorker), started before the file's tests and stopped after them.
 * `onStarted` gets them in the same hook (node 20 runs a file's top-level `before` hooks
 * without waiting for one to end before the next); `overrides` change batchTestConfig's settings.
 */
export function batchWorkflowEnv(onStarted?: (started: StartedBatchWorkflowEnv) => void, overrides: Partial<Record<keyof Config, string>> = {}): BatchWorkflowEnv {
  const config = batchTestConfig(overrides);
  let started: StartedBatchWorkflowEnv | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  const ready = (): StartedBatchWorkflowEnv => {
    if (!started) throw new Error('the batch workflow environment is not started (used outside a test?)');
    return started;
  };
  const startWorker = async (options: { maxCachedWorkflows?: number } = {}) => {
    worker = await createBatchWorker(ready().env, ready().pool, config, options);
    running = worker.run();
  };
  const stopWorker = async () => {
    worker?.shutdown();
    await running;
  };

  before(async () => {
    const env = await createTimeSkippingEnv();
    const pool = await testPool();
    started = { env, pool, deps: batchDeps(pool, env.client, config) };
    await startWorker();
    onStarted?.(started);
  });

  after(async () => {
    await stopWorker();
    await started?.env.teardown();
  });

  return {
    get env() {
      return ready().env;
    },
    get pool() {
      return ready().pool;
    },
    get deps() {
      return ready().deps;
    },
    config,
    stopWorker,
    startWorker,
  };
}

/** Starts a batch of the team over the list, with the team's script and number. */
export function startBatch(deps: BatchServiceDeps, team: TestTeam, listId: string, opts: { startAt?: Date; workflow?: BatchWorkflowOptions } = {}) {
  return createBatch(deps, { teamId: team.teamId, listId, scriptId: team.scriptId, fromNumber: team.fromNumber, ...opts });
}

export function assertEachCalledOnce(perContact: Map<string, number>, contactIds: string[]): void {
  assert.equal(perContact.size, contactIds.length, 'every contact has a call');
  for (const id of contactIds) assert.equal(perContact.get(id), 1, `contact ${id} called exactly once`);
}
