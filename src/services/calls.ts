/**
 * Scheduling, cancelling, retrying and reconciling calls: what the API, webhook runs,
 * batches and web calls share (docs/calls.md).
 *
 * Consistency between the row and its workflow: the row is written first (it is the read
 * model and the outbox), then the workflow `call-<id>` is started with the id-conflict
 * policy USE_EXISTING, then the row is marked `workflow_started_at`. If the process dies
 * in between, or the start fails, the reconciler (callsReconcilerWorkflow) finds the open
 * row without a confirmed workflow and starts it: the same id, so never a second call.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { withTransaction, type Pool } from '../db/pool.js';
import {
  cancelScheduledCall,
  cancelSipCallInProgress,
  completeCall,
  findCallById,
  findCallsWithoutWorkflow,
  findOpenCallIds,
  findStaleOpenCalls,
  findTeamCall,
  insertCall,
  linkNextAttempt,
  markWorkflowStarted,
  type CallRecord,
} from '../db/repositories/calls.js';
import { insertCallTrace } from '../db/repositories/callTraces.js';
import { findTeamDialingPolicy } from '../db/repositories/dialingPolicies.js';
import { findContactById, upsertContactByPhone, type ContactFields } from '../db/repositories/contacts.js';
import { findTeamPhoneNumber } from '../db/repositories/phoneNumbers.js';
import { findTeamScript } from '../db/repositories/scripts.js';
import { findAbandonedWebSessions } from '../db/repositories/webSessions.js';
import type { CallingWindow } from '../domain/callingWindows.js';
import { isRetryable, type CallType } from '../domain/calls.js';
import type { RetryPolicy } from '../domain/retryPolicy.js';
import { isUuid } from '../domain/ids.js';
import type { Logger } from '../logging/logger.js';
import { CALL_ID, CALL_STATUS, CALL_TYPE, TEAM_ID } from '../temporal/searchAttributes.js';
import { startWorkflowOnce } from '../temporal/startOnce.js';
import {
  CALL_WORKFLOW_TYPE,
  callWorkflowId,
  cancelCallSignal,
  CALLS_RECONCILER_WORKFLOW_ID,
  CALLS_RECONCILER_WORKFLOW_TYPE,
  type CallWorkflowInput,
} from '../../workflows/contracts.js';
import { releaseSlotAndGrant, repairSlotGrants, type SlotRepairReport } from './callSlots.js';
import { normalizeContactInput, normalizePhoneField, type ContactInput } from './contacts.js';
import { resolveCallPolicy } from './dialingPolicy.js';
import { assertNotOnDoNotCall } from './doNotCall.js';
import { conflict, invalid, notFound } from './errors.js';
import { linkObjectsToContact, type ObjectsMap } from './objects.js';
import { callEvent, dispatchWebhookDeliveries, recordWebhookEvents, withWebhookEvents } from './webhookEvents.js';
import { expireWebSession } from './webSessionRedemption.js';
import { callsCreated, countCallEnded } from '../metrics/callMetrics.js';
import { activeTraceparent } from '../tracing/traceContext.js';

export interface CallServiceDeps {
  pool: Pool;
  temporal: Client;
  config: Pick<Config, 'DEFAULT_PHONE_REGION' | 'TEMPORAL_TASK_QUEUE'> & Partial<Pick<Config, 'ADMISSION_SAFETY_NET_SECONDS'>>;
  logger?: Logger;
  /**
   * The live-call task queue the service's workers poll (docs/calls.md, "Task queues"): web
   * and inbound calls, live from their first moment, start there. Unset (workers of the
   * service's queue alone, as in most tests): they start on TEMPORAL_TASK_QUEUE.
   */
  liveTaskQueue?: string;
}

/** The contact of a new call: contact fields (upserted by normalised number) or an existing contact's id. */
export type ScheduleContact = ContactInput | { id: string };

