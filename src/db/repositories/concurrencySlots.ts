/**
 * The team concurrency ceiling (teams.max_concurrent, docs/calls.md), shared by phone calls
 * and web sessions, and the line of phone calls waiting for it.
 *
 * A slot is a concurrency_slots row held by a web session (holder_id = session id, live
 * while expires_at > now()) or by a call (holder_id = call id, live while the call is not
 * terminal). Liveness is derived from those facts, so a crashed worker, a lost activity or
 * an expired session never keeps a slot: a team at its ceiling reclaims its dead slots
 * before it refuses one. Every change locks the team's team_slots row, which also counts
 * the team's slots, so the ceiling is exact under any concurrency and checking it costs the
 * same at any size.
 *
 * Phone calls never fail for lack of a slot: the line is the team's due phone calls still
 * scheduled without a slot, in order of scheduled_time, then creation, whether or not their
 * workflow has asked yet. Free slots are granted from the head of the line: by the request
 * of a call (to the calls ahead of it first), and by every release, which hands the freed
 * slot straight to the next call. A granted call leaves the line (calls.slot_granted_at), so
 * each grant is O(1) however long the line is. The SQL is in the migration
 * 1300_slot_dispatcher.sql; src/services/callSlots.ts wakes the waiting calls a grant names.
 */
import type { Pool, Queryable } from '../pool.js';

const LIVE_SLOT = `(
  (s.kind = 'session' AND s.expires_at > clock_timestamp())
  OR (s.kind = 'call' AND EXISTS (SELECT 1 FROM calls c WHERE c.id = s.call_id AND c.status IN ('scheduled', 'in-progress')))
)`;

