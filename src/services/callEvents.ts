/**
 * Call progress reported by a telephony provider or the media edge (docs/calls.md,
 * "Provider events"): handed to the call's workflow as a signal.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { callEventSignal, callWorkflowId, type CallEvent } from '../../workflows/contracts.js';
import { findCallById } from '../db/repositories/calls.js';
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
