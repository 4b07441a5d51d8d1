/**
 * Activities of the web session workflow (workflows/webSessionWorkflow.ts). Both are
 * idempotent: the call id is fixed by the workflow before the first attempt (scheduleCall
 * with that id creates one call, ever), and the row transitions are conditional updates.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { releaseSlot, transferSessionSlotToCall } from '../src/db/repositories/concurrencySlots.js';
import { findWebSessionById, markWebSessionExpired, markWebSessionUsed } from '../src/db/repositories/webSessions.js';
import { scheduleCall, wakeSlotWaiters } from '../src/services/calls.js';
import { NOT_FOUND_FAILURE, type WebSessionRedemption } from '../workflows/contracts.js';
import type { ActivityDeps } from './index.js';

export function createWebSessionActivities(deps: ActivityDeps) {
  return {
    /**
     * The redemption: creates the web call with the session's fixed script, contact and did
     * (type web, the same call workflow as phone calls), passes the session's slot to it and
     * marks the session used. The objects map was linked to the contact at minting.
     */
    async createWebSessionCall(input: { sessionId: string; callId: string }): Promise<WebSessionRedemption> {
      const session = await findWebSessionById(deps.pool, input.sessionId);
      if (!session) throw ApplicationFailure.nonRetryable(`web session ${input.sessionId} not found`, NOT_FOUND_FAILURE);
      if (session.status === 'used' && session.call_id) {
        return { callId: session.call_id, scriptId: session.script_id, contactId: session.contact_id };
      }
      // Refused when the script, contact or number went away since minting: a permanent
      // failure typed by its kind (createActivities).
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
        deps.logger.warn({ sessionId: input.sessionId, callId: input.callId }, 'web session slot was gone at redemption; the call runs without one');
      }
      const used = await markWebSessionUsed(deps.pool, input.sessionId, input.callId);
      return { callId: used?.call_id ?? input.callId, scriptId: session.script_id, contactId: session.contact_id };
    },

    /** minted → expired: frees the session's slot and wakes the team's waiting phone calls. */
    async expireWebSession(input: { sessionId: string; teamId: string }): Promise<void> {
      await markWebSessionExpired(deps.pool, input.sessionId);
      await releaseSlot(deps.pool, input.sessionId);
      await wakeSlotWaiters(deps, input.teamId);
    },
  };
}

export type WebSessionActivities = ReturnType<typeof createWebSessionActivities>;
