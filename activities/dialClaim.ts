// One dial per call, whatever fails (docs/reliability.md, "One dial per call"): before the voice
// provider is asked to dial, the attempt claims the call's one dial (the phone_dial_claims
// row the SIP trunk's edges claim too), and the provider's answer is written to the claim
// as soon as it comes. The claim is the workflow run's: a retried attempt of the same run
// (its local activity timed out under load after it claimed) finds its own claim and goes
// on with the answer, without dialling again. An attempt of another run, or a retry that
// finds the run's claim without an answer (the worker died between the provider's dial and
// writing it: the dial's outcome is lost), does not dial: it fails the call (provider_error).
import { createHash, randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Queryable } from '../src/db/pool.js';
import { claimPhoneDial, findPhoneDialAnswer, recordPhoneDialAnswer } from '../src/db/repositories/phoneDialClaims.js';
import type { PlacedCall } from '../src/telephony/provider.js';

/** The non-retryable failure of a dial attempt that found the call's dial claimed already. */
export const DIAL_ALREADY_CLAIMED_FAILURE = 'DialAlreadyClaimed';

/**
 * The claim id of the running dial attempt: the same for every attempt of one workflow run
 * (a uuid derived from its workflow and run ids), a fresh one outside an activity.
 */
export function dialClaimId(): string {
  let run: { workflowId: string; runId: string } | undefined;
  try {
    run = Context.current().info.workflowExecution;
  } catch {
    // Outside an activity (a direct call): a claim of its own.
  }
  if (!run) return randomUUID();
  const hex = createHash('sha256').update(`dial:${run.workflowId}:${run.runId}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${((parseInt(hex[16], 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function alreadyClaimed(callId: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `call ${callId} is not dialled again: an earlier attempt claimed its dial, or it is no longer in progress`,
    DIAL_ALREADY_CLAIMED_FAILURE,
  );
}

/**
 * The provider's answer when `claimId` already holds `callId`'s dial and the answer was
 * written (a retried attempt: go on with it, no second dial); undefined when no claim is
 * held yet. Throws DialAlreadyClaimed when another claim holds it, or this one without an
 * answer (its dial may have gone out; its outcome is lost).
 */
export async function priorDialAnswer(db: Queryable, callId: string, claimId: string, providerName: string): Promise<PlacedCall | undefined> {
  if (providerName === 'sip') return undefined;
  const found = await findPhoneDialAnswer(db, callId, claimId);
  if (found.kind === 'answered') return found.answer as PlacedCall;
  if (found.kind === 'unanswered') throw alreadyClaimed(callId);
  return undefined;
}

/**
 * Claims `callId`'s dial for `claimId`, for a provider that dials from the worker; throws the
 * non-retryable DialAlreadyClaimed when another claim took it or the call is no longer in
 * progress (cancelled meanwhile). The SIP trunk is claimed by the edge that sends the INVITE
 * instead (its provider only plans the dial).
 */
export async function claimProviderDial(db: Queryable, callId: string, providerName: string, claimId: string = randomUUID()): Promise<void> {
  if (providerName === 'sip') return;
  // `held`: another attempt of this run claimed it meanwhile (its dial may be out): no second dial.
  if ((await claimPhoneDial(db, callId, claimId, `provider:${providerName}`)) !== 'taken') throw alreadyClaimed(callId);
}

/** Writes the provider's answer to the claimed dial, for a retried attempt of the same run. */
export async function recordProviderDialAnswer(db: Queryable, callId: string, providerName: string, claimId: string, answer: PlacedCall): Promise<void> {
  if (providerName === 'sip') return;
  await recordPhoneDialAnswer(db, callId, claimId, answer);
}
