/**
 * The media edge's claim of a create-web-call call (docs/web-calls.md, "Claims"): before an
 * edge binds a port for a browser's INVITE it asks the service whether the call may connect,
 * and takes it. One claim per call across every edge; a terminal call is gone, a claimed or
 * connected one a conflict. The claim of a call whose media never came up is handed back.
 */
import type { Pool } from '../db/pool.js';
import { findCallTraceparent } from '../db/repositories/callTraces.js';
import { findCallById } from '../db/repositories/calls.js';
import { claimWebCall, releaseWebCallClaim } from '../db/repositories/webCallClaims.js';
import { isTerminalStatus } from '../domain/calls.js';
import { CALL_NOT_FOUND } from './calls.js';
import { conflict, gone, notFound } from './errors.js';

export const WEB_CALL_ALREADY_CONNECTED = 'Call already connected';
export const webCallEnded = (status: string) => `Call has ended: its status is ${status}`;

export interface WebCallClaim {
  callId: string;
  teamId: string;
  scriptId: string;
  contactId: string;
  /** The call's trace (docs/observability.md, "Traces"), when it was created with tracing on. */
  traceparent?: string;
}

/** Claims the web call for `claimId`: not found (no such web call), gone (terminal), conflict (claimed or connected). */
export async function claimWebCallMedia(deps: { pool: Pool }, callId: string, claimId: string): Promise<WebCallClaim> {
  const claimed = await claimWebCall(deps.pool, callId, claimId);
  const call = await findCallById(deps.pool, callId);
  if (!call || call.type !== 'web') throw notFound(CALL_NOT_FOUND);
  if (!claimed) {
    if (isTerminalStatus(call.status)) throw gone(webCallEnded(call.status));
    throw conflict(WEB_CALL_ALREADY_CONNECTED, { status: call.status });
  }
  const traceparent = await findCallTraceparent(deps.pool, call.id);
  return { callId: call.id, teamId: call.team_id, scriptId: call.script_id, contactId: call.contact_id, ...(traceparent ? { traceparent } : {}) };
}

/** Hands `claimId`'s claim back (its media never came up); whether it held one. */
export async function releaseWebCallMedia(deps: { pool: Pool }, callId: string, claimId: string): Promise<boolean> {
  return releaseWebCallClaim(deps.pool, callId, claimId);
}
