/**
 * The do-not-call list (src/db/migrations/1400_dialing_policy.sql, docs/calls.md "The
 * do-not-call list"): one row per (team, E.164 number). Every lookup is by primary key.
 */
import type { KeysetPosition } from '../../domain/cursor.js';
import type { Queryable } from '../pool.js';

export interface DoNotCallRecord {
  team_id: string;
  phone_number: string;
  seq: number;
  reason: string | null;
  source: 'api' | 'call';
  call_id: string | null;
  created_at: Date;
  /** created_at in epoch microseconds (for cursors); present on list queries. */
  created_us?: string;
}

/**
 * Puts a number on the team's list; an entry already there is kept as it is (its reason,
 * source and date are the first ones). `created` tells which.
 */
export async function insertDoNotCall(
  db: Queryable,
  teamId: string,
  entry: { phoneNumber: string; reason?: string | null; source: 'api' | 'call'; callId?: string | null },
): Promise<{ entry: DoNotCallRecord; created: boolean }> {
  const { rows } = await db.query<DoNotCallRecord>(
    `INSERT INTO do_not_call (team_id, phone_number, reason, source, call_id) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (team_id, phone_number) DO NOTHING
     RETURNING *`,
    [teamId, entry.phoneNumber, entry.reason ?? null, entry.source, entry.callId ?? null],
  );
  if (rows[0]) return { entry: rows[0], created: true };
  const existing = await findDoNotCall(db, teamId, entry.phoneNumber);
  // Deleted between the two statements: try once more, which inserts it.
  if (!existing) return insertDoNotCall(db, teamId, entry);
  return { entry: existing, created: false };
}

export async function findDoNotCall(db: Queryable, teamId: string, phoneNumber: string): Promise<DoNotCallRecord | undefined> {
  const { rows } = await db.query<DoNotCallRecord>('SELECT * FROM do_not_call WHERE team_id = $1 AND phone_number = $2', [teamId, phoneNumber]);
  return rows[0];
}

/** Whether the team's list holds the number (one index probe). */
export async function isOnDoNotCall(db: Queryable, teamId: string, phoneNumber: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM do_not_call WHERE team_id = $1 AND phone_number = $2', [teamId, phoneNumber]);
  return (rowCount ?? 0) > 0;
}

/** Which of the numbers are on the team's list. */
export async function numbersOnDoNotCall(db: Queryable, teamId: string, phoneNumbers: readonly string[]): Promise<Set<string>> {
  if (phoneNumbers.length === 0) return new Set();
  const { rows } = await db.query<{ phone_number: string }>(
    'SELECT phone_number FROM do_not_call WHERE team_id = $1 AND phone_number = ANY($2::text[])',
    [teamId, phoneNumbers],
  );
  return new Set(rows.map((r) => r.phone_number));
}

/** Takes a number off the list; false when it was not on it. */
export async function deleteDoNotCall(db: Queryable, teamId: string, phoneNumber: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM do_not_call WHERE team_id = $1 AND phone_number = $2', [teamId, phoneNumber]);
  return (rowCount ?? 0) > 0;
}

/** One page of the team's list, newest first, after `position` (keyset on created_at, seq), with the total. */
export async function listDoNotCall(
  db: Queryable,
  teamId: string,
  opts: { limit: number; position?: KeysetPosition },
): Promise<{ entries: DoNotCallRecord[]; total: number; hasMore: boolean }> {
  const params: unknown[] = [teamId];
  let after = '';
  if (opts.position) {
    params.push(opts.position.at);
    if (opts.position.seq === undefined) after = `AND created_at < $2::timestamptz`;
    else {
      params.push(opts.position.seq);
      after = `AND (created_at, seq) < ($2::timestamptz, $3::bigint)`;
    }
  }
  params.push(opts.limit + 1);
  const [page, count] = await Promise.all([
    db.query<DoNotCallRecord>(
      `SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us
         FROM do_not_call WHERE team_id = $1 ${after}
        ORDER BY created_at DESC, seq DESC LIMIT $${params.length}`,
      params,
    ),
    db.query<{ total: number }>('SELECT count(*)::int AS total FROM do_not_call WHERE team_id = $1', [teamId]),
  ]);
  return { entries: page.rows.slice(0, opts.limit), total: count.rows[0].total, hasMore: page.rows.length > opts.limit };
}
