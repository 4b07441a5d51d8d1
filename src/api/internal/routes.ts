import { isUuid } from '../../domain/ids.js';
import { addEdgeNote } from '../../services/callEvents.js';
import { CALL_NOT_FOUND } from '../../services/calls.js';
import { notFound } from '../../services/errors.js';
import { claimPhoneCallDial } from '../../services/phoneDialClaims.js';
import { claimWebCallMedia, releaseWebCallMedia } from '../../services/webCallClaims.js';
import { redeemWebSession } from '../../services/webSessions.js';
import { defineRoute } from '../route.js';
import {
  edgeNoteBody,
  edgeNoteResponse,
  phoneCallIdParams,
  phoneDialClaimBody,
  phoneDialClaimResponse,
  redeemWebSessionBody,
  redeemWebSessionResponse,
  webCallClaimBody,
  webCallClaimResponse,
  webCallIdParams,
  webCallReleaseResponse,
} from './schemas.js';

/** A call id from the path: anything that is not a UUID names no call (404). */
function callIdFrom(params: { call_id: string }): string {
  if (!isUuid(params.call_id)) throw notFound(CALL_NOT_FOUND);
  return params.call_id.toLowerCase();
}

/** The media edge's internal API (docs/web-calls.md); the calls events endpoint lives with the calls routes. */
export const internalRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/web-sessions/redeem',
    operationId: 'redeemWebSession',
    summary: 'Redeem a web session token (media edge)',
    description:
      'Internal (Bearer MEDIA_EDGE_SECRET). The media edge sends the `X-Session-Token` of a browser’s INVITE. Of any number of concurrent redemptions of one token exactly one succeeds and creates the web call, which then waits for the media edge’s `answered` event (POST /internal/v1/calls/{call_id}/events).',
    tags: ['Internal'],
    auth: 'mediaEdge',
    request: { body: redeemWebSessionBody, bodyRequired: true },
    responses: {
      201: { description: 'The web call now exists', schema: redeemWebSessionResponse },
      400: { description: 'Malformed body' },
      401: { description: 'Missing or wrong media edge secret' },
      404: { description: 'Unknown session token' },
      409: { description: 'The session token has already been used' },
      410: { description: 'The session token has expired' },
    },
    handler: async ({ body }, deps) => {
      const redemption = await redeemWebSession(deps, body.session_token);
      return {
        status: 201,
        body: { success: true, call_id: redemption.callId, script_id: redemption.scriptId, contact_id: redemption.contactId, traceparent: redemption.traceparent },
      };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/internal/v1/web-calls/{call_id}/claim',
    operationId: 'claimWebCall',
    summary: 'Claim a create-web-call call’s media (media edge)',
    description:
      'Internal (Bearer MEDIA_EDGE_SECRET). Sent by the media edge for an INVITE with a valid `X-Call-Token`, before it binds any media port: of all edges exactly one claim of a scheduled web call succeeds. Released (POST …/release) when its media never came up; kept once the call connected.',
    tags: ['Internal'],
    auth: 'mediaEdge',
    request: { params: webCallIdParams, body: webCallClaimBody, bodyRequired: true },
    responses: {
      200: { description: 'The call is this claim’s: the edge may answer the INVITE', schema: webCallClaimResponse },
      400: { description: 'Malformed body' },
      401: { description: 'Missing or wrong media edge secret' },
      404: { description: 'No such web call' },
      409: { description: 'Call already connected (claimed by another INVITE, or in progress)' },
      410: { description: 'The call has ended (the message names its status)' },
    },
    handler: async ({ params, body }, deps) => {
      const claim = await claimWebCallMedia(deps, callIdFrom(params), body.claim_id.toLowerCase());
      return { body: { success: true, call_id: claim.callId, team_id: claim.teamId, script_id: claim.scriptId, contact_id: claim.contactId, traceparent: claim.traceparent } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/internal/v1/web-calls/{call_id}/release',
    operationId: 'releaseWebCall',
    summary: 'Hand back a web call’s media claim (media edge)',
    description: 'Internal (Bearer MEDIA_EDGE_SECRET). The INVITE that claimed the call ended before its media came up: another INVITE may claim it.',
    tags: ['Internal'],
    auth: 'mediaEdge',
    request: { params: webCallIdParams, body: webCallClaimBody, bodyRequired: true },
    responses: {
      200: { description: 'Released (or there was nothing of this claim to release)', schema: webCallReleaseResponse },
      400: { description: 'Malformed body' },
      401: { description: 'Missing or wrong media edge secret' },
      404: { description: 'call_id is not a UUID' },
    },
    handler: async ({ params, body }, deps) => {
      const callId = callIdFrom(params);
      const released = await releaseWebCallMedia(deps, callId, body.claim_id.toLowerCase());
      return { body: { success: true, call_id: callId, released } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/{call_id}/dial-claim',
    operationId: 'claimPhoneDial',
    summary: 'Claim a phone call’s one dial (media edge)',
    description:
      'Internal (Bearer MEDIA_EDGE_SECRET). Sent by the media edge that took a call’s dial activity (VOICE_PROVIDER=sip), before it sends the INVITE: of all edges and all retries exactly one claim of an in-progress outbound call succeeds, and only the request that took it (`first: true`) dials. A claim is never released, so a call is never dialled twice (docs/telephony.md).',
    tags: ['Internal'],
    auth: 'mediaEdge',
    request: { params: phoneCallIdParams, body: phoneDialClaimBody, bodyRequired: true },
    responses: {
      200: { description: 'The dial is this claim’s (`first` says whether this request took it)', schema: phoneDialClaimResponse },
      400: { description: 'Malformed body (the message names the field)' },
      401: { description: 'Missing or wrong media edge secret' },
      404: { description: 'No such outbound call' },
      409: { description: 'Call already dialled (another claim holds it: the body names its `media_task_queue`), or the call is not in progress' },
      410: { description: 'The call has ended (the message names its status)' },
    },
    handler: async ({ params, body }, deps) => {
      const claim = await claimPhoneCallDial(deps, callIdFrom(params), body.claim_id.toLowerCase(), body.media_task_queue);
      return { body: { success: true, call_id: claim.callId, team_id: claim.teamId, first: claim.first } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/{call_id}/system-notes',
    operationId: 'addEdgeSystemNote',
    summary: 'Add a System Note to an ended call (media edge)',
    description:
      'Internal (Bearer MEDIA_EDGE_SECRET). What the media edge learns after a call ended, such as `recording_lost` (the recording could not be stored and its audio was discarded). One note per kind and call: a repeated report adds nothing.',
    tags: ['Internal'],
    auth: 'mediaEdge',
    request: { params: webCallIdParams, body: edgeNoteBody, bodyRequired: true },
    responses: {
      200: { description: 'The note is on the call', schema: edgeNoteResponse },
      400: { description: 'Malformed body (the message names the field)' },
      401: { description: 'Missing or wrong media edge secret' },
      404: { description: 'No such call' },
      409: { description: 'Call has not ended yet (its workflow still writes notes)' },
    },
    handler: async ({ params, body }, deps) => {
      const callId = callIdFrom(params);
      const { added } = await addEdgeNote(deps, callId, body);
      return { body: { success: true, call_id: callId, added } };
    },
  }),
];
