import { WorkflowNotFoundError } from '@temporalio/client';
import { findCallById, findTeamCall, listTeamCalls } from '../../db/repositories/calls.js';
import { isUuid } from '../../domain/ids.js';
import { isTerminalStatus } from '../../domain/calls.js';
import { decodeCursor, encodeCursor } from '../../domain/cursor.js';
import { reportCallEvent } from '../../services/callEvents.js';
import { CALL_NOT_FOUND, cancelCall, retryCall, scheduleCall } from '../../services/calls.js';
import type { CallEvent } from '../../../workflows/contracts.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { idempotentId } from '../middleware/idempotency.js';
import { defineRoute } from '../route.js';
import {
  callEventBody,
  callEventResponse,
  callIdParams,
  callResult,
  callStatusShape,
  cancelCallResponse,
  createPhoneCallBody,
  createPhoneCallResponse,
  listCallsQuery,
  listCallsResponse,
  retryCallBody,
  retryCallResponse,
} from './schemas.js';
import { callListView, callResultView, callStatusView } from '../../services/callViews.js';
import { z } from '../schemas.js';
import type { RetryPolicy } from '../../domain/retryPolicy.js';

/** A call id from the path: anything that is not a UUID names no call (404). */
function callIdFrom(params: { call_id: string }): string {
  if (!isUuid(params.call_id)) throw notFound(CALL_NOT_FOUND);
  return params.call_id.toLowerCase();
}

const callEnvelope = (shape: z.ZodType) => z.object({ success: z.literal(true), call: shape });

