/**
 * Event webhook deliveries (docs/event-webhooks.md): what the API reads and redelivers, and
 * what the delivery workflow's activities do, one attempt at a time.
 */
import { randomUUID } from 'node:crypto';
import { secretBox, type Config } from '../config/index.js';
import { withTransaction } from '../db/pool.js';
import {
  clearWebhookEndpointFailures,
  disableGoneWebhookEndpoint,
  findTeamWebhookEndpoint,
  recordWebhookEndpointFailure,
} from '../db/repositories/webhookEndpoints.js';
import {
  failDelivery,
  findDeliveryToSend,
  findTeamWebhookDelivery,
  insertRedelivery,
  listTeamWebhookDeliveries,
  recordDeliveryAttempt,
  webhookDeliveryDetail,
  type DeliveryListFilter,
  type WebhookAttemptRecord,
  type WebhookDeliveryRecord,
} from '../db/repositories/webhookDeliveries.js';
import { encodeCursor, type KeysetPosition } from '../domain/cursor.js';
import { isUuid } from '../domain/ids.js';
import { FAILING_ENDPOINT_DISABLED_AFTER_MS, retryDelayAfter, WEBHOOK_ATTEMPT_TIMEOUT_MS } from '../domain/webhookEvents.js';
import { webhookSignatureHeader } from '../domain/webhookSignatures.js';
import type { Logger } from '../logging/logger.js';
import { systemResolver, type HostResolver } from '../webhooks/addresses.js';
import { postWebhook } from '../webhooks/sender.js';
import { SecretUnreadable } from '../secrets/secretBox.js';
import type { WebhookAttemptResult } from '../../workflows/contracts.js';
import { conflict, notFound } from './errors.js';
import { webhookEndpointSecretContext } from './webhookEndpoints.js';
import { dispatchWebhookDeliveries, type WebhookDispatchDeps } from './webhookEvents.js';
import { webhookDeliveries, webhookDeliveryLatency } from '../metrics/callMetrics.js';

export const WEBHOOK_DELIVERY_NOT_FOUND = 'Webhook delivery not found';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** A delivery as the API lists it. */
export function webhookDeliveryView(d: WebhookDeliveryRecord) {
  return {
    id: d.id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempts: d.attempts,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    next_attempt_at: iso(d.next_attempt_at),
    created_at: d.created_at.toISOString(),
    delivered_at: iso(d.delivered_at),
    redelivery_of: d.redelivery_of,
  };
}

export function webhookAttemptView(a: WebhookAttemptRecord) {
  return { attempt: a.attempt, attempted_at: a.attempted_at.toISOString(), status_code: a.status_code, latency_ms: a.latency_ms, error: a.error };
}

export interface DeliveryPage {
  deliveries: WebhookDeliveryRecord[];
  nextCursor: string | null;
}

/** One page of the team's deliveries, newest first. */
export async function listWebhookDeliveries(
  deps: Pick<WebhookDispatchDeps, 'pool'>,
  teamId: string,
  opts: DeliveryListFilter & { limit: number; position?: KeysetPosition },
): Promise<DeliveryPage> {
  const page = await listTeamWebhookDeliveries(deps.pool, teamId, opts);
  const last = page.deliveries[page.deliveries.length - 1];
  return { deliveries: page.deliveries, nextCursor: page.hasMore && last ? encodeCursor(BigInt(last.created_us!), last.seq) : null };
}

async function requireDelivery(deps: Pick<WebhookDispatchDeps, 'pool'>, teamId: string, id: string): Promise<WebhookDeliveryRecord> {
  const delivery = isUuid(id) ? await findTeamWebhookDelivery(deps.pool, teamId, id.toLowerCase()) : undefined;
  if (!delivery) throw notFound(WEBHOOK_DELIVERY_NOT_FOUND);
  return delivery;
}

/** The delivery with its event's payload and every attempt. */
export async function getWebhookDelivery(
  deps: Pick<WebhookDispatchDeps, 'pool'>,
  teamId: string,
  id: string,
): Promise<{ delivery: WebhookDeliveryRecord; payload: unknown; attempts: WebhookAttemptRecord[] }> {
  const delivery = await requireDelivery(deps, teamId, id);
  return { delivery, ...(await webhookDeliveryDetail(deps.pool, delivery)) };
}

/**
 * Sends the delivery's event again, with the same event id and body, as a new delivery to the
 * same endpoint (which must still be enabled). `newId` makes it idempotent.
 */
export async function redeliverWebhookDelivery(deps: WebhookDispatchDeps, teamId: string, id: string, newId?: string): Promise<string> {
  const original = await requireDelivery(deps, teamId, id);
  const endpoint = await findTeamWebhookEndpoint(deps.pool, teamId, original.endpoint_id);
  if (!endpoint) throw conflict('Delivery cannot be redelivered: its endpoint was deleted');
  if (!endpoint.enabled) throw conflict(`Delivery cannot be redelivered: its endpoint is disabled (${endpoint.disabled_reason})`, { disabled_reason: endpoint.disabled_reason });
  const redelivery = await insertRedelivery(deps.pool, teamId, original.id, newId ?? randomUUID());
  if (!redelivery) throw conflict('A delivery with this id already exists');
  dispatchWebhookDeliveries(deps, [redelivery]);
  return redelivery.id;
}

export interface WebhookSendDeps {
  pool: WebhookDispatchDeps['pool'];
  config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_URLS' | 'WEBHOOK_RETRY_SCHEDULE' | 'SECRETS_ENCRYPTION_KEY' | 'SECRETS_ENCRYPTION_KEY_PREVIOUS'>;
  logger?: Logger;
  /** Default: the system resolver (dns.lookup). */
  resolveHost?: HostResolver;
}