export interface ScheduleCallInput {
  teamId: string;
  /** A number the team owns (any accepted format). Required for phone calls; the did of a web call. */
  fromNumber?: string | null;
  scriptId: string;
  contact: ScheduleContact;
  /** Default now. */
  scheduledTime?: Date | string;
  objects?: ObjectsMap;
  /** Makes the call idempotent: the same id gives the same call and the same workflow. */
  callId?: string;
  type?: CallType;
  originalCallId?: string;
  participantIdentity?: string;
  /** The call's calling window: a window, null for none (any time), undefined for the team's default. */
  callingWindow?: CallingWindow | null;
  /** The call's retry policy: a policy, null for none, undefined for the team's default. */
  retryPolicy?: RetryPolicy | null;
  /** A later attempt of a chain: its number, and the call it follows (whose next_attempt_call_id it becomes). */
  attempt?: number;
  previousCallId?: string;
}

export interface ScheduledCall {
  callId: string;
  contactId: string;
  status: string;
  scheduledTime: Date;
  /** False when callId named an existing call (a retried request). */
  created: boolean;
  call: CallRecord;
}

export const SCRIPT_NOT_FOUND = 'script_id not found or does not belong to your team';
export const FROM_NUMBER_NOT_FOUND = 'from_number not found or does not belong to your team';
export const CONTACT_NOT_FOUND = 'contact_id not found or does not belong to your team';
/** Web calls name their number `did` (docs/web-calls.md "Request fields"). */
export const DID_NOT_FOUND = 'did not found or does not belong to your team';
export const CALL_NOT_FOUND = 'Call not found';

function parseScheduledTime(value: Date | string | undefined): Date {
  if (value === undefined) return new Date();
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) throw invalid('Invalid request: scheduled_time must be an ISO 8601 date-time');
  return date;
}

/**
 * Validates the number and script (not found), refuses a number on the do-not-call list
 * (conflict), upserts the contact (and links `objects`), resolves the dialing policy (calling
 * window, zone, retry policy: docs/calls.md), writes the call row and starts its workflow.
 * With `callId` every step is idempotent.
 */
export async function scheduleCall(deps: CallServiceDeps, input: ScheduleCallInput): Promise<ScheduledCall> {
  const type = input.type ?? 'outbound';
  const region = deps.config.DEFAULT_PHONE_REGION;
  const scheduledTime = parseScheduledTime(input.scheduledTime);
  const fromNumber = input.fromNumber ? normalizePhoneField(input.fromNumber, region, type === 'web' ? 'did' : 'from_number') : null;
  if (type !== 'web' && !fromNumber) throw invalid('Invalid request: from_number is required');
  const contactFields: ContactFields | undefined = 'id' in input.contact ? undefined : normalizeContactInput(input.contact, region, 'contact.');
  const callId = input.callId ?? randomUUID();

  if (!isUuid(input.scriptId)) throw notFound(SCRIPT_NOT_FOUND);
  const [script, number] = await Promise.all([
    findTeamScript(deps.pool, input.teamId, input.scriptId),
    fromNumber ? findTeamPhoneNumber(deps.pool, input.teamId, fromNumber) : Promise.resolve(null),
  ]);
  if (!script) throw notFound(SCRIPT_NOT_FOUND);
  if (fromNumber && !number) throw notFound(type === 'web' ? DID_NOT_FOUND : FROM_NUMBER_NOT_FOUND);

  const { call, created, deliveries } = await withTransaction(deps.pool, async (tx) => {
    // A request repeated with the same call id answers the call it made, listed since or not.
    const existing = input.callId ? await findCallById(tx, callId) : undefined;
    // Refused before any write (this transaction rolls back the contact's upsert).
    if (!existing && type !== 'web' && contactFields) await assertNotOnDoNotCall(tx, input.teamId, contactFields.phone_number);
    const contact = contactFields
      ? (await upsertContactByPhone(tx, input.teamId, contactFields)).contact
      : await findContactById(tx, input.teamId, (input.contact as { id: string }).id);
    if (!contact) throw notFound(CONTACT_NOT_FOUND);
    if (type !== 'web' && !contact.phone_number) throw invalid('Invalid request: the contact has no phone number');
    if (!existing && type !== 'web' && !contactFields) await assertNotOnDoNotCall(tx, input.teamId, contact.phone_number!);
    if (input.objects && Object.keys(input.objects).length) await linkObjectsToContact(tx, input.teamId, contact.id, input.objects);
    const policy =
      type === 'web' || existing
        ? undefined
        : resolveCallPolicy(await findTeamDialingPolicy(tx, input.teamId), contact, { callingWindow: input.callingWindow, retryPolicy: input.retryPolicy }, scheduledTime);
    const inserted = await insertCall(tx, {
      id: callId,
      teamId: input.teamId,
      contactId: contact.id,
      scriptId: script.id,
      type,
      fromNumber,
      toNumber: type === 'web' ? null : contact.phone_number,
      scheduledTime,
      progress: type === 'web' ? 'waiting_for_connection' : 'waiting_for_scheduled_time',
      objects: input.objects ?? null,
      originalCallId: input.originalCallId ?? null,
      participantIdentity: input.participantIdentity ?? null,
      attempt: input.attempt ?? 1,
      callingWindow: policy?.callingWindow ?? null,
      timezone: policy?.timezone ?? null,
      retryPolicy: policy?.retryPolicy ?? null,
      dialAfter: policy?.dialAfter ?? null,
      wakesOnGrant: type !== 'web' && admissionSafetyNetMs(deps) > 0 && (policy?.dialAfter ?? scheduledTime).getTime() > Date.now() + ADMISSION_LEAD_MS,
    });
    if (inserted.created && input.previousCallId) await linkNextAttempt(tx, input.previousCallId, inserted.call.id);
    // A web call's trace reaches the media edge through its claim or redemption (docs/observability.md, "Traces").
    const traceparent = inserted.created && type === 'web' ? activeTraceparent() : undefined;
    if (traceparent) await insertCallTrace(tx, inserted.call.id, traceparent);
    const deliveries = inserted.created ? await recordWebhookEvents(tx, [callEvent('call.scheduled', inserted.call)]) : [];
    return { ...inserted, deliveries };
  });
  if (call.team_id !== input.teamId) throw conflict('A call with this id already exists');
  if (created) callsCreated.inc({ type: call.type });

  if (!call.workflow_started_at) {
    try {
      await startCallWorkflow(deps, call);
      await markWorkflowStarted(deps.pool, [call.id]);
    } catch (err) {
      // The row is the outbox: the reconciler starts the workflow (same id) shortly.
      deps.logger?.warn({ err, callId: call.id }, 'call workflow not started yet; the reconciler will start it');
    }
  }
  dispatchWebhookDeliveries(deps, deliveries);
  return { callId: call.id, contactId: call.contact_id, status: call.status, scheduledTime: call.scheduled_time, created, call };
}

