/**
 * The media edge's claim of a phone call's dial (docs/telephony.md, "One call, one INVITE"):
 * before an edge sends a call's INVITE through the SIP trunk it takes the call's one dial
 * here. Any number of dial activities, retries and edges may ask; exactly one claim ever
 * holds the call, and only the request that took it may dial. The claim is durable and never
 * handed back: a call whose INVITE may have gone out is never dialled again.
 */
import type { Pool } from '../db/pool.js';
import { findCallById } from '../db/repositories/calls.js';
import { claimPhoneDial, findPhoneDialClaim } from '../db/repositories/phoneDialClaims.js';
import { isTerminalStatus } from '../domain/calls.js';
import { CALL_NOT_FOUND } from './calls.js';
import { conflict, gone, notFound } from './errors.js';

export const CALL_ALREADY_DIALLED = 'Call already dialled';
export const phoneCallEnded = (status: string) => `Call has ended: its status is ${status}`;
export const phoneCallNotInProgress = (status: string) => `Call is not in progress: its status is ${status}`;

export interface PhoneDialClaimed {
  callId: string;
  teamId: string;
  /** True when this request took the claim: the edge may send the INVITE. False for a repeat of the same claim. */
  first: boolean;
}

/**
 * Claims the call's dial for `claimId` (the edge instance) and its task queue: not found (no
 * such outbound call), gone (terminal: cancelled meanwhile), conflict (another claim holds
 * it, named by its edge's task queue; or the call is not in progress).
 */
export async function claimPhoneCallDial(deps: { pool: Pool }, callId: string, claimId: string, mediaTaskQueue: string): Promise<PhoneDialClaimed> {
  const claimed = await claimPhoneDial(deps.pool, callId, claimId, mediaTaskQueue);
  const call = await findCallById(deps.pool, callId);
  if (!call || call.type !== 'outbound') throw notFound(CALL_NOT_FOUND);
  if (claimed !== 'refused') return { callId: call.id, teamId: call.team_id, first: claimed === 'taken' };
  const holder = await findPhoneDialClaim(deps.pool, callId);
  if (holder) throw conflict(CALL_ALREADY_DIALLED, { status: call.status, media_task_queue: holder.mediaTaskQueue, claimed_at: holder.claimedAt.toISOString() });
  if (isTerminalStatus(call.status)) throw gone(phoneCallEnded(call.status));
  throw conflict(phoneCallNotInProgress(call.status), { status: call.status });
}
