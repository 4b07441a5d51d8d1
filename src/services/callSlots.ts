/**
 * The slot dispatcher: the one place where a phone call is granted a slot under its team's
 * ceiling (docs/calls.md, "The concurrency ceiling"). Postgres keeps the line and decides
 * every grant under the team's lock (src/db/repositories/concurrencySlots.ts); this module
 * asks, releases, and wakes exactly the calls a grant names, each with one `slotGranted`
 * signal. A freed slot therefore costs one grant and at most one signal, however many calls
 * wait.
 *
 * Whatever else must hold before a call may start (a calling window, a dial token) belongs
 * here too, next to the slot, so that one place decides when a call starts.
 */
import type { Client } from '@temporalio/client';
import type { Pool } from '../db/pool.js';
import {
  admissionLineTeams,
  admitFromLine,
  grantFreeSlots as grantFreeSlotRows,
  grantsNotTaken,
  releaseSlot as releaseSlotRow,
  releaseSlotAndGrant as releaseSlotAndGrantRow,
  requestCallSlot as requestCallSlotRow,
  teamsWithWaitingCalls,
  type CallSlotRequest,
} from '../db/repositories/concurrencySlots.js';
import type { Logger } from '../logging/logger.js';
import { callWorkflowId, slotGrantedSignal } from '../../workflows/contracts.js';

export interface CallSlotDeps {
  pool: Pool;
  temporal: Client;
  logger?: Logger;
  /**
   * Whether a slot freed now stays free for the admission pacer instead of going straight to
   * the next call in line: true while this worker's live calls run late (liveCallPace), so a
   * campaign's calls ending do not start its next ones faster than the live calls allow.
   * Unset: every freed slot is handed on at once.
   */
  holdFreedSlots?: () => boolean;
}

/** Tells each call's workflow that its slot is granted. Best effort: the reconciler re-sends what is lost. */
async function wake(deps: CallSlotDeps, callIds: string[]): Promise<void> {
  await Promise.all(
    callIds.map((id) =>
      deps.temporal.workflow
        .getHandle(callWorkflowId(id))
        .signal(slotGrantedSignal)
        .catch((err) => deps.logger?.debug({ err, callId: id }, 'granted call not signalled')),
    ),
  );
}

/**
 * A due phone call asks for its slot: granted, waiting (a release will grant it and wake
 * it), or not_scheduled (cancelled meanwhile; a slot it held is given back). Safe to repeat.
 */
export async function requestCallSlot(deps: CallSlotDeps, teamId: string, callId: string): Promise<CallSlotRequest> {
  const request = await requestCallSlotRow(deps.pool, teamId, callId);
  await wake(deps, request.woken);
  return request;
}

/**
 * Frees a slot (a call's or a web session's) and hands it straight to the next call in line,
 * waking that call, unless `deps.holdFreedSlots` says to leave it to the admission pacer. A
 * no-op for a holder without a slot.
 */
export async function releaseSlotAndGrant(deps: CallSlotDeps, holderId: string): Promise<void> {
  if (deps.holdFreedSlots?.()) {
    await releaseSlotRow(deps.pool, holderId);
    return;
  }
  const { woken } = await releaseSlotAndGrantRow(deps.pool, holderId);
  await wake(deps, woken);
}

/** Hands the team's free slots to its line (after a cancel, or when slots were freed without a grant). */
export async function grantFreeSlots(deps: CallSlotDeps, teamId: string): Promise<number> {
  const woken = await grantFreeSlotRows(deps.pool, teamId);
  await wake(deps, woken);
  return woken.length;
}

/**
 * The admission pacer's step (src/services/admissionPacer.ts): hands at most `limit` free
 * slots to the due calls in line, the team whose head has waited longest first, and wakes
 * the granted calls whose workflow sleeps until its grant. The calls granted, in order.
 * `teams`: the line's teams as admissionLineTeams found them just before (else asked here).
 */
export async function admitDueCalls(deps: CallSlotDeps, limit: number, teams?: string[]): Promise<string[]> {
  const granted: string[] = [];
  if (limit <= 0) return granted;
  for (const teamId of teams ?? (await admissionLineTeams(deps.pool, limit))) {
    const admitted = await admitFromLine(deps.pool, teamId, limit - granted.length);
    granted.push(...admitted.granted);
    await wake(deps, admitted.woken);
    if (granted.length >= limit) break;
  }
  return granted;
}

export interface SlotRepairReport {
  /** Waiting calls granted a slot that had stayed free. */
  granted: number;
  /** Granted calls woken again because they had not taken their slot. */
  rewoken: number;
}

/**
 * The safety net behind the single wake-up (run by the reconciler): teams with waiting calls
 * hand out any free slot (a ceiling raised, a dead slot reclaimed), and calls granted more
 * than `rewakeAfterMs` ago that still wait are signalled again.
 */
export async function repairSlotGrants(deps: CallSlotDeps, opts: { rewakeAfterMs: number; limit?: number }): Promise<SlotRepairReport> {
  const report: SlotRepairReport = { granted: 0, rewoken: 0 };
  for (const teamId of await teamsWithWaitingCalls(deps.pool)) report.granted += await grantFreeSlots(deps, teamId);
  const stale = await grantsNotTaken(deps.pool, opts.rewakeAfterMs, opts.limit ?? 500);
  await wake(deps, stale);
  report.rewoken = stale.length;
  return report;
}
