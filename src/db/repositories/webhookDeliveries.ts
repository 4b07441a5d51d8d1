/**
 * Event webhook events, deliveries and attempts (src/db/migrations/1200_event_webhooks.sql).
 *
 * An event is inserted in the transaction of the change that caused it, with one delivery
 * per enabled endpoint of the team that subscribes to its type, in one statement. The event
 * id is derived from the entity and the type and the insert does nothing when it exists, so
 * recording the same change twice (a retried activity, a restarted worker) makes neither a
 * second event nor a second delivery.
 */
import type { KeysetPosition } from '../../domain/cursor.js';
import type { WebhookDeliveryStatus } from '../../domain/webhookEvents.js';
import type { Queryable } from '../pool.js';

export interface NewWebhookEvent {
  id: string;
  teamId: string;
  type: string;
  callId: string | null;
  /** The JSON text sent as the body of every delivery of the event. */
  payload: string;
  createdAt: Date;
}

/** What starting a delivery's workflow needs. */
export interface DeliveryToStart {
  id: string;
  team_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  call_id: string | null;
}

const TO_START_COLUMNS = 'id, team_id, endpoint_id, event_id, event_type, call_id';

/**
 * Records the event and one delivery per subscribed endpoint, in one statement (no rows at
 * all when nobody subscribes). Returns the deliveries made now: none when the event existed.
 */
export async function insertWebhookEvent(db: Queryable, event: NewWebhookEvent): Promise<DeliveryToStart[]> {
  const { rows } = await db.query<DeliveryToStart>(
    `WITH subscribers AS (
       SELECT id FROM webhook_endpoints
        WHERE team_id = $2 AND enabled AND deleted_at IS NULL AND (events IS NULL OR $3 = ANY (events))
     ), event AS (
       INSERT INTO webhook_events (id, team_id, type, call_id, payload, created_at)
       SELECT $1, $2, $3, $4, $5::json, $6 WHERE EXISTS (SELECT 1 FROM subscribers)
       ON CONFLICT (id) DO NOTHING
       RETURNING id, team_id, type, call_id
     )
     INSERT INTO webhook_deliveries (team_id, endpoint_id, event_id, event_type, call_id)
     SELECT e.team_id, s.id, e.id, e.type, e.call_id FROM event e CROSS JOIN subscribers s
     RETURNING ${TO_START_COLUMNS}`,
    [event.id, event.teamId, event.type, event.callId, event.payload, event.createdAt],
  );
  return rows;
}

export interface WebhookDeliveryRecord {
  id: string;
  seq: number;
  team_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  call_id: string | null;
  redelivery_of: string | null;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
  workflow_started_at: Date | null;
  /** created_at in epoch microseconds (for cursors); present on list queries. */
  created_us?: string;
}

export interface WebhookAttemptRecord {
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
}

/** A redelivery of the team's delivery `originalId`: a new pending delivery of the same event to the same endpoint. */
export async function insertRedelivery(db: Queryable, teamId: string, originalId: string, newId: string): Promise<DeliveryToStart | undefined> {
  const { rows } = await db.query<DeliveryToStart>(
    `INSERT INTO webhook_deliveries (id, team_id, endpoint_id, event_id, event_type, call_id, redelivery_of)
     SELECT $3, team_id, endpoint_id, event_id, event_type, call_id, id FROM webhook_deliveries WHERE team_id = $1 AND id = $2
     ON CONFLICT (id) DO NOTHING
     RETURNING ${TO_START_COLUMNS}`,
    [teamId, originalId, newId],
  );
  if (rows[0]) return rows[0];
  // The same id again (an idempotent retry): the redelivery made the first time.
  const { rows: existing } = await db.query<DeliveryToStart>(
    `SELECT ${TO_START_COLUMNS} FROM webhook_deliveries WHERE team_id = $1 AND id = $2 AND redelivery_of = $3`,
    [teamId, newId, originalId],
  );
  return existing[0];
}

export async function findTeamWebhookDelivery(db: Queryable, teamId: string, id: string): Promise<WebhookDeliveryRecord | undefined> {
  const { rows } = await db.query<WebhookDeliveryRecord>('SELECT * FROM webhook_deliveries WHERE team_id = $1 AND id = $2', [teamId, id]);
  return rows[0];
}

/** The event's payload (the parsed JSON body) and the delivery's attempts, oldest first. */
export async function webhookDeliveryDetail(db: Queryable, delivery: WebhookDeliveryRecord): Promise<{ payload: unknown; attempts: WebhookAttemptRecord[] }> {
  const [event, attempts] = await Promise.all([
    db.query<{ payload: unknown }>('SELECT payload FROM webhook_events WHERE id = $1', [delivery.event_id]),
    db.query<WebhookAttemptRecord>(
      'SELECT attempt, attempted_at, status_code, latency_ms, error FROM webhook_delivery_attempts WHERE delivery_id = $1 ORDER BY attempt',
      [delivery.id],
    ),
  ]);
  return { payload: event.rows[0]?.payload ?? null, attempts: attempts.rows };
}

export interface DeliveryListFilter {
  endpointId?: string;
  eventType?: string;
  callId?: string;
  status?: string;
}

