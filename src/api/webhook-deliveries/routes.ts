import { decodeCursor } from '../../domain/cursor.js';
import { getWebhookDelivery, listWebhookDeliveries, redeliverWebhookDelivery, webhookAttemptView, webhookDeliveryView } from '../../services/webhookDeliveries.js';
import { badRequest } from '../errors.js';
import { idempotentId } from '../middleware/idempotency.js';
import { defineRoute } from '../route.js';
import { deliveryIdParams, listWebhookDeliveriesQuery, webhookDeliveryDetail, webhookDeliveryList, webhookRedelivered } from './schemas.js';

const TAGS = ['Event webhooks'];
const NOT_FOUND = { description: 'No such delivery of the team' };

export const webhookDeliveryRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/webhook-deliveries',
    operationId: 'listWebhookDeliveries',
    summary: 'The team’s event webhook deliveries, newest first',
    description: 'Keyset paging like the calls list: pass `meta.next_cursor` as `cursor` for the next page (null on the last page).',
    tags: TAGS,
    auth: 'apiKey',
    request: { query: listWebhookDeliveriesQuery },
    responses: {
      200: { description: 'One page of deliveries', schema: webhookDeliveryList },
      400: { description: 'limit not an integer from 1 to 500, a malformed cursor, endpoint_id or call_id, an unknown event_type or status' },
    },
    handler: async ({ query, auth }, deps) => {
      const position = query.cursor === undefined || query.cursor === '' ? undefined : decodeCursor(query.cursor);
      if (query.cursor && !position) throw badRequest('Invalid request: cursor must be the meta.next_cursor of a previous page (a date-time)');
      const page = await listWebhookDeliveries(deps, auth.teamId, {
        limit: query.limit,
        position,
        endpointId: query.endpoint_id?.toLowerCase(),
        eventType: query.event_type,
        callId: query.call_id?.toLowerCase(),
        status: query.status,
      });
      return { body: { success: true, deliveries: page.deliveries.map(webhookDeliveryView), meta: { limit: query.limit, next_cursor: page.nextCursor } } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api/v1/webhook-deliveries/{delivery_id}',
    operationId: 'getWebhookDelivery',
    summary: 'A delivery with its payload and every attempt',
    tags: TAGS,
    auth: 'apiKey',
    request: { params: deliveryIdParams },
    responses: { 200: { description: 'The delivery', schema: webhookDeliveryDetail }, 404: NOT_FOUND },
    handler: async ({ params, auth }, deps) => {
      const { delivery, payload, attempts } = await getWebhookDelivery(deps, auth.teamId, params.delivery_id);
      return { body: { success: true, delivery: { ...webhookDeliveryView(delivery), payload, attempt_log: attempts.map(webhookAttemptView) } } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/api/v1/webhook-deliveries/{delivery_id}/redeliver',
    operationId: 'redeliverWebhookDelivery',
    summary: 'Send a delivery’s event again, with the same event id and body',
    description: 'A new delivery of the same event to the same endpoint, with its own attempts and retries. The endpoint must exist and be enabled.',
    tags: TAGS,
    auth: 'apiKey',
    request: { params: deliveryIdParams },
    responses: {
      202: { description: 'The new delivery is on its way', schema: webhookRedelivered },
      404: NOT_FOUND,
      409: { description: 'The delivery’s endpoint was deleted or is disabled' },
    },
    handler: async ({ params, auth, ctx }, deps) => {
      const deliveryId = await redeliverWebhookDelivery(deps, auth.teamId, params.delivery_id, idempotentId(ctx));
      return { status: 202, body: { success: true, delivery_id: deliveryId } };
    },
  }),
];