/** Live slots of a team right now (no lock; for reports and tests). */
export async function countLiveSlots(db: Queryable, teamId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM concurrency_slots s WHERE s.team_id = $1 AND ${LIVE_SLOT}`, [teamId]);
  return rows[0].n;
}

/** The team's slot count as kept in team_slots (live and not yet reclaimed dead slots). */
export async function countedSlots(db: Queryable, teamId: string): Promise<number> {
  const { rows } = await db.query<{ in_use: number }>('SELECT in_use FROM team_slots WHERE team_id = $1', [teamId]);
  return rows[0]?.in_use ?? 0;
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
  const { rows } = await db.query<{ granted: boolean; max_slots: number }>('SELECT granted, max_slots FROM acquire_session_slot($1, $2, $3)', [teamId, sessionId, expiresAt]);
  return { granted: rows[0].granted, maxConcurrent: rows[0].max_slots };
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

/**
 * Frees a slot held by a session id or a call id, without handing it on; returns the team
 * whose slot it was. Waiting calls get it at the next grant (releaseSlotAndGrant wakes them
 * now: prefer it, through src/services/callSlots.ts).
 */
export async function releaseSlot(db: Queryable, holderId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ released_team: string | null }>('SELECT released_team FROM release_slot($1, false)', [holderId]);
  return rows[0].released_team ?? undefined;
}

/** Frees a slot and hands the team's free slots to its line: the team and the waiting calls granted. */
export async function releaseSlotAndGrant(db: Queryable, holderId: string): Promise<{ teamId?: string; woken: string[] }> {
  const { rows } = await db.query<{ released_team: string | null; woken: string[] }>('SELECT released_team, woken FROM release_slot($1, true)', [holderId]);
  return { teamId: rows[0].released_team ?? undefined, woken: rows[0].woken };
}

/** Hands the team's free slots to its line; returns the waiting calls granted. */
export async function grantFreeSlots(db: Queryable, teamId: string): Promise<string[]> {
  const { rows } = await db.query<{ woken: string[] }>('SELECT woken FROM grant_free_slots($1)', [teamId]);
  return rows[0].woken;
}

export type CallSlotRequest =
  | { outcome: 'granted'; status: string; maxConcurrent: number; woken: string[] }
  | { outcome: 'waiting'; status: 'scheduled'; maxConcurrent: number; woken: string[] }
  | { outcome: 'not_scheduled'; status: string; maxConcurrent: number; woken: string[] };

/**
 * The call-side request, first come first served: grants the call a slot when the free
 * slots reach it in line (after the calls ahead of it), else it waits (progress
 * waiting_for_slot) until a release hands it one. Calling it again is safe: a call that
 * holds its slot, or is in progress, is granted again; a call that is no longer scheduled
 * (cancelled meanwhile) is told so and gives back a slot it held. `woken` names the waiting
 * calls this request granted on the way.
 */
export async function requestCallSlot(db: Queryable, teamId: string, callId: string): Promise<CallSlotRequest> {
  const { rows } = await db.query<{ outcome: CallSlotRequest['outcome']; call_status: string; max_slots: number; woken: string[] }>(
    'SELECT outcome, call_status, max_slots, woken FROM request_call_slot($1, $2)',
    [teamId, callId],
  );
  const r = rows[0];
  return { outcome: r.outcome, status: r.call_status, maxConcurrent: r.max_slots, woken: r.woken } as CallSlotRequest;
}

/**
 * Teams with calls whose workflow waits in line (the reconciler hands them any free slot),
 * except teams with due calls sleeping in the admission line: their free slots are the
 * admission pacer's to hand out at its rate, not all at once.
 */
export async function teamsWithWaitingCalls(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ team_id: string }>(
    `SELECT DISTINCT w.team_id FROM calls w
      WHERE w.status = 'scheduled' AND w.type <> 'web' AND w.slot_granted_at IS NULL AND w.progress = 'waiting_for_slot'
        AND NOT EXISTS (
          SELECT 1 FROM calls s
           WHERE s.team_id = w.team_id AND s.status = 'scheduled' AND s.type <> 'web' AND s.slot_granted_at IS NULL
             AND s.wakes_on_grant AND COALESCE(s.dial_after, s.scheduled_time) <= now())`,
  );
  return rows.map((r) => r.team_id);
}

/**
 * Calls granted a slot more than `olderThanMs` ago whose workflow has not taken it yet
 * (still waiting in line, or sleeping in the admission line): their wake-up may have been lost.
 */
export async function grantsNotTaken(db: Queryable, olderThanMs: number, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT c.id FROM concurrency_slots s JOIN calls c ON c.id = s.call_id
      WHERE s.kind = 'call' AND c.status = 'scheduled' AND (c.progress = 'waiting_for_slot' OR c.wakes_on_grant)
        AND c.slot_granted_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY c.slot_granted_at LIMIT $2`,
    [olderThanMs, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * Teams with due calls in line and a free slot, the longest-waiting head first (at most
 * `limit`; migration 1600_admission_line.sql): where the admission pacer hands out slots.
 */
export async function admissionLineTeams(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ team_id: string }>('SELECT team_id FROM admission_line_teams($1)', [limit]);
  return rows.map((r) => r.team_id);
}

/**
 * Hands up to `limit` of the team's free slots to the head of its line: the calls granted,
 * in line order, and those among them whose workflow must be woken.
 */
export async function admitFromLine(db: Queryable, teamId: string, limit: number): Promise<{ granted: string[]; woken: string[] }> {
  const { rows } = await db.query<{ granted_call: string; to_wake: boolean }>('SELECT granted_call, to_wake FROM admit_from_line($1, $2)', [teamId, limit]);
  return { granted: rows.map((r) => r.granted_call), woken: rows.filter((r) => r.to_wake).map((r) => r.granted_call) };
}

/**
 * Takes the team's slot lock for the rest of the caller's transaction (the order every slot
 * change takes): the team's ceiling and the slots it holds, dead slots reclaimed first when
 * at the ceiling. With addCallSlot, a call that must start now or not at all (an inbound call).
 */
export async function lockTeamSlots(tx: Queryable, teamId: string): Promise<{ maxSlots: number; used: number }> {
  const { rows } = await tx.query<{ max_slots: number; used: number }>('SELECT max_slots, used FROM slots_lock_team($1)', [teamId]);
  return { maxSlots: rows[0].max_slots, used: rows[0].used };
}

/**
 * A slot for the call, in the transaction that holds the team's lock (lockTeamSlots) and
 * found it below the ceiling; the call row exists in that transaction.
 */
export async function addCallSlot(tx: Queryable, teamId: string, callId: string): Promise<void> {
  await tx.query(`INSERT INTO concurrency_slots (holder_id, team_id, kind, call_id) VALUES ($2::text, $1, 'call', $2::uuid)`, [teamId, callId]);
  await tx.query('UPDATE team_slots SET in_use = in_use + 1 WHERE team_id = $1', [teamId]);
  await tx.query('UPDATE calls SET slot_granted_at = now() WHERE id = $1', [callId]);
}

/** Live slots per team, for teams holding any (the slots gauge of docs/observability.md). */
export async function liveSlotsByTeam(db: Queryable): Promise<{ team_id: string; n: number }[]> {
  const { rows } = await db.query<{ team_id: string; n: number }>(
    `SELECT s.team_id, count(*)::int AS n FROM concurrency_slots s WHERE ${LIVE_SLOT} GROUP BY s.team_id`,
  );
  return rows;
}

/**
 * Due phone calls per team waiting in line for a slot: those whose workflow asked (progress
 * waiting_for_slot) and those sleeping in the admission line past their due time.
 */
export async function waitingCallsByTeam(db: Queryable): Promise<{ team_id: string; n: number }[]> {
  const { rows } = await db.query<{ team_id: string; n: number }>(
    `SELECT team_id, count(*)::int AS n FROM calls
      WHERE status = 'scheduled' AND type <> 'web' AND slot_granted_at IS NULL
        AND (progress = 'waiting_for_slot' OR (wakes_on_grant AND COALESCE(dial_after, scheduled_time) <= now()))
      GROUP BY team_id`,
  );
  return rows;
}