/**
 * A call due sooner than this after it is written asks for its slot itself when its
 * workflow starts; one due later sleeps in the admission line until its grant wakes it
 * (docs/calls.md, "Admission").
 */
export const ADMISSION_LEAD_MS = 1_000;

/** ADMISSION_SAFETY_NET_SECONDS in milliseconds (0: every call wakes itself when due). */
function admissionSafetyNetMs(deps: Pick<CallServiceDeps, 'config'>): number {
  return (deps.config.ADMISSION_SAFETY_NET_SECONDS ?? 0) * 1000;
}

/**
 * Starts the workflow of a call row; starting it again (or after it closed) is a no-op. A web
 * or inbound call talks from its first moment, so it starts on the live-call queue (when there
 * is one); a phone call moves there once admitted (workflows/callWorkflow.ts).
 */
export async function startCallWorkflow(deps: Pick<CallServiceDeps, 'temporal' | 'config' | 'liveTaskQueue'>, call: CallRecord): Promise<void> {
  const input: CallWorkflowInput = {
    callId: call.id,
    teamId: call.team_id,
    type: call.type as CallWorkflowInput['type'],
    scheduledTime: call.scheduled_time.toISOString(),
    // The dialing policy the call was scheduled with (docs/calls.md): the workflow decides with it.
    callingWindow: call.calling_window,
    timezone: call.timezone,
    retryPolicy: call.retry_policy,
    attempt: call.attempt,
    // The row says whether the slot line wakes it (the grant signals exactly such calls).
    admissionSafetyNetMs: call.wakes_on_grant && admissionSafetyNetMs(deps) > 0 ? admissionSafetyNetMs(deps) : undefined,
  };
  const live = call.type === 'web' || call.type === 'inbound';
  await startWorkflowOnce(deps.temporal, CALL_WORKFLOW_TYPE, {
    workflowId: callWorkflowId(call.id),
    taskQueue: live && deps.liveTaskQueue ? deps.liveTaskQueue : deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    // One workflow per call id, ever: a duplicate start joins the running one, and a
    // closed call's id is never run again.
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    typedSearchAttributes: [
      { key: TEAM_ID, value: call.team_id },
      { key: CALL_ID, value: call.id },
      { key: CALL_STATUS, value: call.status },
      { key: CALL_TYPE, value: call.type },
    ],
  });
}

