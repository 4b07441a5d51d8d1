/**
 * The worker's side of a web session (docs/web-calls.md), run by the activities of the
 * session workflow: the redemption that creates the web call, and the expiry. Both are
 * idempotent: the call id is fixed by the workflow before the first attempt (scheduleCall
 * with that id creates one call, ever), and the row transitions are conditional updates.
 */
import { transferSessionSlotToCall } from '../db/repositories/concurrencySlots.js';
import { findWebSessionById, markWebSessionExpired, markWebSessionUsed } from '../db/repositories/webSessions.js';
import type { WebSessionRedemption } from '../../workflows/contracts.js';
import { releaseSlotAndGrant } from './callSlots.js';
import { scheduleCall, type CallServiceDeps } from './calls.js';
import { notFound } from './errors.js';
import { webSessionEvent, withWebhookEvents } from './webhookEvents.js';

/**
 * The redemption: creates the web call with the session's fixed script, contact and did
 * (type web, the same call workflow as phone calls), passes the session's slot to it and
 * marks the session used. The objects map was linked to the contact at minting. Refused
 * (by scheduleCall) when the script, contact or number went away since minting.
 */
export async function createWebSessionCall(deps: CallServiceDeps, input: { sessionId: string; callId: string }): Promise<WebSessionRedemption> {
  const session = await findWebSessionById(deps.pool, input.sessionId);
  if (!session) throw notFound(`web session ${input.sessionId} not found`);
  if (session.status === 'used' && session.call_id) {
    return { callId: session.call_id, scriptId: session.script_id, contactId: session.contact_id };
  }
  await scheduleCall(deps, {
    teamId: session.team_id,
    fromNumber: session.did,
    scriptId: session.script_id,
    contact: { id: session.contact_id },
    type: 'web',
    callId: input.callId,
    participantIdentity: session.participant_identity ?? undefined,
  });
  if (!(await transferSessionSlotToCall(deps.pool, input.sessionId, input.callId))) {
    // Only when the redemption outlived the slot's grace period (docs/web-calls.md).
    deps.logger?.warn({ sessionId: input.sessionId, callId: input.callId }, 'web session slot was gone at redemption; the call runs without one');
  }
  const used = await withWebhookEvents(deps, async (tx) => {
    const row = await markWebSessionUsed(tx, input.sessionId, input.callId);
    return { result: row, events: row?.status === 'used' ? [webSessionEvent('web_session.redeemed', row)] : [] };
  });
  return { callId: used?.call_id ?? input.callId, scriptId: session.script_id, contactId: session.contact_id };
}

/** minted → expired: frees the session's slot and wakes the team's waiting phone calls. */
export async function expireWebSession(deps: CallServiceDeps, input: { sessionId: string; teamId: string }): Promise<void> {
  await withWebhookEvents(deps, async (tx) => {
    const expired = await markWebSessionExpired(tx, input.sessionId);
    return { result: undefined, events: expired ? [webSessionEvent('web_session.expired', expired)] : [] };
  });
  await releaseSlotAndGrant(deps, input.sessionId);
}
