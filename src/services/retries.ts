/**
 * Retries by outcome (docs/calls.md, "Retries"): the next attempt of a call's chain, made by
 * the workflow of the call that ended, durably (an activity retried until it answers) and
 * through the path of retry-call (scheduleNextAttemptOf).
 */
import { findCallById } from '../db/repositories/calls.js';
import { isCallOfStoppedBatch } from '../db/repositories/batches.js';
import { nameBasedUuid } from '../domain/ids.js';
import { retryDelaySeconds } from '../domain/retryPolicy.js';
import { scheduleNextAttemptOf, type CallServiceDeps } from './calls.js';
import { ON_DO_NOT_CALL } from './doNotCall.js';
import { isUseCaseError, notFound } from './errors.js';

/** The id of the attempt that follows a call: derived, so a repeated request makes one call. */
export const nextAttemptCallId = (callId: string) => nameBasedUuid(`next-attempt:${callId}`);

/**
 * Schedules the attempt after `callId` when its retry policy asks for one after this
 * outcome; answers its id, or null when the chain ends here: no rule for the status, the
 * rule's attempts used up, a do-not-call outcome, the number on the list now, or the chain's
 * batch cancelled or failed. Idempotent.
 */
export async function scheduleRetryAttempt(
  deps: CallServiceDeps,
  outcome: { callId: string; status: string; endReason: string; endTime: string },
): Promise<string | null> {
  const call = await findCallById(deps.pool, outcome.callId);
  if (!call) throw notFound(`call ${outcome.callId} not found`);
  if (call.next_attempt_call_id) return call.next_attempt_call_id;
  const delay = retryDelaySeconds(call.retry_policy, { status: outcome.status, endReason: outcome.endReason, attempt: call.attempt });
  if (delay === undefined || call.type === 'web') return null;
  if (await isCallOfStoppedBatch(deps.pool, call.original_call_id ?? call.id)) return null;
  try {
    const next = await scheduleNextAttemptOf(deps, call, { callId: nextAttemptCallId(call.id), scheduledTime: new Date(Date.parse(outcome.endTime) + delay * 1000) });
    return next.callId;
  } catch (err) {
    // Retries stop at the do-not-call list.
    if (isUseCaseError(err, 'conflict') && err.message === ON_DO_NOT_CALL) return null;
    throw err;
  }
}
