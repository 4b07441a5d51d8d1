/**
 * One workflow per web session (id `web-session-<session_id>`), docs/web-calls.md:
 *
 *   minted ── the media edge redeems the token (Update redeemWebSession) ── used
 *          ── WEB_SESSION_TTL_MS after the start, durably ─────────────── expired
 *
 * The Update's validator admits a redemption only while the session is minted, and the
 * handler marks it used before its first await, so of any number of concurrent
 * redemptions exactly one is admitted: the others are rejected (already used), as is
 * every redemption after expiry. The admitted one creates the web call (an activity) and
 * answers its id. Expiry frees the session's concurrency slot.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { WebSessionActivities } from '../activities/webSessions.js';
import { CALL_ID } from '../src/temporal/searchAttributes.js';
import {
  NOT_FOUND_FAILURE,
  redeemWebSessionUpdate,
  webSessionStateQuery,
  WEB_SESSION_ALREADY_USED,
  WEB_SESSION_EXPIRED,
  type WebSessionRedemption,
  type WebSessionState,
  type WebSessionWorkflowInput,
  type WebSessionWorkflowResult,
} from './contracts.js';

// Row writes and the call's creation: short and idempotent (the call id is fixed before
// the first attempt). Bounded: the media edge is waiting on the answer of a redemption.
const acts = proxyActivities<WebSessionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 6, nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

// Expiry gives the slot back: retried until it succeeds.
const expiry = proxyActivities<WebSessionActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function webSessionWorkflow(input: WebSessionWorkflowInput): Promise<WebSessionWorkflowResult> {
  let state: WebSessionState = 'minted';
  let callId: string | null = null;
  // The deadline counts from the start of the workflow (minting), not from its first task.
  const deadline = workflowInfo().runStartTime.getTime() + input.ttlMs;

  setHandler(webSessionStateQuery, () => ({ sessionId: input.sessionId, state, callId }));

  setHandler(
    redeemWebSessionUpdate,
    async (): Promise<WebSessionRedemption> => {
      // Synchronously, before any await: a concurrent redemption's validator sees `used`.
      state = 'used';
      const newCallId = uuid4();
      try {
        const redemption = await acts.createWebSessionCall({ sessionId: input.sessionId, callId: newCallId });
        callId = redemption.callId;
        upsertSearchAttributes([{ key: CALL_ID, value: redemption.callId }]);
        return redemption;
      } catch (err) {
        // No call was created: the session stays redeemable until it expires.
        state = 'minted';
        throw err;
      }
    },
    {
      validator: () => {
        if (state === 'used') throw ApplicationFailure.nonRetryable('Session token has already been used', WEB_SESSION_ALREADY_USED);
        // Also by the clock: a redemption in the same task as the expiry timer is too late.
        if (state === 'expired' || Date.now() >= deadline) throw ApplicationFailure.nonRetryable('Session token has expired', WEB_SESSION_EXPIRED);
      },
    },
  );

  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining > 0) await condition(() => state !== 'minted', remaining);
    if (state === 'minted') break;
    // A redemption is running: it ends used, or (failed) minted again.
    await condition(allHandlersFinished);
    if (state === 'used') return { sessionId: input.sessionId, state: 'used', callId };
  }

  state = 'expired';
  await expiry.expireWebSession({ sessionId: input.sessionId, teamId: input.teamId });
  return { sessionId: input.sessionId, state: 'expired', callId: null };
}