/**
 * The endpoint's signing secrets in clear. One that cannot be opened (a wrong
 * SECRETS_ENCRYPTION_KEY) fails the attempt with a message the team may read; the log
 * says which key is missing.
 */
function openEndpointSecrets(deps: WebhookSendDeps, delivery: { endpoint_id: string; secrets: string[] }): string[] {
  const box = secretBox(deps.config);
  try {
    return delivery.secrets.map((s) => box.open(s, webhookEndpointSecretContext(delivery.endpoint_id)));
  } catch (err) {
    if (!(err instanceof SecretUnreadable)) throw err;
    deps.logger?.error({ err, endpointId: delivery.endpoint_id }, 'cannot read a webhook endpoint secret');
    throw new Error('The endpoint’s signing secret cannot be read: the service’s encryption key is misconfigured');
  }
}

const over = (status: 'succeeded' | 'failed', statusCode: number | null = null): WebhookAttemptResult => ({ status, statusCode, retryInSeconds: null });

/**
 * Attempt `attempt` (1-based) of a delivery: checks that its endpoint is still there and
 * enabled, resolves and checks its host, POSTs the signed body and records what happened.
 * A 2xx succeeds; a 410 fails the delivery and disables the endpoint; anything else is
 * retried after the next delay of WEBHOOK_RETRY_SCHEDULE, or fails it after the last.
 */
export async function sendWebhookDelivery(deps: WebhookSendDeps, input: { deliveryId: string; attempt: number }): Promise<WebhookAttemptResult> {
  const delivery = await findDeliveryToSend(deps.pool, input.deliveryId);
  if (!delivery) return over('failed');
  if (delivery.status === 'succeeded' || delivery.status === 'failed') return over(delivery.status);
  if (delivery.endpoint_deleted || !delivery.endpoint_enabled) {
    await failDelivery(deps.pool, delivery.id, delivery.endpoint_deleted ? 'The endpoint was deleted' : 'The endpoint is disabled');
    return over('failed');
  }

  const secrets = openEndpointSecrets(deps, delivery);
  const attemptedAt = new Date();
  const timestamp = Math.floor(attemptedAt.getTime() / 1000);
  const result = await postWebhook({
    url: delivery.url,
    body: delivery.body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'voice-agent-webhooks/1',
      'webhook-id': delivery.event_id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': webhookSignatureHeader(secrets, delivery.event_id, timestamp, delivery.body),
    },
    timeoutMs: WEBHOOK_ATTEMPT_TIMEOUT_MS,
    resolver: deps.resolveHost ?? systemResolver,
    allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_URLS,
  });

  const succeeded = result.error === null;
  const gone = result.statusCode === 410;
  const retryInSeconds = succeeded || gone ? null : retryDelayAfter(deps.config.WEBHOOK_RETRY_SCHEDULE, input.attempt);
  const status = succeeded ? 'succeeded' : retryInSeconds === null ? 'failed' : 'retrying';
  await withTransaction(deps.pool, async (tx) => {
    await recordDeliveryAttempt(tx, delivery.id, {
      attempt: input.attempt,
      attemptedAt,
      statusCode: result.statusCode,
      latencyMs: result.latencyMs,
      error: gone ? `${result.error} (the endpoint is gone and was disabled)` : result.error,
      status,
      nextAttemptAt: retryInSeconds === null ? null : new Date(Date.now() + retryInSeconds * 1000),
    });
    if (succeeded) await clearWebhookEndpointFailures(tx, delivery.endpoint_id);
    else if (gone) await disableGoneWebhookEndpoint(tx, delivery.endpoint_id);
    else if (await recordWebhookEndpointFailure(tx, delivery.endpoint_id, FAILING_ENDPOINT_DISABLED_AFTER_MS)) {
      deps.logger?.warn({ endpointId: delivery.endpoint_id }, 'webhook endpoint disabled: every attempt failed for 5 days');
    }
  });
  webhookDeliveries.inc({ outcome: status });
  webhookDeliveryLatency.observe(result.latencyMs / 1000);
  return { status, statusCode: result.statusCode, retryInSeconds };
}

/**
 * An attempt whose activity did not finish (its worker died mid-send, the database failed):
 * recorded as a failed attempt, not held against the endpoint, and retried on the schedule.
 * A delivery that the lost attempt had already finished keeps its status.
 */
export async function recordLostWebhookAttempt(deps: WebhookSendDeps, input: { deliveryId: string; attempt: number; error: string }): Promise<WebhookAttemptResult> {
  const delivery = await findDeliveryToSend(deps.pool, input.deliveryId);
  if (!delivery) return over('failed');
  if (delivery.status === 'succeeded' || delivery.status === 'failed') return over(delivery.status);
  const retryInSeconds = retryDelayAfter(deps.config.WEBHOOK_RETRY_SCHEDULE, input.attempt);
  const status = retryInSeconds === null ? 'failed' : 'retrying';
  await withTransaction(deps.pool, (tx) => recordDeliveryAttempt(tx, delivery.id, {
    attempt: input.attempt,
    attemptedAt: new Date(),
    statusCode: null,
    latencyMs: 0,
    error: `The attempt did not finish: ${input.error}`,
    status,
    nextAttemptAt: retryInSeconds === null ? null : new Date(Date.now() + retryInSeconds * 1000),
  }));
  webhookDeliveries.inc({ outcome: status });
  return { status, statusCode: null, retryInSeconds };
}