/**
 * cancel-call: scheduled → cancelled, or a phone call in progress on the SIP trunk →
 * cancelled (its workflow then sends CANCEL while it rings, BYE once answered); a conflict
 * naming the status otherwise. Then tells the workflow.
 */
export async function cancelCall(deps: CallServiceDeps, teamId: string, callId: string): Promise<CallRecord> {
  const result = await withWebhookEvents(deps, async (tx) => {
    const scheduled = await cancelScheduledCall(tx, teamId, callId);
    const cancelled =
      scheduled && !scheduled.cancelled && scheduled.call.status === 'in-progress'
        ? await cancelSipCallInProgress(tx, teamId, callId).then((call) => (call ? { call, cancelled: true, inProgress: true } : scheduled))
        : scheduled;
    return { result: cancelled, events: cancelled?.cancelled ? [callEvent('call.ended', cancelled.call)] : [] };
  });
  if (!result) throw notFound(CALL_NOT_FOUND);
  if (result.cancelled) countCallEnded(result.call);
  if (!result.cancelled) {
    throw conflict(`Call cannot be cancelled: its status is ${result.call.status}`, { status: result.call.status });
  }
  try {
    await deps.temporal.workflow.getHandle(callWorkflowId(callId)).signal(cancelCallSignal);
  } catch (err) {
    // The row decides; a workflow that missed the signal finds the call cancelled when it wakes.
    deps.logger?.warn({ err, callId }, 'could not signal the cancelled call workflow');
  }
  // A call cancelled after its slot was granted gives it to the next call in line now; one in
  // progress holds it until its workflow has ended the call (CANCEL or BYE sent).
  if (!('inProgress' in result)) await releaseSlotAndGrant(deps, callId);
  return result.call;
}

/** retry-call: a new scheduled call from a retryable one (a conflict naming the status otherwise). */
export async function retryCall(
  deps: CallServiceDeps,
  teamId: string,
  originalCallId: string,
  opts: { scheduledTime?: Date | string; callId?: string } = {},
): Promise<ScheduledCall> {
  const original = await findTeamCall(deps.pool, teamId, originalCallId);
  if (!original) throw notFound(CALL_NOT_FOUND);
  if (original.type === 'web') throw conflict(`Call cannot be retried: it is a web call (its status is ${original.status})`, { status: original.status });
  if (!isRetryable(original)) throw conflict(`Call cannot be retried: its status is ${original.status}`, { status: original.status });
  return scheduleNextAttemptOf(deps, original, opts);
}

/**
 * The next attempt of a call's chain, the way retry-call makes it: a new call with the same
 * script, number and contact, the chain's calling window and retry policy, `attempt` one
 * more, `original_call_id` the chain's first call, and the previous call's
 * `next_attempt_call_id` set in the same transaction. Refused (conflict) when the number is
 * on the do-not-call list. The caller checks that the call may be retried. An inbound call's
 * next attempt is an outbound call back to the caller.
 */
export async function scheduleNextAttemptOf(
  deps: CallServiceDeps,
  previous: CallRecord,
  opts: { scheduledTime?: Date | string; callId?: string },
): Promise<ScheduledCall> {
  // An inbound call is retried by calling the caller back from the number they called, under
  // the team's dialing policy (docs/telephony.md, "Inbound calls").
  const callBack = previous.type === 'inbound';
  return scheduleCall(deps, {
    teamId: previous.team_id,
    fromNumber: callBack ? previous.to_number : previous.from_number,
    scriptId: previous.script_id,
    contact: { id: previous.contact_id },
    scheduledTime: opts.scheduledTime,
    callId: opts.callId,
    type: callBack ? 'outbound' : (previous.type as CallType),
    originalCallId: previous.original_call_id ?? previous.id,
    attempt: previous.attempt + 1,
    previousCallId: previous.id,
    callingWindow: callBack ? undefined : previous.calling_window,
    retryPolicy: callBack ? undefined : previous.retry_policy,
  });
}

