import { acceptHookRequest } from '../../services/hooks.js';
import { payloadTooLarge } from '../errors.js';
import { MAX_BODY_BYTES } from '../middleware/jsonBody.js';
import { defineRoute } from '../route.js';
import { hookAccepted, hookParams, hookPayload } from './schemas.js';

export const hookRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/hooks/{token}',
    operationId: 'triggerWebhook',
    summary: 'Inbound webhook trigger: runs the hook’s automation',
    description: [
      'Authenticated by the token in the path (no bearer key). Only the per-IP and per-IP webhook rate-limit buckets apply.',
      'When the hook has a secret, requests are signed in the scheme the hook was created with (docs/webhooks.md "Signatures"):',
      '- `x-webhook-signature` (the default): `X-Webhook-Signature` must be `sha256=<hex>` (bare hex accepted), the HMAC-SHA256 of the exact request body bytes under the secret. An optional `X-Webhook-Id` (1 to 255 printable ASCII characters) makes delivery idempotent: the same id on the same hook within 24 hours answers the same run_id and runs nothing again.',
      '- `standard-webhooks`: `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature: v1,<base64>`, the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` keyed with the base64-decoded part of the `whsec_` secret. A timestamp more than HOOK_SIGNATURE_TOLERANCE_SECONDS (300) from the server\'s clock, either way, is refused, so a captured request cannot be replayed later; `webhook-id` is the delivery id (a repeat within 24 hours answers the same run_id), and `X-Webhook-Id` is ignored.',
      'Each accepted request is one workflow `hook-run-<run_id>` in Temporal, with search attributes HookId and TeamId.',
    ].join('\n\n'),
    tags: ['Webhooks'],
    auth: 'hookToken',
    request: { params: hookParams, body: hookPayload, bodyRequired: false },
    responses: {
      202: { description: 'Accepted: the run has started (or, for a repeated X-Webhook-Id, had started)', schema: hookAccepted },
      400: { description: 'Body is not JSON or nests deeper than 64 levels, or X-Webhook-Id (webhook-id for Standard Webhooks) is malformed' },
      401: {
        description:
          'Invalid webhook signature (missing or wrong); for Standard Webhooks also a missing header, a webhook-timestamp that is not Unix seconds, or one more than HOOK_SIGNATURE_TOLERANCE_SECONDS old (a replay) or ahead',
      },
      404: { description: 'Unknown or revoked hook' },
      413: { description: 'Request body over 1,048,576 bytes, as sent or re-encoded as JSON' },
    },
    handler: async ({ params, body, ctx }, deps) => {
      const deliveryId = ctx.get('X-Webhook-Id') || undefined;
      const signature = ctx.get('X-Webhook-Signature') || undefined;
      const standardWebhook = {
        id: ctx.get('webhook-id') || undefined,
        timestamp: ctx.get('webhook-timestamp') || undefined,
        signature: ctx.get('webhook-signature') || undefined,
      };
      const rawBody: Buffer = ctx.state.rawBody ?? Buffer.alloc(0);
      // The body travels to the run's workflow re-encoded as JSON by Temporal's payload
      // converter, which can be larger than what arrived (1e20 becomes 21 digits, an invalid
      // UTF-8 byte a 3-byte U+FFFD): the body limit holds for that encoding too, well
      // inside Temporal's payload limit.
      if (body !== undefined && Buffer.byteLength(JSON.stringify(body) ?? '') > MAX_BODY_BYTES) throw payloadTooLarge(MAX_BODY_BYTES);
      const accepted = await acceptHookRequest(deps, {
        token: params.token,
        rawBody,
        body,
        signature,
        deliveryId,
        standardWebhook,
      });
      ctx.state.log?.info({ hookId: accepted.hookId, runId: accepted.runId, duplicate: accepted.duplicate }, 'webhook accepted');
      return { status: 202, body: { success: true, run_id: accepted.runId } };
    },
  }),
];
