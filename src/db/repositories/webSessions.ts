/**
 * Web sessions (src/db/migrations/0600_web_sessions.sql): the read model of the session
 * workflows and the token → session lookup. Status moves only minted → used or
 * minted → expired, each by a conditional update, so a retried activity writes once.
 */
import type { Queryable } from '../pool.js';

export type WebSessionStatus = 'minted' | 'used' | 'expired';

export interface WebSessionRecord {
  id: string;
  team_id: string;
  token_hash: string;
  script_id: string;
  contact_id: string;
  did: string | null;
  participant_identity: string | null;
  objects: Record<string, Record<string, unknown>> | null;
  status: WebSessionStatus;
  expires_at: Date;
  call_id: string | null;
  created_at: Date;
  used_at: Date | null;
  expired_at: Date | null;
}

export interface NewWebSession {
  id: string;
  teamId: string;
  tokenHash: string;
  scriptId: string;
  contactId: string;
  did: string | null;
  participantIdentity: string | null;
  objects: Record<string, Record<string, unknown>> | null;
  expiresAt: Date;
}

/**
 * Writes a minted session. The same id again (a retried request under an Idempotency-Key
 * whose first attempt never answered) replaces the token of a still-minted session, since
 * that first token was never handed out; false when the id is taken otherwise.
 */
export async function insertWebSession(db: Queryable, s: NewWebSession): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO web_sessions (id, team_id, token_hash, script_id, contact_id, did, participant_identity, objects, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (id) DO UPDATE SET token_hash = EXCLUDED.token_hash, expires_at = EXCLUDED.expires_at
       WHERE web_sessions.status = 'minted' AND web_sessions.team_id = EXCLUDED.team_id`,
    [s.id, s.teamId, s.tokenHash, s.scriptId, s.contactId, s.did, s.participantIdentity, s.objects === null ? null : JSON.stringify(s.objects), s.expiresAt],
  );
  return (rowCount ?? 0) > 0;
}

export async function findWebSessionById(db: Queryable, sessionId: string): Promise<WebSessionRecord | undefined> {
  const { rows } = await db.query<WebSessionRecord>('SELECT * FROM web_sessions WHERE id = $1', [sessionId]);
  return rows[0];
}

export async function findWebSessionByTokenHash(db: Queryable, tokenHash: string): Promise<WebSessionRecord | undefined> {
  const { rows } = await db.query<WebSessionRecord>('SELECT * FROM web_sessions WHERE token_hash = $1', [tokenHash]);
  return rows[0];
}

/** minted → used with its call; returns the row as it is afterwards (used by this or an earlier attempt). */
export async function markWebSessionUsed(db: Queryable, sessionId: string, callId: string): Promise<WebSessionRecord | undefined> {
  const { rows } = await db.query<WebSessionRecord>(
    `UPDATE web_sessions SET status = 'used', call_id = $2, used_at = now()
      WHERE id = $1 AND status = 'minted'
      RETURNING *`,
    [sessionId, callId],
  );
  return rows[0] ?? findWebSessionById(db, sessionId);
}

/** minted → expired; returns the row when this call moved it, undefined otherwise. */
export async function markWebSessionExpired(db: Queryable, sessionId: string): Promise<WebSessionRecord | undefined> {
  const { rows } = await db.query<WebSessionRecord>(
    `UPDATE web_sessions SET status = 'expired', expired_at = now() WHERE id = $1 AND status = 'minted' RETURNING *`,
    [sessionId],
  );
  return rows[0];
}

/** Sessions still minted `graceMs` after their expiry: their workflow, which expires them, never started. */
export async function findAbandonedWebSessions(db: Queryable, graceMs: number, limit: number): Promise<Array<{ id: string; team_id: string }>> {
  const { rows } = await db.query<{ id: string; team_id: string }>(
    `SELECT id, team_id FROM web_sessions
      WHERE status = 'minted' AND expires_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY expires_at LIMIT $2`,
    [graceMs, limit],
  );
  return rows;
}

/** Sessions of a team by status (for reports and tests). */
export async function countTeamWebSessions(db: Queryable, teamId: string): Promise<Record<WebSessionStatus, number>> {
  const { rows } = await db.query<{ status: WebSessionStatus; n: number }>(
    'SELECT status, count(*)::int AS n FROM web_sessions WHERE team_id = $1 GROUP BY status',
    [teamId],
  );
  const counts: Record<WebSessionStatus, number> = { minted: 0, used: 0, expired: 0 };
  for (const r of rows) counts[r.status] = r.n;
  return counts;
}
