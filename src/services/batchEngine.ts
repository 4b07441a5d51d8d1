/**
 * The batch engine, run by the worker: the batch workflow `batch-<id>` drives a batch by
 * calling advanceBatch over and over (a "tick"); everything a tick decides is kept in
 * Postgres, so the workflow's history only holds ticks and timers, and a tick that runs
 * twice changes nothing twice (docs/batches.md):
 *   1. calls that ended move their contacts from calling to done;
 *   2. a deleted list ends the batch (cancelled, list_deleted);
 *   3. intake: list members added since the last tick become pending contacts;
 *   4. calls still waiting for contacts that left the list are cancelled;
 *   5. while running: pending contacts get their call (the same call id for the same
 *      contact, always) until the batch has maxConcurrent × BATCH_WINDOW_FACTOR calls
 *      outstanding; contacts no longer on the list, without a number or on the do-not-call
 *      list are skipped; contacts whose calling window is closed now wait, pending, for a
 *      later tick (their call would only wait in line);
 *   6. nothing pending, nothing calling and the list read to its end: completed.
 */
import { withTransaction } from '../db/pool.js';
import {
  ACTIVE_BATCH_STATUSES,
  batchCounts,
  findBatch,
  finishEndedCalls,
  intakeListMembers,
  isListDeleted,
  markContactsCalling,
  markContactsSkipped,
  nextPendingContacts,
  transitionBatch,
  type BatchRecord,
  type BatchStatus,
} from '../db/repositories/batches.js';
import { findTeamDialingPolicy } from '../db/repositories/dialingPolicies.js';
import { numbersOnDoNotCall } from '../db/repositories/doNotCall.js';
import { findTeamPhoneNumber } from '../db/repositories/phoneNumbers.js';
import { findTeamScript } from '../db/repositories/scripts.js';
import { findTeam } from '../db/repositories/teams.js';
import { isWindowOpen } from '../domain/callingWindows.js';
import { nameBasedUuid } from '../domain/ids.js';
import type { BatchProgress } from '../../workflows/contracts.js';
import { cancelWaitingCalls, readProgress, type BatchServiceDeps } from './batches.js';
import { scheduleCall } from './calls.js';
import { resolveTimeZone } from './dialingPolicy.js';
import { ON_DO_NOT_CALL } from './doNotCall.js';
import { isUseCaseError, notFound } from './errors.js';
import { batchCompletedEvent, withWebhookEvents } from './webhookEvents.js';

/** List members read per intake statement, and statements per tick at most. */
const INTAKE_PAGE = 1000;
const INTAKE_PAGES_PER_TICK = 20;
/** scheduleCall requests in flight at once within one tick. */
const DISPATCH_PARALLELISM = 8;
/** Pending contacts a tick looks at, at most, to find ones whose calling window is open. */
const MAX_SCAN_PER_TICK = 2000;

// A fixed namespace for the call ids of batches (UUID v5, RFC 9562).
const BATCH_CALL_NAMESPACE = Buffer.from('6f0d5b3c8a4e4f1b9c2d7e8f9a0b1c2d', 'hex');

/**
 * The call id of a contact's call in a batch: a UUID v5 of (batch id, contact id), so every
 * attempt to schedule that call, in any tick, run or worker, names the same call.
 */
export const batchCallId = (batchId: string, contactId: string): string => nameBasedUuid(`${batchId}:${contactId}`, BATCH_CALL_NAMESPACE);

const isActive = (status: BatchStatus) => ACTIVE_BATCH_STATUSES.includes(status);

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
      // batch.completed is recorded with the change; nothing is pending or calling, so the progress read above is final.
      batch = await withWebhookEvents(deps, async (tx) => {
        const completed = (await transitionBatch(tx, batch!.id, ['running'], 'completed', 'all_called'))!;
        return { result: completed.batch, events: completed.changed ? [batchCompletedEvent(completed.batch, progress)] : [] };
      });
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
  const [team, policy] = await Promise.all([findTeam(deps.pool, batch.team_id), findTeamDialingPolicy(deps.pool, batch.team_id)]);
  const window = (team?.max_concurrent ?? 1) * deps.config.BATCH_WINDOW_FACTOR;
  // The batch's own calling window overrides the team's; its retry policy, when set, too.
  const callingWindow = batch.calling_window_set ? batch.calling_window : policy.calling_window;
  const now = Date.now();
  let dispatched = 0;
  let afterSeq = -1;
  let scanned = 0;
  // Each round fills the window; another round runs while skipped or waiting contacts left room.
  for (let round = 0; round < 50 && scanned < MAX_SCAN_PER_TICK; round += 1) {
    const calling = (await batchCounts(deps.pool, batch.id)).calling ?? 0;
    const room = window - calling;
    if (room <= 0) break;
    const next = await nextPendingContacts(deps.pool, batch.id, batch.list_id, Math.min(Math.max(room, 100), MAX_SCAN_PER_TICK - scanned), afterSeq);
    if (next.length === 0) break;
    scanned += next.length;
    afterSeq = next[next.length - 1].seq;
    const removed = next.filter((c) => !c.member).map((c) => c.contact_id);
    const noPhone = next.filter((c) => c.member && !c.has_phone).map((c) => c.contact_id);
    const withPhone = next.filter((c) => c.member && c.has_phone);
    const listed = await numbersOnDoNotCall(deps.pool, batch.team_id, withPhone.map((c) => c.phone_number!));
    const onList = withPhone.filter((c) => listed.has(c.phone_number!)).map((c) => c.contact_id);
    const callable = withPhone
      .filter((c) => !listed.has(c.phone_number!))
      .filter((c) => !callingWindow || isWindowOpen(now, callingWindow, resolveTimeZone(c, policy)))
      .slice(0, room);
    if (removed.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, removed, 'removed_from_list'));
    if (noPhone.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, noPhone, 'no_phone_number'));
    if (onList.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, onList, 'do_not_call'));

    const scheduled: string[] = [];
    const vanished: string[] = [];
    const listedSince: string[] = [];
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
            callingWindow,
            retryPolicy: batch.retry_policy ?? undefined,
          }),
        ),
      );
      const missing = results.some((r) => r.status === 'rejected' && isUseCaseError(r.reason, 'not_found')) ? await missingReference(deps, batch) : undefined;
      results.forEach((r, j) => {
        if (r.status === 'fulfilled') scheduled.push(chunk[j].contact_id);
        else if (missing && isUseCaseError(r.reason, 'not_found')) failure ??= missing;
        else if (isUseCaseError(r.reason, 'conflict') && r.reason.message === ON_DO_NOT_CALL) listedSince.push(chunk[j].contact_id);
        else if (isUseCaseError(r.reason, 'not_found', 'invalid')) vanished.push(chunk[j].contact_id);
        else unexpected ??= r.reason;
      });
      if (failure || unexpected) break;
    }
    dispatched += await withTransaction(deps.pool, (tx) => markContactsCalling(tx, batch.id, scheduled));
    if (vanished.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, vanished, 'no_phone_number'));
    if (listedSince.length) await withTransaction(deps.pool, (tx) => markContactsSkipped(tx, batch.id, listedSince, 'do_not_call'));
    if (failure) return { dispatched, failure };
    if (unexpected) throw unexpected;
  }
  return { dispatched };
}
