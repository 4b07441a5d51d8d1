import { WEBHOOK_DELIVERY_STATUSES, WEBHOOK_EVENT_TYPES } from '../../domain/webhookEvents.js';
import { cursorOrEmptyDocument, pageLimitQuery, z } from '../schemas.js';
import { eventTypeField } from '../webhook-endpoints/schemas.js';

export const listWebhookDeliveriesQuery = z.object({
  endpoint_id: z.string().uuid({ message: 'endpoint_id must be a UUID' }).optional(),
  event_type: z.enum(WEBHOOK_EVENT_TYPES, { message: `event_type must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` }).optional(),
  call_id: z.string().uuid({ message: 'call_id must be a UUID' }).optional(),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES, { message: `status must be one of ${WEBHOOK_DELIVERY_STATUSES.join(', ')}` }).optional(),
  limit: pageLimitQuery,
  cursor: z.string().optional().openapi(cursorOrEmptyDocument),
});

export const deliveryIdParams = z.object({ delivery_id: z.string().openapi({ description: 'The delivery id (UUID)' }) });

const nullableDate = z.string().nullable().openapi({ format: 'date-time' });

export const webhookDelivery = z
  .object({
    id: z.string().uuid(),
    endpoint_id: z.string().uuid(),
    event_id: z.string().openapi({ description: 'evt_…: the webhook-id header; one per event, the same on every attempt and redelivery' }),
    event_type: eventTypeField,
    status: z.enum(WEBHOOK_DELIVERY_STATUSES),
    attempts: z.number().int(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: nullableDate.openapi({ description: 'When the next attempt is due (status retrying)' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    delivered_at: nullableDate,
    redelivery_of: z.string().uuid().nullable().openapi({ description: 'The delivery a redeliver repeated; null for the first delivery of an event' }),
  })
  .openapi('WebhookDelivery');

export const webhookAttempt = z
  .object({
    attempt: z.number().int(),
    attempted_at: z.string().openapi({ format: 'date-time' }),
    status_code: z.number().int().nullable(),
    latency_ms: z.number().int(),
    error: z.string().nullable(),
  })
  .openapi('WebhookDeliveryAttempt');

export const webhookDeliveryList = z
  .object({
    success: z.literal(true),
    deliveries: z.array(webhookDelivery),
    meta: z.object({ limit: z.number().int(), next_cursor: z.string().nullable().openapi({ format: 'date-time', description: 'Null on the last page.' }) }),
  })
  .openapi('WebhookDeliveryList');

export const webhookDeliveryDetail = z
  .object({
    success: z.literal(true),
    delivery: webhookDelivery.extend({
      payload: z.record(z.string(), z.unknown()).openapi({ description: 'The event as sent: { id, type, created_at, team_id, data }' }),
      attempt_log: z.array(webhookAttempt).openapi({ description: 'Every attempt, oldest first' }),
    }),
  })
  .openapi('WebhookDeliveryDetail');

export const webhookRedelivered = z
  .object({ success: z.literal(true), delivery_id: z.string().uuid().openapi({ description: 'The new delivery, of the same event (same event id and body)' }) })
  .openapi('WebhookRedelivered');
