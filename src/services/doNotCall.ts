/**
 * The do-not-call list (docs/calls.md, "The do-not-call list"): numbers a team must never
 * call. The API manages it; create-phone-call refuses a listed number, the call workflow
 * checks again before it dials, batches skip listed contacts, retries stop at it, and a
 * callee who asks on a call is added with source "call".
 */
import type { Pool, Queryable } from '../db/pool.js';
import { findCallById } from '../db/repositories/calls.js';
import { deleteDoNotCall, findDoNotCall, insertDoNotCall, isOnDoNotCall, listDoNotCall, type DoNotCallRecord } from '../db/repositories/doNotCall.js';
import type { KeysetPosition } from '../domain/cursor.js';
import { conflict, notFound } from './errors.js';

export const ON_DO_NOT_CALL = 'Phone number is on the do-not-call list';
export const DO_NOT_CALL_ENTRY_NOT_FOUND = 'Phone number is not on the do-not-call list';

/** An entry as the API shows it. */
export function doNotCallView(e: DoNotCallRecord) {
  return { phone_number: e.phone_number, reason: e.reason, source: e.source, call_id: e.call_id, created_at: e.created_at.toISOString() };
}

/** Puts an (E.164) number on the team's list; `created` false when it was on it already. */
export async function addToDoNotCall(db: Queryable, teamId: string, phoneNumber: string, reason?: string | null): Promise<{ entry: DoNotCallRecord; created: boolean }> {
  return insertDoNotCall(db, teamId, { phoneNumber, reason, source: 'api' });
}

export async function getDoNotCallEntry(db: Queryable, teamId: string, phoneNumber: string): Promise<DoNotCallRecord> {
  const entry = await findDoNotCall(db, teamId, phoneNumber);
  if (!entry) throw notFound(DO_NOT_CALL_ENTRY_NOT_FOUND);
  return entry;
}

export async function removeFromDoNotCall(db: Queryable, teamId: string, phoneNumber: string): Promise<void> {
  if (!(await deleteDoNotCall(db, teamId, phoneNumber))) throw notFound(DO_NOT_CALL_ENTRY_NOT_FOUND);
}

export async function listDoNotCallEntries(db: Queryable, teamId: string, opts: { limit: number; position?: KeysetPosition }) {
  return listDoNotCall(db, teamId, opts);
}

/** Refuses (conflict) a number on the team's list: the check create-phone-call and retry-call make. */
export async function assertNotOnDoNotCall(db: Queryable, teamId: string, phoneNumber: string): Promise<void> {
  if (await isOnDoNotCall(db, teamId, phoneNumber)) throw conflict(ON_DO_NOT_CALL);
}

/**
 * The callee of a call asked not to be called again: their number joins the call's team's
 * list with source "call" and the call's id. Idempotent; a call without a number (a web
 * call) adds nothing and answers undefined.
 */
export async function addCalleeToDoNotCall(pool: Pool, callId: string, reason?: string | null): Promise<DoNotCallRecord | undefined> {
  const call = await findCallById(pool, callId);
  if (!call) throw notFound(`call ${callId} not found`);
  if (!call.to_number) return undefined;
  const { entry } = await insertDoNotCall(pool, call.team_id, { phoneNumber: call.to_number, reason: reason ?? 'Asked during a call not to be called again', source: 'call', callId });
  return entry;
}
