// One dial per call, whatever fails (docs/reliability.md, "One dial per call"): before the voice
// provider is asked to dial, the attempt claims the call's one dial (the phone_dial_claims
// row the SIP trunk's edges claim too). A worker that dies between the provider's dial and
// the activity's completion leaves the claim taken, so the retried attempt on another worker
// does not dial again: it fails the call (provider_error) instead.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { Queryable } from '../src/db/pool.js';
import { claimPhoneDial } from '../src/db/repositories/phoneDialClaims.js';

/** The non-retryable failure of a dial attempt that found the call's dial claimed already. */
export const DIAL_ALREADY_CLAIMED_FAILURE = 'DialAlreadyClaimed';

/**
 * Claims `callId`'s dial for this attempt of a provider that dials from the worker; throws
 * the non-retryable DialAlreadyClaimed when an earlier attempt took it or the call is no
 * longer in progress (cancelled meanwhile). The SIP trunk is claimed by the edge that sends
 * the INVITE instead (its provider only plans the dial).
 */
export async function claimProviderDial(db: Queryable, callId: string, providerName: string): Promise<void> {
  if (providerName === 'sip') return;
  const claimed = await claimPhoneDial(db, callId, randomUUID(), `provider:${providerName}`);
  if (claimed === 'refused') {
    throw ApplicationFailure.nonRetryable(`call ${callId} is not dialled again: an earlier attempt claimed its dial, or it is no longer in progress`, DIAL_ALREADY_CLAIMED_FAILURE);
  }
}