export interface ReconcileReport {
  started: number;
  failed: number;
  /** Web sessions expired because their workflow never started (the API died in between). */
  webSessionsExpired: number;
  slots: SlotRepairReport;
}

/** A session still minted this long after its expiry has no workflow to expire it (its own timer fires at the expiry). */
const ABANDONED_SESSION_GRACE_MS = 60_000;

/** A granted call that has not taken its slot after this long is woken again. */
const REWAKE_GRANTED_AFTER_MS = 30_000;

/**
 * Waits until none of `callIds` is open any more (their workflows wrote how they ended), for
 * at most `timeoutMs`; the ones still open then. `npm start` stopping: the calls its edge hung
 * up get their end written by this process's worker before it stops (docs/media-edge.md).
 */
export async function waitForCallsToEnd(deps: { pool: Pool }, callIds: string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await findOpenCallIds(deps.pool, callIds);
    if (open.length === 0 || Date.now() >= deadline) return open;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * One reconciler pass: starts the workflow of every open call row written more than
 * `startAfterMs` ago without a confirmed workflow, and ends as failed (workflow_lost) the
 * open calls whose workflow no longer runs; then repairs slot grants (free slots handed to
 * waiting calls, lost wake-ups sent again: src/services/callSlots.ts).
 */
export async function reconcileCalls(
  deps: CallServiceDeps,
  opts: { startAfterMs: number; staleAfterMs: number; limit?: number; rewakeAfterMs?: number },
): Promise<ReconcileReport> {
  const limit = opts.limit ?? 200;
  const report: ReconcileReport = { started: 0, failed: 0, webSessionsExpired: 0, slots: { granted: 0, rewoken: 0 } };
  for (const call of await findCallsWithoutWorkflow(deps.pool, opts.startAfterMs, limit)) {
    try {
      await startCallWorkflow(deps, call);
      await markWorkflowStarted(deps.pool, [call.id]);
      report.started += 1;
    } catch (err) {
      deps.logger?.warn({ err, callId: call.id }, 'reconciler could not start a call workflow');
    }
  }
  for (const call of await findStaleOpenCalls(deps.pool, opts.staleAfterMs, limit)) {
    let running = true;
    try {
      const description = await deps.temporal.workflow.getHandle(callWorkflowId(call.id)).describe();
      running = description.status.name === 'RUNNING';
    } catch (err) {
      if ((err as Error).name !== 'WorkflowNotFoundError') continue;
      running = false;
    }
    if (running) continue;
    const { changed } = await withWebhookEvents(deps, async (tx) => {
      const ended = await completeCall(tx, call.id, { status: 'failed', endReason: 'workflow_lost', endTime: new Date(), progress: 'done' });
      return { result: ended, events: ended.changed ? [callEvent('call.ended', ended.call)] : [] };
    });
    if (changed) {
      countCallEnded({ status: 'failed', end_reason: 'workflow_lost' });
      report.failed += 1;
      await releaseSlotAndGrant(deps, call.id);
    }
  }
  // A session row stored by an API that died before starting its workflow stays minted for
  // ever: nothing else expires it (its token cannot be redeemed without the workflow).
  for (const session of await findAbandonedWebSessions(deps.pool, ABANDONED_SESSION_GRACE_MS, limit)) {
    await expireWebSession(deps, { sessionId: session.id, teamId: session.team_id });
    report.webSessionsExpired += 1;
  }
  report.slots = await repairSlotGrants(deps, { rewakeAfterMs: opts.rewakeAfterMs ?? REWAKE_GRANTED_AFTER_MS });
  return report;
}

/** Starts the reconciler singleton unless it runs already (called at worker start-up). */
export async function ensureCallsReconciler(deps: Pick<CallServiceDeps, 'temporal' | 'config'>): Promise<void> {
  await startWorkflowOnce(deps.temporal, CALLS_RECONCILER_WORKFLOW_TYPE, {
    workflowId: CALLS_RECONCILER_WORKFLOW_ID,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [{}],
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
  });
}
