/**
 * Batches: call every contact of a list once with a script, through scheduleCall (the path
 * of create-phone-call), within the team's concurrency ceiling (docs/batches.md).
 *
 * The batch workflow `batch-<id>` drives a batch by calling advanceBatch over and over
 * (a "tick"); everything a tick decides is kept in Postgres, so the workflow's history
 * only holds ticks and timers, and a tick that runs twice changes nothing twice:
 *   1. calls that ended move their contacts from calling to done;
 *   2. a deleted list ends the batch (cancelled, list_deleted);
 *   3. intake: list members added since the last tick become pending contacts;
 *   4. calls still waiting for contacts that left the list are cancelled;
 *   5. while running: pending contacts get their call (the same call id for the same
 *      contact, always) until the batch has maxConcurrent × BATCH_WINDOW_FACTOR calls
 *      outstanding; contacts no longer on the list, or without a number, are skipped;
 *   6. nothing pending, nothing calling and the list read to its end: completed.
 */
import { createHash } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/client';
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
  intakeListMembers,
  isListDeleted,
  listTeamBatches,
  markContactsCalling,
  markContactsSkipped,
  nextPendingContacts,
  transitionBatch,
  waitingCallsOfBatch,
  type BatchRecord,
  type BatchStatus,
} from '../db/repositories/batches.js';
import { findList } from '../db/repositories/lists.js';
import { findTeamPhoneNumber } from '../db/repositories/phoneNumbers.js';
import { findTeamScript } from '../db/repositories/scripts.js';
import { findTeam } from '../db/repositories/teams.js';
import { normalizePhoneNumber } from '../domain/phone.js';
import { BATCH_ID, BATCH_STATUS, TEAM_ID } from '../temporal/searchAttributes.js';
import {
  BATCH_WORKFLOW_TYPE,
  batchWakeSignal,
  batchWorkflowId,
  type BatchProgress,
  type BatchWorkflowInput,
} from '../../workflows/contracts.js';
import { cancelCall, FROM_NUMBER_NOT_FOUND, SCRIPT_NOT_FOUND, scheduleCall, type CallServiceDeps } from './calls.js';
import { conflict, invalid, isUseCaseError, notFound, type UseCaseError } from './errors.js';
import { onListContactsAdded } from './lists.js';

export type { BatchStatus };

export interface BatchServiceDeps extends CallServiceDeps {
  config: Pick<Config, 'DEFAULT_PHONE_REGION' | 'TEMPORAL_TASK_QUEUE' | 'BATCH_POLL_SECONDS' | 'BATCH_WINDOW_FACTOR'>;
}

export const BATCH_NOT_FOUND = 'Batch not found';
export const LIST_NOT_FOUND = 'List not found';

/** List members read per intake statement, and statements per tick at most. */
const INTAKE_PAGE = 1000;
const INTAKE_PAGES_PER_TICK = 20;
/** scheduleCall requests in flight at once within one tick. */
const DISPATCH_PARALLELISM = 8;

// A fixed namespace for the call ids of batches (UUID v5, RFC 9562).
const BATCH_CALL_NAMESPACE = Buffer.from('6f0d5b3c8a4e4f1b9c2d7e8f9a0b1c2d', 'hex');

/**
 * The call id of a contact's call in a batch: a UUID v5 of (batch id, contact id), so every
 * attempt to schedule that call, in any tick, run or worker, names the same call.
 */
