import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../domain/storableText.js';
import { WEBHOOK_EVENT_TYPES } from '../../domain/webhookEvents.js';
import { z } from '../schemas.js';

export const eventTypeField = z
  .enum(WEBHOOK_EVENT_TYPES, { message: `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}` })
  .openapi('WebhookEventType', { description: 'docs/event-webhooks.md, "Events"' });

const urlField = z
  .string()
  .min(1, 'must not be empty')
  .max(2048, 'must be at most 2048 characters')
  .openapi({ format: 'uri', example: 'https://example.com/webhooks', description: 'http: or https:, whose host resolves only to public addresses' });

const eventsField = z
  .array(eventTypeField, { message: 'must be a list of event types' })
  .min(1, 'must not be empty (omit it to receive every event type)')
  .max(50, 'must have at most 50 entries')
  .openapi({ description: 'The event types sent to this endpoint; omitted or null: every type' });

const descriptionField = z.string({ message: 'must be a string' }).max(500, 'must be at most 500 characters').refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);

export const createWebhookEndpointBody = z
  .strictObject({ url: urlField, events: eventsField.optional(), description: descriptionField.nullish() })
  .openapi('CreateWebhookEndpointRequest');

export const updateWebhookEndpointBody = z
  .strictObject({
    url: urlField.optional(),
    events: eventsField.nullable().optional(),
    enabled: z.boolean({ message: 'must be a boolean' }).optional().openapi({ description: 'true re-enables an endpoint the service disabled (410, or 5 days of failures)' }),
    description: descriptionField.nullish(),
  })
  .refine((b) => Object.keys(b).length > 0, 'body must name at least one of url, events, enabled, description')
  .openapi('UpdateWebhookEndpointRequest', { minProperties: 1 });

export const endpointIdParams = z.object({ endpoint_id: z.string().openapi({ description: 'The endpoint id (UUID)' }) });

export const webhookEndpoint = z
  .object({
    id: z.string().uuid(),
    url: z.string(),
    events: z.array(eventTypeField).nullable().openapi({ description: 'null: every event type' }),
    description: z.string().nullable(),
    enabled: z.boolean(),
    disabled_reason: z
      .enum(['requested', 'endpoint_gone', 'failing'])
      .nullable()
      .openapi({ description: 'Why it is disabled: requested (PATCH), endpoint_gone (it answered 410), failing (every attempt failed for 5 days); null while enabled' }),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('WebhookEndpoint');

export const webhookEndpointCreated = z
  .object({
    success: z.literal(true),
    endpoint: webhookEndpoint,
    secret: z.string().openapi({ description: 'whsec_<base64 key>: the signing secret, shown this once', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }),
  })
  .openapi('WebhookEndpointCreated');

export const webhookEndpointResponse = z.object({ success: z.literal(true), endpoint: webhookEndpoint }).openapi('WebhookEndpointResponse');

export const webhookEndpointList = z.object({ success: z.literal(true), endpoints: z.array(webhookEndpoint) }).openapi('WebhookEndpointList');

export const webhookEndpointDeleted = z.object({ success: z.literal(true), endpoint_id: z.string().uuid() }).openapi('WebhookEndpointDeleted');

export const webhookSecretRotated = z
  .object({ success: z.literal(true), secret: z.string().openapi({ description: 'The new secret; the previous one also signs for 24 hours' }) })
  .openapi('WebhookSecretRotated');
