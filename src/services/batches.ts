/**
 * Batches: call every contact of a list once with a script, through scheduleCall (the path
 * of create-phone-call), within the team's concurrency ceiling (docs/batches.md). Here is
 * what operators ask of a batch (create, show, list, pause, resume, cancel) and what the
 * API needs when a list grows; the ticks the batch workflow runs are in batchEngine.ts.
 */
import { WorkflowIdReusePolicy } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { withTransaction } from '../db/pool.js';
import {
  ACTIVE_BATCH_STATUSES,
  batchCounts,
  countInProgressCalls,
  findActiveBatchIdsOfList,
  findBatch,
  finishEndedCalls,
  insertBatch,
  listTeamBatches,
  transitionBatch,
  waitingCallsOfBatch,
  type BatchRecord,
  type BatchStatus,
} from '../db/repositories/batches.js';
import { findList } from '../db/repositories/lists.js';
import { findTeamPhoneNumber } from '../db/repositories/phoneNumbers.js';
import { findTeamScript } from '../db/repositories/scripts.js';
import { findTeam } from '../db/repositories/teams.js';
import { callingWindowProblems, normalizeCallingWindow, type CallingWindow } from '../domain/callingWindows.js';
import { normalizePhoneNumber } from '../domain/phone.js';
import { retryPolicyProblems, type RetryPolicy } from '../domain/retryPolicy.js';
import { BATCH_ID, BATCH_STATUS, TEAM_ID } from '../temporal/searchAttributes.js';
import { startWorkflowOnce } from '../temporal/startOnce.js';
import {
  BATCH_WORKFLOW_TYPE,
  batchWakeSignal,
  batchWorkflowId,
  type BatchProgress,
  type BatchWorkflowInput,
} from '../../workflows/contracts.js';
import { cancelCall, FROM_NUMBER_NOT_FOUND, SCRIPT_NOT_FOUND, type CallServiceDeps } from './calls.js';
import { conflict, invalid, isUseCaseError, notFound, type UseCaseError } from './errors.js';
import type { ListContactsAddedListener } from './lists.js';

export type { BatchStatus };

export interface BatchServiceDeps extends CallServiceDeps {
  config: Pick<Config, 'DEFAULT_PHONE_REGION' | 'TEMPORAL_TASK_QUEUE' | 'BATCH_POLL_SECONDS' | 'BATCH_WINDOW_FACTOR'>;
}

export const BATCH_NOT_FOUND = 'Batch not found';
export const LIST_NOT_FOUND = 'List not found';

/** Knobs of the batch workflow a caller may set (tests, benchmarks); the rest comes from config. */
export interface BatchWorkflowOptions {
  pollMs?: number;
  maxTicksPerRun?: number;
  maxCallsPerRun?: number;
}

export interface CreateBatchInput {
  teamId: string;
  listId: string;
  scriptId: string;
  /** One of the team's numbers, in any accepted format. */
  fromNumber: string;
  /** Default now. */
  startAt?: Date;
  /** The batch's calling window: a window, null for none (any time), undefined for the team's. */
  callingWindow?: CallingWindow | null;
  /** The retry policy of its calls; undefined for the team's. */
  retryPolicy?: RetryPolicy | null;
  workflow?: BatchWorkflowOptions;
}

/**
 * Validates team, list, script and number (not found naming the missing one), writes the batch
 * row (status scheduled) and starts its workflow. If the workflow cannot be started the
 * batch ends failed (workflow_not_started) and the error is thrown.
 */
