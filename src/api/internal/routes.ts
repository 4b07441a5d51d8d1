import { redeemWebSession } from '../../services/webSessions.js';
import { defineRoute } from '../route.js';
import { redeemWebSessionBody, redeemWebSessionResponse } from './schemas.js';

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
      return { status: 201, body: { success: true, call_id: redemption.callId, script_id: redemption.scriptId, contact_id: redemption.contactId } };
    },
  }),
];
