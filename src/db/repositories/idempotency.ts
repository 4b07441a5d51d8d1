import type { Queryable } from '../pool.js';

/** One idempotency key of a team on one endpoint ("POST /api/v1/create-contact"). */
export interface IdempotencyRecord {
  team_id: string;
  endpoint: string;
  idempotency_key: string;
  /** sha256 of the canonical request (path parameters, query, parsed body). */
  request_hash: string;
  state: 'in_progress' | 'done';
  /** The run that owns an in-progress record; only it may complete or release it. */
  attempt_id: string;
  locked_at: Date;
  response_status: number | null;
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

export interface IdempotencyClaim extends IdempotencyKeyRef {
  requestHash: string;
  attemptId: string;
  ttlSeconds: number;
  /** An in-progress record whose run started this long ago is taken over (crashed run). */
  staleAfterSeconds: number;
}

/**
 * Makes the caller the owner of the key, in one statement: a new key is inserted in
 * progress; an expired record is started afresh; an in-progress record of the same
 * request locked more than staleAfterSeconds ago is taken over (took_over true).
 * Anything else (a live record, done or still running) is left alone and undefined is
 * returned: read it with findIdempotencyKey. Concurrent claims of one key serialise on
 * the primary key, so exactly one of them wins.
 */
export async function claimIdempotencyKey(
  db: Queryable,
  claim: IdempotencyClaim,
): Promise<(IdempotencyRecord & { took_over: boolean }) | undefined> {
  const { rows } = await db.query<IdempotencyRecord & { took_over: boolean }>(
    `INSERT INTO idempotency_keys AS k
            (team_id, endpoint, idempotency_key, request_hash, state, attempt_id, locked_at, created_at, expires_at)
     VALUES ($1, $2, $3, $4, 'in_progress', $5, now(), now(), now() + make_interval(secs => $6))
     ON CONFLICT (team_id, endpoint, idempotency_key) DO UPDATE
        SET request_hash = EXCLUDED.request_hash,
            state = 'in_progress',
            attempt_id = EXCLUDED.attempt_id,
            locked_at = now(),
            created_at = CASE WHEN k.expires_at <= now() THEN now() ELSE k.created_at END,
            expires_at = CASE WHEN k.expires_at <= now() THEN EXCLUDED.expires_at ELSE k.expires_at END,
            response_status = NULL,
            response_body = NULL,
            response_headers = '{}'::jsonb
      WHERE k.expires_at <= now()
         OR (k.state = 'in_progress'
             AND k.request_hash = EXCLUDED.request_hash
             AND k.locked_at <= now() - make_interval(secs => $7))
     RETURNING k.*, (k.created_at <> k.locked_at) AS took_over`,
    [claim.teamId, claim.endpoint, claim.key, claim.requestHash, claim.attemptId, claim.ttlSeconds, claim.staleAfterSeconds],
  );
  return rows[0];
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
 * Keeps the response of the run that still owns the key. False when another run took
 * the key over meanwhile (its response is the one kept).
 */
export async function completeIdempotencyKey(
  db: Queryable,
  ref: IdempotencyKeyRef & { attemptId: string; status: number; body: string; headers: Record<string, string> },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys
        SET state = 'done', response_status = $5, response_body = $6, response_headers = $7::jsonb
      WHERE team_id = $1 AND endpoint = $2 AND idempotency_key = $3 AND attempt_id = $4 AND state = 'in_progress'`,
    [ref.teamId, ref.endpoint, ref.key, ref.attemptId, ref.status, ref.body, JSON.stringify(ref.headers)],
  );
  return (rowCount ?? 0) > 0;
}

/** Forgets a key whose request is not kept (400, 401, 403, 429, most 5xx), if this run still owns it. */
export async function releaseIdempotencyKey(db: Queryable, ref: IdempotencyKeyRef & { attemptId: string }): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys
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