/** One page of the team's deliveries, newest first, after `position` (keyset on created_at, seq). */
export async function listTeamWebhookDeliveries(
  db: Queryable,
  teamId: string,
  opts: DeliveryListFilter & { limit: number; position?: KeysetPosition },
): Promise<{ deliveries: WebhookDeliveryRecord[]; hasMore: boolean }> {
  const where = ['team_id = $1'];
  const params: unknown[] = [teamId];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (opts.endpointId) add('endpoint_id = ?', opts.endpointId);
  if (opts.eventType) add('event_type = ?', opts.eventType);
  if (opts.callId) add('call_id = ?', opts.callId);
  if (opts.status) add('status = ?', opts.status);
  if (opts.position) {
    params.push(opts.position.at);
    const at = `$${params.length}::timestamptz`;
    if (opts.position.seq === undefined) {
      where.push(`created_at < ${at}`);
    } else {
      params.push(opts.position.seq);
      where.push(`(created_at, seq) < (${at}, $${params.length}::bigint)`);
    }
  }
  params.push(opts.limit + 1);
  const { rows } = await db.query<WebhookDeliveryRecord>(
    `SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us
       FROM webhook_deliveries WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, seq DESC
      LIMIT $${params.length}`,
    params,
  );
  return { deliveries: rows.slice(0, opts.limit), hasMore: rows.length > opts.limit };
}

/** Everything an attempt needs: the delivery, its event's body and its endpoint with the secrets valid now. */
export interface DeliveryToSend {
  id: string;
  team_id: string;
  status: WebhookDeliveryStatus;
  event_id: string;
  event_type: string;
  /** The event's JSON text, exactly as recorded. */
  body: string;
  endpoint_id: string;
  url: string;
  endpoint_enabled: boolean;
  endpoint_deleted: boolean;
  /** Newest first: the current secret, then the rotated one while it is still valid; as stored (sealed). */
  secrets: string[];
}

export async function findDeliveryToSend(db: Queryable, deliveryId: string): Promise<DeliveryToSend | undefined> {
  const { rows } = await db.query<DeliveryToSend>(
    `SELECT d.id, d.team_id, d.status, d.event_id, d.event_type, ev.payload::text AS body,
            ep.id AS endpoint_id, ep.url, ep.enabled AS endpoint_enabled, ep.deleted_at IS NOT NULL AS endpoint_deleted,
            CASE WHEN ep.previous_secret IS NOT NULL AND ep.previous_secret_expires_at > now()
                 THEN ARRAY[ep.secret, ep.previous_secret] ELSE ARRAY[ep.secret] END AS secrets
       FROM webhook_deliveries d
       JOIN webhook_events ev ON ev.id = d.event_id
       JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
      WHERE d.id = $1`,
    [deliveryId],
  );
  return rows[0];
}

export interface AttemptOutcome {
  attempt: number;
  attemptedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  /** The delivery's status after this attempt. */
  status: WebhookDeliveryStatus;
  /** When the next attempt is due (status retrying), else null. */
  nextAttemptAt: Date | null;
}

/**
 * Records attempt n (again: the same values replace it) and the delivery's status after it.
 * A delivery already succeeded or failed keeps its status.
 */
export async function recordDeliveryAttempt(db: Queryable, deliveryId: string, o: AttemptOutcome): Promise<void> {
  await db.query(
    `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, attempted_at, status_code, latency_ms, error)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (delivery_id, attempt) DO UPDATE
       SET attempted_at = EXCLUDED.attempted_at, status_code = EXCLUDED.status_code, latency_ms = EXCLUDED.latency_ms, error = EXCLUDED.error`,
    [deliveryId, o.attempt, o.attemptedAt, o.statusCode, Math.round(o.latencyMs), o.error],
  );
  await db.query(
    `UPDATE webhook_deliveries SET
        status = $2, attempts = GREATEST(attempts, $3), last_status_code = $4, last_error = $5, next_attempt_at = $6,
        delivered_at = CASE WHEN $2 = 'succeeded' THEN COALESCE(delivered_at, $7) ELSE delivered_at END
      WHERE id = $1 AND status IN ('pending', 'retrying')`,
    [deliveryId, o.status, o.attempt, o.statusCode, o.error, o.nextAttemptAt, o.attemptedAt],
  );
}

/** Ends a delivery without an attempt (its endpoint was deleted or disabled meanwhile). */
export async function failDelivery(db: Queryable, deliveryId: string, error: string): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET status = 'failed', last_error = $2, next_attempt_at = NULL WHERE id = $1 AND status IN ('pending', 'retrying')`,
    [deliveryId, error],
  );
}

export async function markDeliveryWorkflowsStarted(db: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query('UPDATE webhook_deliveries SET workflow_started_at = COALESCE(workflow_started_at, now()) WHERE id = ANY($1::uuid[])', [ids]);
}

/** Open deliveries older than `olderThanMs` whose workflow was never confirmed started. */
export async function findDeliveriesWithoutWorkflow(db: Queryable, olderThanMs: number, limit: number): Promise<DeliveryToStart[]> {
  const { rows } = await db.query<DeliveryToStart>(
    `SELECT ${TO_START_COLUMNS} FROM webhook_deliveries
      WHERE workflow_started_at IS NULL AND status IN ('pending', 'retrying')
        AND created_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY created_at LIMIT $2`,
    [olderThanMs, limit],
  );
  return rows;
}

/**
 * Open deliveries with a started workflow that should have moved by now: pending for longer
 * than `staleMs`, or retrying more than `staleMs` past their next attempt.
 */
export async function findStaleDeliveries(db: Queryable, staleMs: number, limit: number): Promise<{ id: string }[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries
      WHERE status IN ('pending', 'retrying') AND workflow_started_at IS NOT NULL
        AND COALESCE(next_attempt_at, created_at) < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY created_at LIMIT $2`,
    [staleMs, limit],
  );
  return rows;
}
