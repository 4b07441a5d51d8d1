/**
 * The team concurrency ceiling (teams.max_concurrent, docs/calls.md), shared by phone calls
 * and web sessions.
 *
 * A slot is a concurrency_slots row held by a web session (holder_id = session id, live
 * while expires_at > now()) or by a call (holder_id = call id, live while the call is not
 * terminal). Liveness is derived from those facts, so a crashed worker, a lost activity or
 * an expired session never keeps a slot: explicit release only tidies up. Every
 * acquisition runs in one transaction that locks the team row (FOR NO KEY UPDATE, which
 * serialises acquisitions without blocking inserts that reference the team), so the count
 * it reads is exact under any concurrency.
 *
 * Phone calls never fail for lack of a slot: they are served in order of scheduled_time,
 * then creation, among the team's due calls that have no slot yet (whether or not their
 * workflow has asked yet); call_slot_waiters records the ones that asked and wait.
 */
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../pool.js';

const LIVE_SLOT = `(
  (s.kind = 'session' AND s.expires_at > clock_timestamp())
  OR (s.kind = 'call' AND EXISTS (SELECT 1 FROM calls c WHERE c.id = s.call_id AND c.status IN ('scheduled', 'in-progress')))
)`;

async function lockTeam(client: PoolClient, teamId: string): Promise<number | undefined> {
  const { rows } = await client.query<{ max_concurrent: number }>('SELECT max_concurrent FROM teams WHERE id = $1 FOR NO KEY UPDATE', [teamId]);
  return rows[0]?.max_concurrent;
}

/** Deletes the team's dead slots and waiters whose call no longer waits; returns the live slot count. */
async function liveSlotCount(client: Queryable, teamId: string): Promise<number> {
  await client.query(`DELETE FROM concurrency_slots s WHERE s.team_id = $1 AND NOT ${LIVE_SLOT}`, [teamId]);
  await client.query(
    `DELETE FROM call_slot_waiters w WHERE w.team_id = $1
        AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.id = w.call_id AND c.status = 'scheduled')`,
    [teamId],
  );
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM concurrency_slots s WHERE s.team_id = $1', [teamId]);
  return rows[0].n;
}

/** Live slots of a team right now (no lock; for reports and tests). */
export async function countLiveSlots(db: Queryable, teamId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM concurrency_slots s WHERE s.team_id = $1 AND ${LIVE_SLOT}`, [teamId]);
  return rows[0].n;
}

/**
 * A slot for a web session until `expiresAt`, if the team is below its ceiling. Asking
 * again for the same session answers granted without taking a second slot.
 */
export async function tryAcquireSessionSlot(
  db: Pool,
  teamId: string,
  sessionId: string,
  expiresAt: Date,
): Promise<{ granted: boolean; maxConcurrent: number }> {
  return withTransaction(db, async (client) => {
    const maxConcurrent = await lockTeam(client, teamId);
    if (maxConcurrent === undefined) throw new Error(`team ${teamId} not found`);
    const held = await client.query('SELECT 1 FROM concurrency_slots WHERE holder_id = $1', [sessionId]);
    if (held.rowCount) return { granted: true, maxConcurrent };
    const live = await liveSlotCount(client, teamId);
    if (live >= maxConcurrent) return { granted: false, maxConcurrent };
    await client.query(`INSERT INTO concurrency_slots (holder_id, team_id, kind, expires_at) VALUES ($1, $2, 'session', $3)`, [
      sessionId,
      teamId,
      expiresAt,
    ]);
    return { granted: true, maxConcurrent };
  });
}

/**
 * Passes a web session's slot to the call it became (redemption): the slot is then live
 * until that call is terminal. False when the session holds no slot (never granted, or
 * already expired and reclaimed). The call row must exist.
 */
export async function transferSessionSlotToCall(db: Queryable, sessionId: string, callId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE concurrency_slots SET holder_id = $2::text, kind = 'call', call_id = $2::uuid, expires_at = NULL
      WHERE holder_id = $1 AND kind = 'session'`,
    [sessionId, callId],
  );
  return (rowCount ?? 0) > 0;
}