export const callRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/create-phone-call',
    operationId: 'createPhoneCall',
    summary: 'Schedule an outbound phone call that runs a script',
    description: [
      'Upserts the contact by normalised phone number (first and last name updated when sent), links `objects` to it, writes the call (status `scheduled`) and starts its workflow `call-<call_id>`.',
      '`scheduled_time` defaults to now. The call waits until then, for its calling window to open (`calling_window`, else the team’s, in the callee’s zone), first come first served for a slot under the team ceiling (`max_concurrent`), then for a dial token of its number (carrier pacing).',
      '`retry_policy` (else the team’s) schedules a new attempt after an unanswered outcome. A number on the do-not-call list answers 409 and nothing is written.',
    ].join('\n\n'),
    tags: ['Calls'],
    auth: 'apiKey',
    request: { body: createPhoneCallBody, bodyRequired: true },
    responses: {
      201: { description: 'The call is scheduled', schema: createPhoneCallResponse },
      400: { description: 'Missing field, invalid phone number, invalid timestamp, time zone, calling window, retry policy or objects' },
      404: { description: 'script_id or from_number does not exist or is not the team’s' },
      409: { description: 'Phone number is on the do-not-call list' },
    },
    handler: async ({ body, auth, ctx }, deps) => {
      const scheduled = await scheduleCall(deps, {
        teamId: auth.teamId,
        fromNumber: body.from_number,
        scriptId: body.script_id,
        // A null field is one not sent: the stored value stays.
        contact: Object.fromEntries(Object.entries(body.contact).filter(([, v]) => v !== null && v !== undefined)) as typeof body.contact & { phone_number: string },
        scheduledTime: body.scheduled_time ?? undefined,
        objects: body.objects ?? undefined,
        callId: idempotentId(ctx),
        type: 'outbound',
        callingWindow: body.calling_window,
        retryPolicy: body.retry_policy as RetryPolicy | null | undefined,
      });
      return { status: 201, body: { success: true, call_id: scheduled.callId, contact_id: scheduled.contactId, status: 'scheduled' } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api/v1/get-call-status/{call_id}',
    operationId: 'getCallStatus',
    summary: 'Status of a call',
    tags: ['Calls'],
    auth: 'apiKey',
    request: { params: callIdParams },
    responses: {
      200: { description: 'The call’s status', schema: callEnvelope(callStatusShape) },
      404: { description: 'The call does not exist or is not the team’s' },
    },
    handler: async ({ params, auth }, deps) => {
      const call = await findTeamCall(deps.pool, auth.teamId, callIdFrom(params));
      if (!call) throw notFound(CALL_NOT_FOUND);
      return { body: { success: true, call: callStatusView(call) } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api/v1/get-call-result/{call_id}',
    operationId: 'getCallResult',
    summary: 'The full call with its results',
    description: 'call_summary, transcript, transcript_json, structured_data, objectives and recording_url are empty until post-call analysis, a few seconds after the terminal status.',
    tags: ['Calls'],
    auth: 'apiKey',
    request: { params: callIdParams },
    responses: {
      200: { description: 'The call', schema: callEnvelope(callResult) },
      404: { description: 'The call does not exist or is not the team’s' },
    },
    handler: async ({ params, auth }, deps) => {
      const call = await findTeamCall(deps.pool, auth.teamId, callIdFrom(params));
      if (!call) throw notFound(CALL_NOT_FOUND);
      return { body: { success: true, call: callResultView(call) } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api/v1/calls',
    operationId: 'listCalls',
    summary: 'The team’s calls, newest first',
    description:
      'Keyset paging: pass `meta.next_cursor` as `cursor` for the next page (null on the last page). The cursor is a date-time that also pins the position among calls sharing a timestamp, so paging never skips or repeats a call.',
    tags: ['Calls'],
    auth: 'apiKey',
    request: { query: listCallsQuery },
    responses: {
      200: { description: 'One page of calls', schema: listCallsResponse },
      400: { description: 'limit not an integer from 1 to 500, malformed cursor, an unknown filter value, or a malformed contact_id / original_call_id' },
    },
    handler: async ({ query, auth }, deps) => {
      const position = query.cursor === undefined || query.cursor === '' ? undefined : decodeCursor(query.cursor);
      if (query.cursor && !position) throw badRequest('Invalid request: cursor must be the meta.next_cursor of a previous page (a date-time)');
      const page = await listTeamCalls(deps.pool, auth.teamId, {
        limit: query.limit,
        position,
        type: query.type,
        status: query.status,
        contactId: query.contact_id,
        originalCallId: query.original_call_id,
      });
      const last = page.calls[page.calls.length - 1];
      const nextCursor = page.hasMore && last ? encodeCursor(BigInt(last.created_us!), last.seq) : null;
      return {
        body: { success: true, calls: page.calls.map(callListView), meta: { limit: query.limit, total: page.total, next_cursor: nextCursor } },
      };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/api/v1/cancel-call/{call_id}',
    operationId: 'cancelCall',
    summary: 'Cancel a call that is still scheduled',
    tags: ['Calls'],
    auth: 'apiKey',
    request: { params: callIdParams },
    responses: {
      200: { description: 'The call is cancelled', schema: cancelCallResponse },
      404: { description: 'The call does not exist or is not the team’s' },
      409: { description: 'The call is no longer scheduled (the message names its status)' },
    },
    handler: async ({ params, auth }, deps) => {
      const call = await cancelCall(deps, auth.teamId, callIdFrom(params));
      return { body: { success: true, call_id: call.id, status: 'cancelled' } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/api/v1/retry-call/{call_id}',
    operationId: 'retryCall',
    summary: 'Schedule a new call from a retryable one',
    description:
      'Retryable: a terminal call other than `completed` that is not a web call. The new call has a new id, the next `attempt` of the chain, and `original_call_id` the chain’s first call; it keeps the chain’s calling window and retry policy; `scheduled_time` defaults to now. A number on the do-not-call list answers 409.',
    tags: ['Calls'],
    auth: 'apiKey',
    request: { params: callIdParams, body: retryCallBody },
    responses: {
      201: { description: 'The new call is scheduled', schema: retryCallResponse },
      400: { description: 'Invalid scheduled_time' },
      404: { description: 'The call does not exist or is not the team’s' },
      409: { description: 'The call is not retryable (the message names its status), is a web call, or its number is on the do-not-call list' },
    },
    handler: async ({ params, body, auth, ctx }, deps) => {
      const scheduled = await retryCall(deps, auth.teamId, callIdFrom(params), {
        scheduledTime: body.scheduled_time ?? undefined,
        callId: idempotentId(ctx),
      });
      return {
        status: 201,
        body: {
          success: true,
          call_id: scheduled.callId,
          original_call_id: scheduled.call.original_call_id,
          status: 'scheduled',
          scheduled_time: scheduled.scheduledTime.toISOString(),
        },
      };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/{call_id}/events',
    operationId: 'postCallEvent',
    summary: 'Call progress from a telephony provider or the media edge',
    description:
      'Internal (Bearer MEDIA_EDGE_SECRET). Body: `{ type: "ringing" | "answered" | "transcript" | "ended", event_id?, occurred_at?, role?, text?, reason? }` — see docs/calls.md. Signals the call workflow; a repeated event_id is applied once.',
    tags: ['Internal'],
    auth: 'mediaEdge',
    request: { params: callIdParams, body: callEventBody, bodyRequired: true },
    responses: {
      202: { description: 'The event was handed to the call workflow', schema: callEventResponse },
      400: { description: 'Malformed event' },
      401: { description: 'Missing or wrong media edge secret' },
      404: { description: 'No such call' },
      409: { description: 'The call has already ended' },
    },
    handler: async ({ params, body }, deps) => {
      const reported = await reportCallEvent(deps, callIdFrom(params), body as CallEvent);
      return { status: 202, body: { success: true, call_id: reported.callId, accepted: true, team_id: reported.teamId } };
    },
  }),
];
