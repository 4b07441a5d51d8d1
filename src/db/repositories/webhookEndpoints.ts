/**
 * Event webhook endpoints (src/db/migrations/1200_event_webhooks.sql). Every read and write
 * names the team; a deleted endpoint is kept (its deliveries stay readable) but is found by
 * none of the team's lookups.
 */
import type { EndpointDisabledReason } from '../../domain/webhookEvents.js';
import type { Queryable } from '../pool.js';

export interface WebhookEndpointRecord {
  id: string;
  team_id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  enabled: boolean;
  disabled_reason: EndpointDisabledReason | null;
  failing_since: Date | null;
  /** The signing secrets as stored: sealed by SecretBox (plaintext in rows written before that); open with the endpoint's context. */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface NewWebhookEndpoint {
  id: string;
  teamId: string;
  url: string;
  events: string[] | null;
  description: string | null;
  /** Sealed by the caller (SecretBox). */
  secret: string;
}

/** Inserts the endpoint; the same id again (an idempotent retry) returns the existing row of the team, or undefined when the id is another team's. */
export async function insertWebhookEndpoint(db: Queryable, e: NewWebhookEndpoint): Promise<WebhookEndpointRecord | undefined> {
  const { rows } = await db.query<WebhookEndpointRecord>(
    `INSERT INTO webhook_endpoints (id, team_id, url, events, description, secret)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (id) DO NOTHING
     RETURNING *`,
    [e.id, e.teamId, e.url, e.events, e.description, e.secret],
  );
  return rows[0] ?? (await findTeamWebhookEndpoint(db, e.teamId, e.id));
}

/** The team's live endpoint, or undefined (another team's, deleted or unknown). */
export async function findTeamWebhookEndpoint(db: Queryable, teamId: string, id: string): Promise<WebhookEndpointRecord | undefined> {
  const { rows } = await db.query<WebhookEndpointRecord>(
    'SELECT * FROM webhook_endpoints WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL',
    [teamId, id],
  );
  return rows[0];
}

/** The team's live endpoints, oldest first. */
export async function listTeamWebhookEndpoints(db: Queryable, teamId: string): Promise<WebhookEndpointRecord[]> {
  const { rows } = await db.query<WebhookEndpointRecord>(
    'SELECT * FROM webhook_endpoints WHERE team_id = $1 AND deleted_at IS NULL ORDER BY created_at, id',
    [teamId],
  );
  return rows;
}

export interface WebhookEndpointChanges {
  url?: string;
  /** null: every event type. */
  events?: string[] | null;
  description?: string | null;
  enabled?: boolean;
}

/**
 * Applies the changes named. Enabling clears the reason it was disabled for and its failure
 * streak; disabling records `requested`. Undefined when the team has no such live endpoint.
 */
export async function updateWebhookEndpoint(db: Queryable, teamId: string, id: string, c: WebhookEndpointChanges): Promise<WebhookEndpointRecord | undefined> {
  const { rows } = await db.query<WebhookEndpointRecord>(
    `UPDATE webhook_endpoints SET
        url = CASE WHEN $3 THEN $4 ELSE url END,
        events = CASE WHEN $5 THEN $6::text[] ELSE events END,
        description = CASE WHEN $7 THEN $8 ELSE description END,
        enabled = COALESCE($9, enabled),
        disabled_reason = CASE WHEN $9 IS NULL OR $9 = enabled THEN disabled_reason WHEN $9 THEN NULL ELSE 'requested' END,
        failing_since = CASE WHEN $9 AND NOT enabled THEN NULL ELSE failing_since END,
        updated_at = now()
      WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL
      RETURNING *`,
    [
      teamId,
      id,
      c.url !== undefined,
      c.url ?? null,
      c.events !== undefined,
      c.events ?? null,
      c.description !== undefined,
      c.description ?? null,
      c.enabled ?? null,
    ],
  );
  return rows[0];
}

/** Deletes the endpoint (kept for its deliveries, disabled, found by nothing); false when the team has no such live endpoint. */
export async function deleteWebhookEndpoint(db: Queryable, teamId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET deleted_at = now(), enabled = false, disabled_reason = COALESCE(disabled_reason, 'requested'), updated_at = now()
      WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL`,
    [teamId, id],
  );
  return (rowCount ?? 0) > 0;
}

/** The new secret signs from now on; the current one keeps signing next to it until `previousValidUntil`. */
export async function rotateWebhookEndpointSecret(
  db: Queryable,
  teamId: string,
  id: string,
  secret: string,
  previousValidUntil: Date,
): Promise<WebhookEndpointRecord | undefined> {
  const { rows } = await db.query<WebhookEndpointRecord>(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = $4, secret = $3, updated_at = now()
      WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL
      RETURNING *`,
    [teamId, id, secret, previousValidUntil],
  );
  return rows[0];
}

