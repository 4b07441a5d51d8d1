/**
 * The dialing policy inside the call workflow (docs/calls.md, "Dialing policy"): what a
 * phone call waits for before it dials, in one order, and what its end schedules.
 *
 *   calling window ── durable timer until it opens (deferred in the slot line meanwhile)
 *   slot           ── the team ceiling (callWorkflow, the slot line passes over deferred calls)
 *   window again   ── a slot granted after the window closed is handed on, and the call waits again
 *   do-not-call    ── checked at dial time; a listed number ends the call failed / do_not_call
 *   dial token     ── carrier pacing per caller number (and team): a free one now, else the
 *                     dial activity waits for one and dials inside its slot
 *
 * The window arithmetic is pure (src/domain/callingWindows.ts, Intl time zones) and reads
 * only workflow time, so replay is deterministic.
 */
import { condition, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { DialingActivities, DialTokenResult } from '../activities/dialing.js';
import { nextWindowClosing, nextWindowOpening, type CallingWindow } from '../src/domain/callingWindows.js';
import { retryDelaySeconds } from '../src/domain/retryPolicy.js';
import { NOT_FOUND_FAILURE, type CallAdmission, type CallWorkflowInput } from './contracts.js';

// Row writes and lookups: short, retried until they succeed.
const rows = proxyLocalActivities<DialingActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

// The next attempt of a chain: a new call and its workflow, through the retry-call path.
const chains = proxyActivities<DialingActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

function windowOf(input: CallWorkflowInput): { window: CallingWindow; timeZone: string } | undefined {
  return input.callingWindow && input.timezone ? { window: input.callingWindow, timeZone: input.timezone } : undefined;
}

/**
 * Waits, durably, until the call's calling window is open, with the call deferred in the
 * slot line (progress waiting_for_window, dial_after at the opening) while it waits. True
 * once the window is open (at once for a call without a window); false when `cancelled()`
 * came first.
 */
export async function waitForCallingWindow(input: CallWorkflowInput, cancelled: () => boolean): Promise<boolean> {
  const w = windowOf(input);
  if (!w) return true;
  for (;;) {
    const now = Date.now();
    const opens = nextWindowOpening(now, w.window, w.timeZone);
    if (opens <= now) return true;
    await rows.deferCallToWindow({ callId: input.callId, dialAfter: new Date(opens).toISOString() });
    if (await condition(cancelled, opens - now)) return false;
  }
}

/** When the call may first be dialled: its scheduled time, or its window's first opening after it. */
export function dueAt(input: CallWorkflowInput): number {
  const scheduled = Date.parse(input.scheduledTime);
  const w = windowOf(input);
  return w ? Math.max(scheduled, nextWindowOpening(scheduled, w.window, w.timeZone)) : scheduled;
}

/** Milliseconds until the call's window closes (Infinity without a window, 0 when it is closed now). */
export function msUntilWindowCloses(input: CallWorkflowInput): number {
  const w = windowOf(input);
  if (!w) return Number.POSITIVE_INFINITY;
  const now = Date.now();
  return nextWindowClosing(now, w.window, w.timeZone) - now;
}

/**
 * The call's admission in one local activity (one marker naming each gate's answer): its
 * slot, then the do-not-call list, a free dial token and in-progress (src/services/callAdmission.ts).
 */
export async function admitDueCall(input: CallWorkflowInput): Promise<CallAdmission & { liveTaskQueue?: string }> {
  return rows.admitCall({ callId: input.callId, teamId: input.teamId, at: new Date(Date.now()).toISOString() });
}

/** The dial-time do-not-call check (a local activity: a marker in the history with its answer). */
export async function onDoNotCallList(input: CallWorkflowInput): Promise<boolean> {
  return (await rows.checkDoNotCall({ callId: input.callId })).listed;
}

/**
 * A free dial token of the call's number (carrier pacing), taken by a local activity in the
 * order the slot line granted the calls; `waiting` when there is none now (the call then
 * waits for one in its dial activity, placePacedCall).
 */
export async function tryTakeDialToken(input: CallWorkflowInput): Promise<DialTokenResult> {
  return rows.tryDialToken({ callId: input.callId });
}

/** Whether the call's retry policy asks for another attempt after this outcome (decided in the workflow, pure). */
export function retryDue(input: CallWorkflowInput, outcome: { status: string; endReason: string }): boolean {
  return input.type !== 'web' && retryDelaySeconds(input.retryPolicy, { ...outcome, attempt: input.attempt ?? 1 }) !== undefined;
}

/** Schedules the chain's next attempt (null when the do-not-call list or a stopped batch ends the chain). */
export async function scheduleNextAttempt(input: CallWorkflowInput, outcome: { status: string; endReason: string; endTime: string }): Promise<string | null> {
  return (await chains.scheduleNextAttempt({ callId: input.callId, ...outcome })).nextCallId;
}

/** The callee asked not to be called again: their number joins the do-not-call list (source call). */
export async function addCalleeToDoNotCall(callId: string, reason?: string): Promise<boolean> {
  return (await rows.addCalleeToDoNotCall({ callId, reason })).added;
}
