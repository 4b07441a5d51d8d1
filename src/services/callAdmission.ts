/**
 * Admission of a due phone call (docs/calls.md, "Dialing policy"): in one step, the call
 * asks for its slot and, once it holds one, passes the dial-time do-not-call check, takes a
 * free dial token if there is one, and becomes in-progress. The call workflow runs it as one
 * local activity (`admitCall`), so a call that finds everything free starts in one marker
 * instead of four, and its result names each gate it passed.
 *
 * Safe to repeat: the slot request answers `granted` for a call that holds its slot, and a
 * call a previous attempt already started answers `started` (without a dial token: its dial
 * waits for a fresh one, so a repeat never dials beyond the rate).
 */
import type { DialPacer } from '../pacing/dialPacer.js';
import { findCallById, markCallInProgress, type CallRecord } from '../db/repositories/calls.js';
import { findTeamDialingPolicy } from '../db/repositories/dialingPolicies.js';
import { isOnDoNotCall } from '../db/repositories/doNotCall.js';
import type { CallProgress } from '../domain/calls.js';
import { releaseSlotAndGrant, requestCallSlot, type CallSlotDeps } from './callSlots.js';
import { notFound } from './errors.js';
import { callStartLateness } from '../metrics/callMetrics.js';
import { callEvent, withWebhookEvents, type WebhookDispatchDeps } from './webhookEvents.js';
import type { CallAdmission } from '../../workflows/contracts.js';

export type CallAdmissionDeps = CallSlotDeps & WebhookDispatchDeps & { dialPacer: DialPacer };

/**
 * scheduled → in-progress with `actualTime` and `progress`, recording `call.started` in the
 * same transaction (its event id makes a repeat record it once); the row afterwards.
 */
export async function markCallStarted(deps: WebhookDispatchDeps, callId: string, actualTime: Date, progress: CallProgress): Promise<CallRecord> {
  const call = await withWebhookEvents(deps, async (tx) => {
    const row = await markCallInProgress(tx, callId, actualTime, progress);
    return { result: row, events: row?.status === 'in-progress' ? [callEvent('call.started', row)] : [] };
  });
  if (!call) throw notFound(`call ${callId} not found`);
  // This start's own write (an activity retried after a lost answer writes nothing new, yet counts again: rare).
  if (call.status === 'in-progress' && call.actual_time?.getTime() === actualTime.getTime()) {
    callStartLateness.observe(Math.max(0, actualTime.getTime() - call.scheduled_time.getTime()) / 1000);
  }
  return call;
}

/**
 * Slot, do-not-call list, dial token, in-progress: the gates of a due phone call, in that
 * order. `now` is the time in-progress is stamped with: the call workflow's clock, which runs
 * on while the activity does (and skips ahead in time-skipping tests).
 */
export async function admitCall(deps: CallAdmissionDeps, teamId: string, callId: string, now: () => Date): Promise<CallAdmission> {
  const slot = await requestCallSlot(deps, teamId, callId);
  if (slot.outcome === 'waiting') return { outcome: 'waiting' };
  if (slot.outcome === 'not_scheduled') return { outcome: 'not_scheduled', status: slot.status };
  const call = await findCallById(deps.pool, callId);
  if (!call) throw notFound(`call ${callId} not found`);
  if (call.status === 'in-progress') {
    // Started by an earlier attempt whose answer was lost: its token is unknown, so take a fresh one.
    return { outcome: 'started', actualTime: (call.actual_time ?? now()).toISOString(), waitForDialToken: true };
  }
  if (call.status !== 'scheduled') {
    await releaseSlotAndGrant(deps, callId);
    return { outcome: 'not_scheduled', status: call.status };
  }
  // Checked at dial time: a number listed since the call was scheduled is never dialled.
  if (call.to_number && (await isOnDoNotCall(deps.pool, call.team_id, call.to_number))) return { outcome: 'do_not_call', phoneNumber: call.to_number };
  let dialTokenAt: string | undefined;
  if (call.from_number) {
    const policy = await findTeamDialingPolicy(deps.pool, call.team_id);
    const token = await deps.dialPacer.tryTake({ fromNumber: call.from_number, teamId: call.team_id, teamRate: policy.dial_rate });
    if (token.taken) dialTokenAt = new Date(token.at).toISOString();
  } else {
    dialTokenAt = now().toISOString();
  }
  // Timed after the grant, so no two calls' [actual_time, end_time) overlap beyond the ceiling.
  const started = await markCallStarted(deps, callId, now(), dialTokenAt ? 'dialling' : 'waiting_for_dial_slot');
  if (started.status !== 'in-progress') {
    await releaseSlotAndGrant(deps, callId);
    return { outcome: 'not_scheduled', status: started.status };
  }
  return { outcome: 'started', actualTime: started.actual_time!.toISOString(), dialTokenAt, waitForDialToken: !dialTokenAt };
}
