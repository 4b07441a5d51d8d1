/**
 * Call progress reported by a telephony provider or the media edge (docs/calls.md,
 * "Provider events"): handed to the call's workflow as a signal.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { callEventSignal, callWorkflowId, type CallEvent } from '../../workflows/contracts.js';
import { appendNoteToEndedCall, findCallById } from '../db/repositories/calls.js';
import type { Pool } from '../db/pool.js';
import { isTerminalStatus } from '../domain/calls.js';
import { CALL_NOT_FOUND } from './calls.js';
import { conflict, notFound } from './errors.js';

/** Signals `event` to the call's workflow; answers the call's team (the media edge keys its recording by it). */
export async function reportCallEvent(deps: { pool: Pool; temporal: Client }, callId: string, event: CallEvent): Promise<{ callId: string; teamId: string }> {
  const call = await findCallById(deps.pool, callId);
  if (!call) throw notFound(CALL_NOT_FOUND);
  if (isTerminalStatus(call.status)) throw conflict(`Call has already ended: its status is ${call.status}`, { status: call.status });
  try {
    await deps.temporal.workflow.getHandle(callWorkflowId(callId)).signal(callEventSignal, event);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw conflict('Call is not running', { status: call.status });
    throw err;
  }
  return { callId, teamId: call.team_id };
}

/** System Notes the media edge may add to a call after it ended (docs/web-calls.md). */
export const EDGE_NOTE_KINDS = ['recording_lost'] as const;
export type EdgeNoteKind = (typeof EDGE_NOTE_KINDS)[number];
export const CALL_NOT_ENDED = 'Call has not ended yet';

/**
 * Adds the media edge's System Note to an ended call, once per kind (a repeated report adds
 * nothing): not found, or conflict while the call is open (its workflow still writes notes).
 */
export async function addEdgeNote(deps: { pool: Pool }, callId: string, note: { kind: EdgeNoteKind; text: string }): Promise<{ added: boolean }> {
  const outcome = await appendNoteToEndedCall(deps.pool, callId, { at: new Date().toISOString(), kind: note.kind, text: note.text });
  if (outcome === 'not_found') throw notFound(CALL_NOT_FOUND);
  if (outcome === 'open') throw conflict(CALL_NOT_ENDED);
  return { added: outcome === 'added' };
}