export async function createBatch(deps: BatchServiceDeps, input: CreateBatchInput): Promise<BatchRecord> {
  const fromNumber = normalizePhoneNumber(input.fromNumber, deps.config.DEFAULT_PHONE_REGION);
  if (!fromNumber) throw invalid('Invalid request: from_number is not a valid phone number');
  const startAt = input.startAt ?? new Date();
  if (Number.isNaN(startAt.getTime())) throw invalid('Invalid request: start_at must be an ISO 8601 date-time');
  if (input.callingWindow) {
    const problems = callingWindowProblems(input.callingWindow);
    if (problems.length) throw invalid(`Invalid request: ${problems.map(([field, message]) => `calling_window.${field} ${message}`).join('; ')}`);
  }
  if (input.retryPolicy) {
    const problems = retryPolicyProblems(input.retryPolicy);
    if (problems.length) throw invalid(`Invalid request: ${problems.map(([field, message]) => `retry_policy${field ? `.${field}` : ''} ${message}`).join('; ')}`);
  }
  if (!(await findTeam(deps.pool, input.teamId))) throw notFound('Team not found');
  const [list, script, number] = await Promise.all([
    findList(deps.pool, input.teamId, input.listId),
    findTeamScript(deps.pool, input.teamId, input.scriptId),
    findTeamPhoneNumber(deps.pool, input.teamId, fromNumber),
  ]);
  if (!list) throw notFound(LIST_NOT_FOUND);
  if (!script) throw notFound(SCRIPT_NOT_FOUND);
  if (!number) throw notFound(FROM_NUMBER_NOT_FOUND);
  const batch = await insertBatch(deps.pool, {
    teamId: input.teamId,
    listId: list.id,
    scriptId: script.id,
    fromNumber,
    startAt,
    callingWindow: input.callingWindow === undefined ? undefined : input.callingWindow && normalizeCallingWindow(input.callingWindow),
    retryPolicy: input.retryPolicy,
  });
  try {
    await startBatchWorkflow(deps, batch, input.workflow);
  } catch (err) {
    await transitionBatch(deps.pool, batch.id, ACTIVE_BATCH_STATUSES, 'failed', 'workflow_not_started');
    throw err;
  }
  return batch;
}

/**
 * Starts the batch's workflow unless one runs already. A batch whose workflow closed while
 * the batch was still active (terminated by hand) gets a new run: the batch's state is in
 * Postgres, so the new run carries on where the old one stopped.
 */
export async function startBatchWorkflow(deps: Pick<BatchServiceDeps, 'temporal' | 'config'>, batch: BatchRecord, options: BatchWorkflowOptions = {}): Promise<void> {
  const input: BatchWorkflowInput = {
    batchId: batch.id,
    teamId: batch.team_id,
    startAt: batch.start_at.toISOString(),
    pollMs: options.pollMs ?? Math.round(deps.config.BATCH_POLL_SECONDS * 1000),
    maxTicksPerRun: options.maxTicksPerRun,
    maxCallsPerRun: options.maxCallsPerRun,
  };
  await startWorkflowOnce(deps.temporal, BATCH_WORKFLOW_TYPE, {
    workflowId: batchWorkflowId(batch.id),
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    // One running workflow per batch; a new run only after the previous one closed.
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    typedSearchAttributes: [
      { key: TEAM_ID, value: batch.team_id },
      { key: BATCH_ID, value: batch.id },
      { key: BATCH_STATUS, value: batch.status },
    ],
  });
}

/** Tells the batch's workflow to look now (best effort: it also looks every poll interval). */
export async function wakeBatch(deps: Pick<BatchServiceDeps, 'temporal' | 'logger'>, batchId: string): Promise<void> {
  try {
    await deps.temporal.workflow.getHandle(batchWorkflowId(batchId)).signal(batchWakeSignal);
  } catch (err) {
    deps.logger?.debug({ err, batchId }, 'batch workflow not signalled');
  }
}

async function requireBatch(deps: Pick<BatchServiceDeps, 'pool'>, batchId: string): Promise<BatchRecord> {
  const batch = await findBatch(deps.pool, batchId);
  if (!batch) throw notFound(BATCH_NOT_FOUND);
  return batch;
}

function wrongState(action: string, status: string): UseCaseError {
  return conflict(`Batch cannot be ${action}: its status is ${status}`, { status });
}

/** scheduled or running → paused: no new calls go out; calls already handed out go on. */
export async function pauseBatch(deps: BatchServiceDeps, batchId: string): Promise<BatchRecord> {
  const result = await transitionBatch(deps.pool, batchId, ['scheduled', 'running'], 'paused');
  if (!result) throw notFound(BATCH_NOT_FOUND);
  if (!result.changed && result.batch.status !== 'paused') throw wrongState('paused', result.batch.status);
  await wakeBatch(deps, batchId);
  return result.batch;
}