export function batchCallId(batchId: string, contactId: string): string {
  const hash = createHash('sha1').update(BATCH_CALL_NAMESPACE).update(`${batchId}:${contactId}`).digest();
  hash[6] = (hash[6] & 0x0f) | 0x50;
  hash[8] = (hash[8] & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const isActive = (status: BatchStatus) => ACTIVE_BATCH_STATUSES.includes(status);

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
  if (!(await findTeam(deps.pool, input.teamId))) throw notFound('Team not found');
  const [list, script, number] = await Promise.all([
    findList(deps.pool, input.teamId, input.listId),
    findTeamScript(deps.pool, input.teamId, input.scriptId),
    findTeamPhoneNumber(deps.pool, input.teamId, fromNumber),
  ]);
  if (!list) throw notFound(LIST_NOT_FOUND);
  if (!script) throw notFound(SCRIPT_NOT_FOUND);
  if (!number) throw notFound(FROM_NUMBER_NOT_FOUND);
  const batch = await insertBatch(deps.pool, { teamId: input.teamId, listId: list.id, scriptId: script.id, fromNumber, startAt });
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
  try {
    await deps.temporal.workflow.start(BATCH_WORKFLOW_TYPE, {
      workflowId: batchWorkflowId(batch.id),
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      args: [input],
      // One running workflow per batch; a new run only after the previous one closed.
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      typedSearchAttributes: [
        { key: TEAM_ID, value: batch.team_id },
        { key: BATCH_ID, value: batch.id },
        { key: BATCH_STATUS, value: batch.status },
      ],
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return;
    throw err;
  }
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
async function cancelWaitingCalls(deps: BatchServiceDeps, batch: BatchRecord, opts: { removedOnly?: boolean } = {}): Promise<number> {
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
async function readProgress(deps: Pick<BatchServiceDeps, 'pool'>, batchId: string): Promise<BatchProgress> {
  const [counts, inProgress] = await Promise.all([batchCounts(deps.pool, batchId), countInProgressCalls(deps.pool, batchId)]);
  const done: Record<string, number> = {};
  for (const [bucket, n] of Object.entries(counts)) {
    if (bucket.startsWith('done:') && n > 0) done[bucket.slice('done:'.length)] = n;
  }
  const doneTotal = Object.values(done).reduce((a, b) => a + b, 0);
  const pending = counts.pending ?? 0;
  const calling = counts.calling ?? 0;
  const skipped = counts.skipped ?? 0;
  return { total: pending + calling + skipped + doneTotal, pending, calling, in_progress: inProgress, skipped, done, done_total: doneTotal };
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

export interface BatchTick {
  status: BatchStatus;
  endReason: string | null;
  /** The batch has ended: its workflow stops. */
  ended: boolean;
  progress: BatchProgress;
  /** Calls handed to the call engine by this tick. */
  dispatched: number;
}

/**
 * One tick of the batch (see the top of this file). `start`: the start time has passed, so
 * a scheduled batch becomes running. Idempotent: running it again, or concurrently, never
 * schedules a second call for a contact and keeps the counters exact.
 */
export async function advanceBatch(deps: BatchServiceDeps, batchId: string, opts: { start: boolean }): Promise<BatchTick> {
  let batch = await findBatch(deps.pool, batchId);
  if (!batch) throw notFound(`batch ${batchId} not found`);
  await withTransaction(deps.pool, (tx) => finishEndedCalls(tx, batch!.id));

  if (isActive(batch.status) && (await isListDeleted(deps.pool, batch.list_id))) {
    batch = (await transitionBatch(deps.pool, batch.id, ACTIVE_BATCH_STATUSES, 'cancelled', 'list_deleted'))!.batch;
  }
  if (!isActive(batch.status)) return endTick(deps, batch);

  let caughtUp = false;
  for (let page = 0; page < INTAKE_PAGES_PER_TICK && !caughtUp; page += 1) {
    caughtUp = (await withTransaction(deps.pool, (tx) => intakeListMembers(tx, batch!.id, INTAKE_PAGE, (contactId) => batchCallId(batch!.id, contactId)))).caughtUp;
  }
  await cancelWaitingCalls(deps, batch, { removedOnly: true });

  if (opts.start && batch.status === 'scheduled') batch = (await transitionBatch(deps.pool, batch.id, ['scheduled'], 'running'))!.batch;
  let dispatched = 0;
  if (batch.status === 'running') {
    const outcome = await dispatch(deps, batch);
    dispatched = outcome.dispatched;
    if (outcome.failure) {
      const failed = (await transitionBatch(deps.pool, batch.id, ACTIVE_BATCH_STATUSES, 'failed', outcome.failure))!.batch;
      return endTick(deps, failed, dispatched);
    }
    const progress = await readProgress(deps, batch.id);
    if (caughtUp && progress.pending === 0 && progress.calling === 0) {
      batch = (await transitionBatch(deps.pool, batch.id, ['running'], 'completed', 'all_called'))!.batch;
      if (!isActive(batch.status)) return endTick(deps, batch, dispatched);
    }
    return { status: batch.status, endReason: batch.end_reason, ended: false, progress, dispatched };
  }
  return { status: batch.status, endReason: batch.end_reason, ended: false, progress: await readProgress(deps, batch.id), dispatched };
}

async function endTick(deps: BatchServiceDeps, batch: BatchRecord, dispatched = 0): Promise<BatchTick> {
  if (batch.status === 'cancelled' || batch.status === 'failed') await cancelWaitingCalls(deps, batch);
  return { status: batch.status, endReason: batch.end_reason, ended: true, progress: await readProgress(deps, batch.id), dispatched };
}

/**
 * Why scheduleCall found nothing for a contact: the batch's script or number is gone (the
 * batch ends with that reason), or else the contact is (it is skipped).
 */
async function missingReference(deps: BatchServiceDeps, batch: BatchRecord): Promise<string | undefined> {
  const [script, number] = await Promise.all([
    findTeamScript(deps.pool, batch.team_id, batch.script_id),
    findTeamPhoneNumber(deps.pool, batch.team_id, batch.from_number),
  ]);
  if (!script) return 'script_not_found';
  if (!number) return 'from_number_not_found';
  return undefined;
}

/**
 * Hands pending contacts to the call engine until the batch has its window of calls
 * outstanding. A call is marked calling only after scheduleCall returned, so a crash in
 * between leaves the contact pending and the next tick schedules the same call id again
 * (scheduleCall answers the existing call).
 */
async function dispatch(deps: BatchServiceDeps, batch: BatchRecord): Promise<{ dispatched: number; failure?: string }> {
  const team = await findTeam(deps.pool, batch.team_id);
  const window = (team?.max_concurrent ?? 1) * deps.config.BATCH_WINDOW_FACTOR;
  let dispatched = 0;
  // Each round fills the window; another round runs only when skipped contacts left room.
  for (let round = 0; round < 20; round += 1) {
    const calling = (await batchCounts(deps.pool, batch.id)).calling ?? 0;
    const room = window - calling;
    const next = await nextPendingContacts(deps.pool, batch.id, batch.list_id, room);
    if (next.length === 0) break;
    const removed = next.filter((c) => !c.member).map((c) => c.contact_id);
    const noPhone = next.filter((c) => c.member && !c.has_phone).map((c) => c.contact_id);
    const callable = next.filter((c) => c.member && c.has_phone);
    if (removed.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, removed, 'removed_from_list'));
    if (noPhone.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, noPhone, 'no_phone_number'));

    const scheduled: string[] = [];
    const vanished: string[] = [];
    let failure: string | undefined;
    let unexpected: unknown;
    for (let i = 0; i < callable.length; i += DISPATCH_PARALLELISM) {
      const chunk = callable.slice(i, i + DISPATCH_PARALLELISM);
      const results = await Promise.allSettled(
        chunk.map((c) =>
          scheduleCall(deps, {
            teamId: batch.team_id,
            fromNumber: batch.from_number,
            scriptId: batch.script_id,
            contact: { id: c.contact_id },
            callId: c.call_id,
          }),
        ),
      );
      const missing = results.some((r) => r.status === 'rejected' && isUseCaseError(r.reason, 'not_found')) ? await missingReference(deps, batch) : undefined;
      results.forEach((r, j) => {
        if (r.status === 'fulfilled') scheduled.push(chunk[j].contact_id);
        else if (missing && isUseCaseError(r.reason, 'not_found')) failure ??= missing;
        else if (isUseCaseError(r.reason, 'not_found', 'invalid')) vanished.push(chunk[j].contact_id);
        else unexpected ??= r.reason;
      });
      if (failure || unexpected) break;
    }
    dispatched += await withTransaction(deps.pool, (tx) => markContactsCalling(tx, batch.id, scheduled));
    if (vanished.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, vanished, 'no_phone_number'));
    if (failure) return { dispatched, failure };
    if (unexpected) throw unexpected;
    if (removed.length + noPhone.length + vanished.length === 0) break;
  }
  return { dispatched };
}

const installedFor = new WeakSet<object>();

/**
 * Wakes the active batches of a list whenever contacts are added to it through the lists
 * service (onListContactsAdded), so they take them in within moments instead of at their
 * next poll. Once per Temporal client and process; the poll stays the safety net.
 */
export function installBatchIntakeNotifier(deps: Pick<BatchServiceDeps, 'pool' | 'temporal' | 'logger'>): void {
  if (installedFor.has(deps.temporal)) return;
  installedFor.add(deps.temporal);
  onListContactsAdded(async (event) => {
    const batchIds = await findActiveBatchIdsOfList(deps.pool, event.teamId, event.listId);
    await Promise.all(batchIds.map((id) => wakeBatch(deps, id)));
  });
}
