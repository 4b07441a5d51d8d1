import { createWebCall, createWebSession } from '../../services/webSessions.js';
import { idempotentId } from '../middleware/idempotency.js';
import { defineRoute } from '../route.js';
import type { z } from '../schemas.js';
import { concurrencyCeilingResponse, createWebCallBody, createWebCallResponse, createWebSessionBody, createWebSessionResponse } from './schemas.js';

const browserContract =
  'Browser client contract: mint on the visitor’s click on your server (never expose the API key), connect SIP over WebSocket to `ws_url` as `sip:<sip_username>@<sip_domain>` without registration or session timers, dial `target` audio-only with every `headers` entry as an extra SIP header, and configure an ICE server. See docs/web-calls.md.';

/** The failures both web endpoints share (docs/web-calls.md, "Two paths"). */
const webCallErrors = {
  400: { description: 'Invalid JSON, script_id missing or malformed, contact_id malformed, invalid did or objects' },
  404: { description: 'script_id, contact_id or did not found or does not belong to your team' },
  429: { description: 'The team is at its concurrent-call ceiling (body has max_concurrent), or a rate limit', schema: concurrencyCeilingResponse },
  500: { description: 'The web-call path is not configured for this environment' },
};

/** What both web endpoints ask of the service, from their common body fields. */
function webCallChoices(body: z.infer<typeof createWebSessionBody> | z.infer<typeof createWebCallBody>, teamId: string) {
  return {
    teamId,
    scriptId: body.script_id,
    contactId: body.contact_id,
    did: body.did,
    participantIdentity: body.participant_identity,
    objects: body.objects,
  };
}

export const webCallRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/create-web-session',
    operationId: 'createWebSession',
    summary: 'Mint a single-use web session for one browser call',
    description: [
      'Fixes the script, contact (default: the team’s shared web contact) and did, links `objects` to the contact and takes one slot of the team’s concurrency ceiling. No call exists yet: the call is created when the media edge redeems `session_token` (also in `headers` as `X-Session-Token`) within two minutes (`expires_at`); unredeemed, the session expires and its slot comes back.',
      browserContract,
    ].join('\n\n'),
    tags: ['Web calls'],
    auth: 'apiKey',
    request: { body: createWebSessionBody, bodyRequired: true },
    responses: {
      201: { description: 'The session is minted', schema: createWebSessionResponse },
      ...webCallErrors,
    },
    handler: async ({ body, auth, ctx }, deps) => {
      const session = await createWebSession(deps, { ...webCallChoices(body, auth.teamId), sessionId: idempotentId(ctx) });
      return { status: 201, body: { ...session } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/api/v1/create-web-call',
    operationId: 'createWebCall',
    summary: 'Create a web call directly (status scheduled)',
    description: [
      'The direct path: the web call (type `web`) exists now with status `scheduled` and takes a slot of the team’s ceiling; it ends `failed` / `not_connected` unless the browser connects within two minutes. `headers` carries `X-Call-Id` and, when the media edge secret is configured, `X-Call-Token`.',
      browserContract,
    ].join('\n\n'),
    tags: ['Web calls'],
    auth: 'apiKey',
    request: { body: createWebCallBody, bodyRequired: true },
    responses: {
      201: { description: 'The web call is scheduled', schema: createWebCallResponse },
      ...webCallErrors,
    },
    handler: async ({ body, auth, ctx }, deps) => {
      const call = await createWebCall(deps, { ...webCallChoices(body, auth.teamId), callId: idempotentId(ctx) });
      return { status: 201, body: { ...call } };
    },
  }),
];
