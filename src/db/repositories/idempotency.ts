import type { Queryable } from '../pool.js';

/** One idempotency key of a team on one endpoint ("POST /api/v1/create-contact"). */
export interface IdempotencyRecord {
  team_id: string;
  endpoint: string;
  idempotency_key: string;
  /** sha256 of the canonical request (path parameters, query, parsed body). */
  request_hash: string;
  /** released: the answer was not kept; the next request with the key claims it again. */
  state: 'in_progress' | 'done' | 'released';
  /** The run that owns an in-progress record; only it may complete or release it. */
  attempt_id: string;
  locked_at: Date;
  response_status: number | null;
  /** The kept body as stored: sealed by the middleware's SecretBox (plaintext in records kept before that). */
  response_body: string | null;
  response_headers: Record<string, string>;
  created_at: Date;
  expires_at: Date;
}

export interface IdempotencyKeyRef {
  teamId: string;
  endpoint: string;
  key: string;
}

/** A request asking to own a key. */
export interface IdempotencyClaim extends IdempotencyKeyRef {
  requestHash: string;
  attemptId: string;
}

/** The response of the run that owns a key, to be kept. */
export interface IdempotencyCompletion extends IdempotencyKeyRef {
  attemptId: string;
  status: number;
  /** The body as it is to be stored (the middleware seals it). */
  body: string;
  headers: Record<string, string>;
}

export interface IdempotencyTiming {
  ttlSeconds: number;
  /** An in-progress record whose run started this long ago is taken over (crashed run). */
  staleAfterSeconds: number;
}

export interface ClaimedKey {
  /**
   * When the record was created: kept when a released or stale record is claimed again,
   * new when the key is new or its record had expired. The request's deterministic
   * resource id is derived from it.
   */
  createdAt: Date;
  /** An existing record was claimed again (its run released the key, or went stale). */
  reclaimed: boolean;
}

export interface IdempotencyBatchResult {
  /** Claims that won, by attempt id. */
  claimed: Map<string, ClaimedKey>;
  /** Completions kept, by attempt id (missing: another run took the key over meanwhile). */
  kept: Set<string>;
}

function compareRefs(a: IdempotencyKeyRef, b: IdempotencyKeyRef): number {
  const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
  return cmp(a.teamId, b.teamId) || cmp(a.endpoint, b.endpoint) || cmp(a.key, b.key);
}

/**
 * Claims and completions of many requests in one call of idempotency_batch() (migration
 * 1003): one round trip, one commit, a primary-key statement per item.
 *
 * A claim makes its caller the owner of the key: a new key is inserted in progress; an
 * expired record is started afresh; a released record, or an in-progress record of the
 * same request locked more than staleAfterSeconds ago, is claimed again (keeping its
 * created_at). Anything else (a live record, done or still running) is left alone and
 * the claim is absent from `claimed`: read the record with findIdempotencyKey. Concurrent
 * claims of one key serialise on the primary key, so exactly one of them wins.
 *
 * A completion keeps the response of a run that still owns its key.
 *
 * A key may appear at most once in a batch (claims and completions together). Claims are
 * written in key order; two batches that still lock rows in opposite orders (a completion
 * against a claim) deadlock, and Postgres aborts one of them with 40P01, which the caller
 * may simply send again.
 */
export async function runIdempotencyBatch(
  db: Queryable,
  batch: { claims: IdempotencyClaim[]; completions: IdempotencyCompletion[] },
  timing: IdempotencyTiming,
): Promise<IdempotencyBatchResult> {
  const { completions } = batch;
  // Key order, so that concurrent batches lock rows in the same order.
  const claims = [...batch.claims].sort((a, b) => compareRefs(a, b));
  const { rows } = await db.query<{ claim: boolean; attempt_id: string; created_at: Date | null; reclaimed: boolean | null }>({
    name: 'idempotency-batch',
    text: `SELECT out_claim AS claim, out_attempt_id AS attempt_id, out_created_at AS created_at, out_reclaimed AS reclaimed
             FROM idempotency_batch($1::uuid[], $2::text[], $3::text[], $4::text[], $5::uuid[], $6, $7,
                                    $8::uuid[], $9::text[], $10::text[], $11::uuid[], $12::int[], $13::text[], $14::jsonb[])`,
    values: [
      claims.map((c) => c.teamId),
      claims.map((c) => c.endpoint),
      claims.map((c) => c.key),
      claims.map((c) => c.requestHash),
      claims.map((c) => c.attemptId),
      timing.ttlSeconds,
      timing.staleAfterSeconds,
      completions.map((c) => c.teamId),
      completions.map((c) => c.endpoint),
      completions.map((c) => c.key),
      completions.map((c) => c.attemptId),
      completions.map((c) => c.status),
      completions.map((c) => c.body),
      completions.map((c) => JSON.stringify(c.headers)),
    ],
  });
  const result: IdempotencyBatchResult = { claimed: new Map(), kept: new Set() };
  for (const row of rows) {
    if (row.claim) result.claimed.set(row.attempt_id, { createdAt: row.created_at!, reclaimed: row.reclaimed! });
    else result.kept.add(row.attempt_id);
  }
  return result;
}

/** One claim on its own (see runIdempotencyBatch): undefined when a live record exists. */
export async function claimIdempotencyKey(db: Queryable, claim: IdempotencyClaim & IdempotencyTiming): Promise<ClaimedKey | undefined> {
  return (await runIdempotencyBatch(db, { claims: [claim], completions: [] }, claim)).claimed.get(claim.attemptId);
}

/** The unexpired record of a key, if any. */
export async function findIdempotencyKey(db: Queryable, ref: IdempotencyKeyRef): Promise<IdempotencyRecord | undefined> {
  const { rows } = await db.query<IdempotencyRecord>(
    `SELECT * FROM idempotency_keys
      WHERE team_id = $1 AND endpoint = $2 AND idempotency_key = $3 AND expires_at > now()`,
    [ref.teamId, ref.endpoint, ref.key],
  );
  return rows[0];
}

/**
 * Marks a key whose answer is not kept (400, 401, 403, 429, a 5xx before any change) as
 * released, if this run still owns it: the next request with the key runs.
 */
export async function releaseIdempotencyKey(db: Queryable, ref: IdempotencyKeyRef & { attemptId: string }): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys SET state = 'released'
      WHERE team_id = $1 AND endpoint = $2 AND idempotency_key = $3 AND attempt_id = $4 AND state = 'in_progress'`,
    [ref.teamId, ref.endpoint, ref.key, ref.attemptId],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Deletes at most `limit` expired records, oldest first, through the expires_at index
 * (never a full-table scan); rows locked by a concurrent claim are skipped. Returns how
 * many were deleted: a full batch means more may remain.
 */
export async function pruneExpiredIdempotencyKeys(db: Queryable, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys
      WHERE ctid = ANY (ARRAY(
              SELECT ctid FROM idempotency_keys
               WHERE expires_at <= now()
               ORDER BY expires_at
               LIMIT $1
               FOR UPDATE SKIP LOCKED))`,
    [limit],
  );
  return rowCount ?? 0;
}