/** paused → running (scheduled when the start time has not been reached yet). */
export async function resumeBatch(deps: BatchServiceDeps, batchId: string): Promise<BatchRecord> {
  const result = await transitionBatch(deps.pool, batchId, ['paused'], 'resumed');
  if (!result) throw notFound(BATCH_NOT_FOUND);
  if (!result.changed && result.batch.status !== 'running' && result.batch.status !== 'scheduled') throw wrongState('resumed', result.batch.status);
  await startBatchWorkflow(deps, result.batch);
  await wakeBatch(deps, batchId);
  return result.batch;
}

/**
 * scheduled, running or paused → cancelled: calls still waiting to start are cancelled;
 * calls in progress end normally. Cancelling a cancelled batch answers it unchanged.
 */
export async function cancelBatch(deps: BatchServiceDeps, batchId: string): Promise<BatchRecord> {
  const result = await transitionBatch(deps.pool, batchId, ACTIVE_BATCH_STATUSES, 'cancelled', 'cancelled');
  if (!result) throw notFound(BATCH_NOT_FOUND);
  if (!result.changed && result.batch.status !== 'cancelled') throw wrongState('cancelled', result.batch.status);
  await cancelWaitingCalls(deps, result.batch);
  await wakeBatch(deps, batchId);
  return result.batch;
}

/** Cancels the batch's calls that have not started; a call that started meanwhile goes on. */
export async function cancelWaitingCalls(deps: BatchServiceDeps, batch: BatchRecord, opts: { removedOnly?: boolean } = {}): Promise<number> {
  const callIds = await waitingCallsOfBatch(deps.pool, batch.id, opts);
  let cancelled = 0;
  for (const callId of callIds) {
    try {
      await cancelCall(deps, batch.team_id, callId);
      cancelled += 1;
    } catch (err) {
      // Conflict: it started meanwhile; not found cannot happen for a call the batch made.
      if (!isUseCaseError(err, 'conflict', 'not_found')) throw err;
    }
  }
  if (cancelled > 0) await withTransaction(deps.pool, (tx) => finishEndedCalls(tx, batch.id));
  return cancelled;
}

/** Progress counters from batch_counts, plus how many of the calling contacts are in a call now. */
export async function readProgress(deps: Pick<BatchServiceDeps, 'pool'>, batchId: string): Promise<BatchProgress> {
  const [counts, inProgress] = await Promise.all([batchCounts(deps.pool, batchId), countInProgressCalls(deps.pool, batchId)]);
  const done: Record<string, number> = {};
  for (const [bucket, n] of Object.entries(counts)) {
    if (bucket.startsWith('done:') && n > 0) done[bucket.slice('done:'.length)] = n;
  }
  const doneTotal = Object.values(done).reduce((a, b) => a + b, 0);
  const pending = counts.pending ?? 0;
  const calling = counts.calling ?? 0;
  const skipped = counts.skipped ?? 0;
  // Batches from before attempts were counted made one call per contact called.
  const attempts = counts.attempts ?? calling + doneTotal;
  return { total: pending + calling + skipped + doneTotal, pending, calling, in_progress: inProgress, skipped, skipped_dnc: counts.skipped_dnc ?? 0, done, done_total: doneTotal, attempts };
}

export interface BatchView {
  batch: BatchRecord;
  progress: BatchProgress;
}

/** The batch and its progress, after taking in the calls that ended since the last tick. */
export async function showBatch(deps: Pick<BatchServiceDeps, 'pool'>, batchId: string): Promise<BatchView> {
  const batch = await requireBatch(deps, batchId);
  await withTransaction(deps.pool, (tx) => finishEndedCalls(tx, batch.id));
  return { batch, progress: await readProgress(deps, batch.id) };
}

export async function listBatches(deps: Pick<BatchServiceDeps, 'pool'>, teamId: string, limit = 100): Promise<BatchRecord[]> {
  return listTeamBatches(deps.pool, teamId, limit);
}

/**
 * What the API tells about contacts added to a list: it wakes the list's active batches,
 * so they take the contacts in within moments instead of at their next poll (the poll
 * stays the safety net).
 */
export function wakeListBatches(deps: Pick<BatchServiceDeps, 'pool' | 'temporal' | 'logger'>): ListContactsAddedListener {
  return async (event) => {
    const batchIds = await findActiveBatchIdsOfList(deps.pool, event.teamId, event.listId);
    await Promise.all(batchIds.map((id) => wakeBatch(deps, id)));
  };
}
