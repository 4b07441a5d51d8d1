/**
 * Event webhooks (docs/event-webhooks.md): the event types, their ids, the delivery statuses
 * and the retry schedule. Pure.
 */
import { nameBasedUuid } from './ids.js';

export const WEBHOOK_EVENT_TYPES = [
  'call.scheduled',
  'call.started',
  'call.ended',
  'call.analyzed',
  'web_session.redeemed',
  'web_session.expired',
  'batch.completed',
  'hook_run.failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'retrying', 'succeeded', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** Why the service disabled an endpoint (or `requested`: PATCH enabled false). */
export type EndpointDisabledReason = 'requested' | 'endpoint_gone' | 'failing';

/**
 * The id of an event: derived from the entity and the type, so every retry, worker restart
 * or reconciler pass that records the same change names the same event (`evt_<32 hex>`).
 */
export function webhookEventId(type: WebhookEventType, entityId: string): string {
  return `evt_${nameBasedUuid(`webhook-event:${type}:${entityId}`).replaceAll('-', '')}`;
}

/** An attempt without a 2xx answer within this long has failed. */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10_000;
/** A rotated secret keeps signing next to the new one for this long. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 60 * 60_000;
/** An endpoint whose every attempt has failed for this long is disabled (reason `failing`). */
export const FAILING_ENDPOINT_DISABLED_AFTER_MS = 5 * 24 * 60 * 60_000;

export const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5,300,1800,7200,18000,36000,36000';

/**
 * WEBHOOK_RETRY_SCHEDULE: seconds separated by commas, each the delay before the next
 * attempt (so n delays make n + 1 attempts). Undefined when the text is not such a list.
 */
export function parseRetrySchedule(text: string): number[] | undefined {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.length > 50) return undefined;
  const delays = parts.map((p) => (/^\d+(\.\d+)?$/.test(p) ? Number(p) : NaN));
  if (delays.some((d) => !Number.isFinite(d) || d <= 0 || d > 30 * 24 * 3600)) return undefined;
  return delays;
}

/** The delay in seconds after failed attempt `attempt` (1-based), or null when it was the last. */
export function retryDelayAfter(schedule: readonly number[], attempt: number): number | null {
  return attempt >= 1 && attempt <= schedule.length ? schedule[attempt - 1] : null;
}
