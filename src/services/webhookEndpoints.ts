/**
 * Event webhook endpoints (docs/event-webhooks.md): create, read, change, delete and rotate
 * the signing secret. The URL must be http: or https: and, unless WEBHOOK_ALLOW_PRIVATE_URLS,
 * resolve only to public addresses; every attempt checks that again.
 */
import { randomUUID } from 'node:crypto';
import { secretBox, type Config } from '../config/index.js';
import type { Pool } from '../db/pool.js';
import {
  deleteWebhookEndpoint as deleteEndpointRow,
  findTeamWebhookEndpoint,
  insertWebhookEndpoint,
  listTeamWebhookEndpoints,
  rotateWebhookEndpointSecret as rotateSecretRow,
  updateWebhookEndpoint as updateEndpointRow,
  type WebhookEndpointRecord,
} from '../db/repositories/webhookEndpoints.js';
import { isUuid } from '../domain/ids.js';
import { PREVIOUS_SECRET_VALID_MS, type WebhookEventType } from '../domain/webhookEvents.js';
import { generateWebhookSecret } from '../domain/webhookSignatures.js';
import { parseWebhookUrl, resolveWebhookHost, systemResolver, WebhookUrlRefused, type HostResolver } from '../webhooks/addresses.js';
import { conflict, invalid, notFound } from './errors.js';

export interface WebhookEndpointServiceDeps {
  pool: Pool;
  config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_URLS' | 'SECRETS_ENCRYPTION_KEY' | 'SECRETS_ENCRYPTION_KEY_PREVIOUS'>;
  /** Default: the system resolver (dns.lookup). */
  resolveHost?: HostResolver;
}

export const WEBHOOK_ENDPOINT_NOT_FOUND = 'Webhook endpoint not found';

/**
 * What an endpoint's signing secrets are sealed to in the database (SecretBox): the
 * endpoint, for the current and the rotated secret alike (a rotation moves the value).
 */
export function webhookEndpointSecretContext(endpointId: string): string {
  return `webhook-endpoint:${endpointId}`;
}

/** The endpoint as the API shows it; never its secrets. */
export function webhookEndpointView(e: WebhookEndpointRecord) {
  return {
    id: e.id,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    created_at: e.created_at.toISOString(),
  };
}

/** The URL, normalised, once it passes the scheme and address checks (a 400 naming `url` otherwise). */
async function checkedUrl(deps: WebhookEndpointServiceDeps, text: string): Promise<string> {
  try {
    const url = parseWebhookUrl(text);
    await resolveWebhookHost(url, { resolver: deps.resolveHost ?? systemResolver, allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_URLS });
    return url.href;
  } catch (err) {
    if (err instanceof WebhookUrlRefused) throw invalid(`Invalid request: url ${err.message}`);
    throw err;
  }
}

/** Subscribed types, each once, in the order given; null (every type) stays null. */
function eventList(events: readonly WebhookEventType[] | null | undefined): string[] | null {
  return events ? [...new Set(events)] : null;
}

async function requireEndpoint(deps: Pick<WebhookEndpointServiceDeps, 'pool'>, teamId: string, id: string): Promise<WebhookEndpointRecord> {
  const endpoint = isUuid(id) ? await findTeamWebhookEndpoint(deps.pool, teamId, id.toLowerCase()) : undefined;
  if (!endpoint) throw notFound(WEBHOOK_ENDPOINT_NOT_FOUND);
  return endpoint;
}

export interface CreateWebhookEndpointInput {
  teamId: string;
  url: string;
  /** Omitted or null: every event type. */
  events?: readonly WebhookEventType[] | null;
  description?: string | null;
  /** Makes the creation idempotent (an Idempotency-Key). */
  id?: string;
}

/** A new endpoint, enabled, with a new secret (shown once, by the caller). */
export async function createWebhookEndpoint(deps: WebhookEndpointServiceDeps, input: CreateWebhookEndpointInput): Promise<{ endpoint: WebhookEndpointRecord; secret: string }> {
  const url = await checkedUrl(deps, input.url);
  const box = secretBox(deps.config);
  const id = input.id ?? randomUUID();
  const endpoint = await insertWebhookEndpoint(deps.pool, {
    id,
    teamId: input.teamId,
    url,
    events: eventList(input.events),
    description: input.description ?? null,
    secret: box.seal(generateWebhookSecret(), webhookEndpointSecretContext(id)),
  });
  if (!endpoint) throw conflict('A webhook endpoint with this id already exists');
  // The row's own secret: on an idempotent retry that is the first run's.
  return { endpoint, secret: box.open(endpoint.secret, webhookEndpointSecretContext(endpoint.id)) };
}

export async function listWebhookEndpoints(deps: Pick<WebhookEndpointServiceDeps, 'pool'>, teamId: string): Promise<WebhookEndpointRecord[]> {
  return listTeamWebhookEndpoints(deps.pool, teamId);
}

export async function getWebhookEndpoint(deps: Pick<WebhookEndpointServiceDeps, 'pool'>, teamId: string, id: string): Promise<WebhookEndpointRecord> {
  return requireEndpoint(deps, teamId, id);
}

export interface WebhookEndpointUpdate {
  url?: string;
  events?: readonly WebhookEventType[] | null;
  enabled?: boolean;
  description?: string | null;
}

/**
 * Changes what is named. A new URL is checked like at creation. `enabled: true` re-enables an
 * endpoint the service disabled (a 410, or 5 days of failures) and clears its failure streak.
 */
export async function updateWebhookEndpoint(deps: WebhookEndpointServiceDeps, teamId: string, id: string, changes: WebhookEndpointUpdate): Promise<WebhookEndpointRecord> {
  const current = await requireEndpoint(deps, teamId, id);
  const url = changes.url === undefined ? undefined : await checkedUrl(deps, changes.url);
  const updated = await updateEndpointRow(deps.pool, teamId, current.id, {
    url,
    events: changes.events === undefined ? undefined : eventList(changes.events),
    description: changes.description,
    enabled: changes.enabled,
  });
  if (!updated) throw notFound(WEBHOOK_ENDPOINT_NOT_FOUND);
  return updated;
}

/** Deletes the endpoint: nothing more is sent to it, its deliveries stay readable. */
export async function deleteWebhookEndpoint(deps: Pick<WebhookEndpointServiceDeps, 'pool'>, teamId: string, id: string): Promise<string> {
  const endpoint = await requireEndpoint(deps, teamId, id);
  if (!(await deleteEndpointRow(deps.pool, teamId, endpoint.id))) throw notFound(WEBHOOK_ENDPOINT_NOT_FOUND);
  return endpoint.id;
}

/** A new secret; the current one keeps signing next to it for 24 hours (a second rotation drops the oldest). */
export async function rotateWebhookEndpointSecret(deps: Pick<WebhookEndpointServiceDeps, 'pool' | 'config'>, teamId: string, id: string): Promise<string> {
  const endpoint = await requireEndpoint(deps, teamId, id);
  const secret = generateWebhookSecret();
  const sealed = secretBox(deps.config).seal(secret, webhookEndpointSecretContext(endpoint.id));
  const rotated = await rotateSecretRow(deps.pool, teamId, endpoint.id, sealed, new Date(Date.now() + PREVIOUS_SECRET_VALID_MS));
  if (!rotated) throw notFound(WEBHOOK_ENDPOINT_NOT_FOUND);
  return secret;
}