/** Frees a slot held by a session id or a call id; returns the team whose slot it was. */
export async function releaseSlot(db: Queryable, holderId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ team_id: string }>('DELETE FROM concurrency_slots WHERE holder_id = $1 RETURNING team_id', [holderId]);
  return rows[0]?.team_id;
}

export type CallSlotResult =
  | { granted: true; maxConcurrent: number }
  | { granted: false; reason: 'waiting'; position: number; maxConcurrent: number }
  | { granted: false; reason: 'not_scheduled'; status: string };

/**
 * The call-side acquire, first come first served: registers the call as a waiter and
 * grants it a slot when fewer due calls are ahead of it than there are free slots. Calling
 * it again is safe: a call that already holds its slot is granted again, and a call that
 * is no longer scheduled (cancelled meanwhile) is told so and leaves the queue.
 */
export async function acquireCallSlot(db: Pool, teamId: string, callId: string): Promise<CallSlotResult> {
  return withTransaction(db, async (client) => {
    const maxConcurrent = await lockTeam(client, teamId);
    if (maxConcurrent === undefined) throw new Error(`team ${teamId} not found`);
    const { rows: calls } = await client.query<{ status: string }>('SELECT status FROM calls WHERE id = $1 AND team_id = $2', [callId, teamId]);
    if (!calls[0]) throw new Error(`call ${callId} not found`);
    const held = await client.query('SELECT 1 FROM concurrency_slots WHERE call_id = $1', [callId]);
    if (held.rowCount && calls[0].status !== 'scheduled' && calls[0].status !== 'in-progress') {
      await client.query('DELETE FROM concurrency_slots WHERE call_id = $1', [callId]);
    }
    if (calls[0].status !== 'scheduled') {
      await client.query('DELETE FROM call_slot_waiters WHERE call_id = $1', [callId]);
      if (calls[0].status === 'in-progress' && held.rowCount) return { granted: true, maxConcurrent };
      return { granted: false, reason: 'not_scheduled', status: calls[0].status };
    }
    if (held.rowCount) return { granted: true, maxConcurrent };
    await client.query('INSERT INTO call_slot_waiters (call_id, team_id) VALUES ($1, $2) ON CONFLICT (call_id) DO NOTHING', [callId, teamId]);
    const live = await liveSlotCount(client, teamId);
    // Ahead of this call: every due phone call of the team scheduled before it (then created
    // before it) that has no slot yet, whether or not its workflow has asked yet.
    const { rows: ahead } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n
         FROM calls c JOIN calls me ON me.id = $2
        WHERE c.team_id = $1 AND c.status = 'scheduled' AND c.type <> 'web' AND c.id <> $2
          AND c.scheduled_time <= clock_timestamp()
          AND (c.scheduled_time, c.seq) < (me.scheduled_time, me.seq)
          AND NOT EXISTS (SELECT 1 FROM concurrency_slots s WHERE s.call_id = c.id)`,
      [teamId, callId],
    );
    const position = ahead[0].n;
    if (position >= maxConcurrent - live) return { granted: false, reason: 'waiting', position, maxConcurrent };
    await client.query(`INSERT INTO concurrency_slots (holder_id, team_id, kind, call_id) VALUES ($1::text, $2, 'call', $1::uuid)`, [callId, teamId]);
    await client.query('DELETE FROM call_slot_waiters WHERE call_id = $1', [callId]);
    return { granted: true, maxConcurrent };
  });
}

/**
 * The due calls of a team that the free slots could serve now, first in line first: the
 * ones to wake after a release. No lock: the acquire itself decides.
 */
export async function slotWaitersToWake(db: Queryable, teamId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH free AS (
       SELECT t.max_concurrent - (SELECT count(*) FROM concurrency_slots s WHERE s.team_id = t.id AND ${LIVE_SLOT}) AS n
         FROM teams t WHERE t.id = $1)
     SELECT c.id FROM calls c
      WHERE c.team_id = $1 AND c.status = 'scheduled' AND c.type <> 'web' AND c.scheduled_time <= clock_timestamp()
        AND NOT EXISTS (SELECT 1 FROM concurrency_slots s WHERE s.call_id = c.id)
      ORDER BY c.scheduled_time, c.seq
      LIMIT GREATEST((SELECT n FROM free), 0)`,
    [teamId],
  );
  return rows.map((r) => r.id);
}