/** The endpoint answered 410: disabled with reason endpoint_gone (unless already disabled). */
export async function disableGoneWebhookEndpoint(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'endpoint_gone', updated_at = now() WHERE id = $1 AND enabled`,
    [id],
  );
}

/** A 2xx: the endpoint's failure streak ends (written only when there was one). */
export async function clearWebhookEndpointFailures(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [id]);
}

/**
 * A failed attempt: starts the endpoint's failure streak, or, when the streak is older than
 * `disableAfterMs`, disables the endpoint (reason failing). Writes only in those two cases.
 * True when this call disabled it.
 */
export async function recordWebhookEndpointFailure(db: Queryable, id: string, disableAfterMs: number): Promise<boolean> {
  const { rows } = await db.query<{ enabled: boolean }>(
    `UPDATE webhook_endpoints SET
        failing_since = COALESCE(failing_since, now()),
        enabled = CASE WHEN failing_since < now() - make_interval(secs => $2::double precision / 1000) THEN false ELSE enabled END,
        disabled_reason = CASE WHEN failing_since < now() - make_interval(secs => $2::double precision / 1000) THEN 'failing' ELSE disabled_reason END,
        updated_at = now()
      WHERE id = $1 AND enabled
        AND (failing_since IS NULL OR failing_since < now() - make_interval(secs => $2::double precision / 1000))
      RETURNING enabled`,
    [id, disableAfterMs],
  );
  return rows[0]?.enabled === false;
}

/** An endpoint's two stored signing secrets. */
export type StoredEndpointSecrets = Pick<WebhookEndpointRecord, 'secret' | 'previous_secret'>;

/**
 * Up to `limit` endpoints after `afterId` (id order, deleted ones included) with a secret
 * (current or previous) that does not start with `sealedPrefix`: written before
 * encryption, or sealed under an earlier key.
 */
export async function listWebhookEndpointSecretsToReseal(
  db: Queryable,
  sealedPrefix: string,
  afterId: string | null,
  limit: number,
): Promise<Array<StoredEndpointSecrets & { id: string }>> {
  const { rows } = await db.query<StoredEndpointSecrets & { id: string }>(
    `SELECT id, secret, previous_secret FROM webhook_endpoints
      WHERE (left(secret, length($1)) <> $1 OR left(previous_secret, length($1)) <> $1) AND ($2::uuid IS NULL OR id > $2)
      ORDER BY id LIMIT $3`,
    [sealedPrefix, afterId, limit],
  );
  return rows;
}

/** Stores `to` as the endpoint's secrets if they are still `from` (a rotation or another process may have changed them). */
export async function replaceWebhookEndpointSecrets(db: Queryable, id: string, from: StoredEndpointSecrets, to: StoredEndpointSecrets): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET secret = $4, previous_secret = $5
      WHERE id = $1 AND secret = $2 AND previous_secret IS NOT DISTINCT FROM $3`,
    [id, from.secret, from.previous_secret, to.secret, to.previous_secret],
  );
  return (rowCount ?? 0) > 0;
}
