import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookEndpoints,
  rotateWebhookEndpointSecret,
  updateWebhookEndpoint,
  webhookEndpointView,
} from '../../services/webhookEndpoints.js';
import { idempotentId } from '../middleware/idempotency.js';
import { defineRoute } from '../route.js';
import {
  createWebhookEndpointBody,
  endpointIdParams,
  updateWebhookEndpointBody,
  webhookEndpointCreated,
  webhookEndpointDeleted,
  webhookEndpointList,
  webhookEndpointResponse,
  webhookSecretRotated,
} from './schemas.js';

const TAGS = ['Event webhooks'];
const NOT_FOUND = { description: 'No such endpoint of the team (unknown, deleted or another team’s)' };

export const webhookEndpointRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/webhook-endpoints',
    operationId: 'createWebhookEndpoint',
    summary: 'Register a URL that receives event webhooks',
    description: [
      'Events (docs/event-webhooks.md) are POSTed to `url`, signed as Standard Webhooks specify with the returned `secret`, which is shown only here.',
      '`events` omitted: every event type. The URL must be http: or https: and its host must resolve only to public addresses (unless the service runs with WEBHOOK_ALLOW_PRIVATE_URLS).',
    ].join('\n\n'),
    tags: TAGS,
    auth: 'apiKey',
    request: { body: createWebhookEndpointBody, bodyRequired: true },
    responses: {
      201: { description: 'The endpoint, enabled, and its secret', schema: webhookEndpointCreated },
      400: { description: 'Malformed URL, a scheme other than http: or https:, a host that resolves to a non-public address or not at all, an unknown event type' },
    },
    handler: async ({ body, auth, ctx }, deps) => {
      const { endpoint, secret } = await createWebhookEndpoint(deps, {
        teamId: auth.teamId,
        url: body.url,
        events: body.events,
        description: body.description,
        id: idempotentId(ctx),
      });
      return { status: 201, body: { success: true, endpoint: webhookEndpointView(endpoint), secret } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api/v1/webhook-endpoints',
    operationId: 'listWebhookEndpoints',
    summary: 'The team’s webhook endpoints, oldest first (never their secrets)',
    tags: TAGS,
    auth: 'apiKey',
    responses: { 200: { description: 'Every endpoint of the team', schema: webhookEndpointList } },
    handler: async ({ auth }, deps) => {
      const endpoints = await listWebhookEndpoints(deps, auth.teamId);
      return { body: { success: true, endpoints: endpoints.map(webhookEndpointView) } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api/v1/webhook-endpoints/{endpoint_id}',
    operationId: 'getWebhookEndpoint',
    summary: 'A webhook endpoint',
    tags: TAGS,
    auth: 'apiKey',
    request: { params: endpointIdParams },
    responses: { 200: { description: 'The endpoint', schema: webhookEndpointResponse }, 404: NOT_FOUND },
    handler: async ({ params, auth }, deps) => {
      const endpoint = await getWebhookEndpoint(deps, auth.teamId, params.endpoint_id);
      return { body: { success: true, endpoint: webhookEndpointView(endpoint) } };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/api/v1/webhook-endpoints/{endpoint_id}',
    operationId: 'updateWebhookEndpoint',
    summary: 'Change a webhook endpoint’s URL, events, description, or enable / disable it',
    description:
      'Only the fields sent change. `enabled: true` re-enables an endpoint the service disabled (it answered 410, or every attempt failed for 5 days); events that happened while it was disabled are not sent. A new URL is checked like at creation; deliveries still retrying go to it from their next attempt.',
    tags: TAGS,
    auth: 'apiKey',
    request: { params: endpointIdParams, body: updateWebhookEndpointBody, bodyRequired: true },
    responses: {
      200: { description: 'The endpoint after the change', schema: webhookEndpointResponse },
      400: { description: 'An invalid field, or a body naming none' },
      404: NOT_FOUND,
    },
    handler: async ({ params, body, auth }, deps) => {
      const endpoint = await updateWebhookEndpoint(deps, auth.teamId, params.endpoint_id, body);
      return { body: { success: true, endpoint: webhookEndpointView(endpoint) } };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/api/v1/webhook-endpoints/{endpoint_id}',
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint: nothing more is sent to it',
    description: 'Deliveries still retrying end failed at their next attempt. The endpoint’s deliveries stay listed.',
    tags: TAGS,
    auth: 'apiKey',
    request: { params: endpointIdParams },
    responses: { 200: { description: 'Deleted', schema: webhookEndpointDeleted }, 404: NOT_FOUND },
    handler: async ({ params, auth }, deps) => {
      const endpointId = await deleteWebhookEndpoint(deps, auth.teamId, params.endpoint_id);
      return { body: { success: true, endpoint_id: endpointId } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret',
    operationId: 'rotateWebhookEndpointSecret',
    summary: 'A new signing secret; the old one keeps signing next to it for 24 hours',
    tags: TAGS,
    auth: 'apiKey',
    request: { params: endpointIdParams },
    responses: { 200: { description: 'The new secret, shown this once', schema: webhookSecretRotated }, 404: NOT_FOUND },
    handler: async ({ params, auth }, deps) => {
      const secret = await rotateWebhookEndpointSecret(deps, auth.teamId, params.endpoint_id);
      return { body: { success: true, secret } };
    },
  }),
];
