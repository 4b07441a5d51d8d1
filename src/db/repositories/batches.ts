/**
 * Batches, their intake (batch_contacts) and progress counters (batch_counts); see
 * src/db/migrations/0900_batches.sql and docs/batches.md. Every state change of a
 * batch_contacts row is a conditional update that moves its counters in the same
 * transaction, so the counters stay exact under retries and concurrent ticks.
 */
import type { Queryable } from '../pool.js';
import type { CallingWindow } from '../../domain/callingWindows.js';
import { isUuid } from '../../domain/ids.js';
import type { RetryPolicy } from '../../domain/retryPolicy.js';

export const BATCH_STATUSES = ['scheduled', 'running', 'paused', 'completed', 'cancelled', 'failed'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
/** Statuses a batch can still leave; its workflow runs while the batch has one of them. */
export const ACTIVE_BATCH_STATUSES: readonly BatchStatus[] = ['scheduled', 'running', 'paused'];

export interface BatchRecord {
  id: string;
  team_id: string;
  list_id: string;
  script_id: string;
  from_number: string;
  status: BatchStatus;
  end_reason: string | null;
  start_at: Date;
  /** With calling_window_set: the batch's own window for its calls (null = any time); else the team's applies. */
  calling_window: CallingWindow | null;
  calling_window_set: boolean;
  /** The retry policy of its calls; null = the team's. */
  retry_policy: RetryPolicy | null;
  intake_seq: number;
  started_at: Date | null;
  ended_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertBatch(
  db: Queryable,
  batch: { teamId: string; listId: string; scriptId: string; fromNumber: string; startAt: Date; callingWindow?: CallingWindow | null; retryPolicy?: RetryPolicy | null },
): Promise<BatchRecord> {
  const { rows } = await db.query<BatchRecord>(
    `INSERT INTO batches (team_id, list_id, script_id, from_number, start_at, calling_window, calling_window_set, retry_policy)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      batch.teamId,
      batch.listId,
      batch.scriptId,
      batch.fromNumber,
      batch.startAt,
      batch.callingWindow ? JSON.stringify(batch.callingWindow) : null,
      batch.callingWindow !== undefined,
      batch.retryPolicy ? JSON.stringify(batch.retryPolicy) : null,
    ],
  );
  return rows[0];
}

export async function findBatch(db: Queryable, batchId: string): Promise<BatchRecord | undefined> {
  if (!isUuid(batchId)) return undefined;
  const { rows } = await db.query<BatchRecord>('SELECT * FROM batches WHERE id = $1', [batchId]);
  return rows[0];
}

/** The team's batches, newest first. */
export async function listTeamBatches(db: Queryable, teamId: string, limit: number): Promise<BatchRecord[]> {
  const { rows } = await db.query<BatchRecord>('SELECT * FROM batches WHERE team_id = $1 ORDER BY created_at DESC, id LIMIT $2', [teamId, limit]);
  return rows;
}

/** Ids of the batches of a list that can still take contacts in. */
export async function findActiveBatchIdsOfList(db: Queryable, teamId: string, listId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM batches WHERE team_id = $1 AND list_id = $2 AND status IN ('scheduled', 'running', 'paused')`,
    [teamId, listId],
  );
  return rows.map((r) => r.id);
}

/**
 * Moves a batch from one of `from` to `to` (the first writer wins). `to: 'resumed'` means
 * running when the batch had started, scheduled otherwise. Returns the row afterwards and
 * whether this call changed it; undefined when there is no such batch.
 */
export async function transitionBatch(
  db: Queryable,
  batchId: string,
  from: readonly BatchStatus[],
  to: BatchStatus | 'resumed',
  endReason: string | null = null,
): Promise<{ batch: BatchRecord; changed: boolean } | undefined> {
  if (!isUuid(batchId)) return undefined;
  const ending = to === 'completed' || to === 'cancelled' || to === 'failed';
  const { rows } = await db.query<BatchRecord>(
    `UPDATE batches SET
        status = CASE WHEN $3 = 'resumed' THEN (CASE WHEN started_at IS NULL THEN 'scheduled' ELSE 'running' END) ELSE $3 END,
        started_at = CASE WHEN $3 = 'running' THEN COALESCE(started_at, now()) ELSE started_at END,
        ended_at = CASE WHEN $4 THEN now() ELSE ended_at END,
        end_reason = CASE WHEN $4 THEN $5 ELSE end_reason END,
        updated_at = now()
      WHERE id = $1 AND status = ANY($2::text[])
      RETURNING *`,
    [batchId, from, to, ending, endReason],
  );
  if (rows[0]) return { batch: rows[0], changed: true };
  const batch = await findBatch(db, batchId);
  return batch ? { batch, changed: false } : undefined;
}

/** Adds `deltas` to the batch's counters (negative deltas decrement). */
async function bumpCounts(db: Queryable, batchId: string, deltas: Record<string, number>): Promise<void> {
  // Sorted: concurrent transactions lock counter rows in one order, so they never deadlock.
  const entries = Object.entries(deltas)
    .filter(([, n]) => n !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return;
  await db.query(
    `INSERT INTO batch_counts (batch_id, bucket, n)
     SELECT $1, b, n FROM unnest($2::text[], $3::bigint[]) AS d(b, n)
     ON CONFLICT (batch_id, bucket) DO UPDATE SET n = batch_counts.n + excluded.n`,
    [batchId, entries.map(([b]) => b), entries.map(([, n]) => n)],
  );
}

/** The batch's counters by bucket (pending, calling, skipped, done:<status>). */
export async function batchCounts(db: Queryable, batchId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ bucket: string; n: number }>('SELECT bucket, n FROM batch_counts WHERE batch_id = $1', [batchId]);
  return Object.fromEntries(rows.map((r) => [r.bucket, r.n]));
}

export interface IntakeResult {
  /** Contacts taken in for the first time. */
  added: number;
  /** Skipped contacts that joined the list again and are pending again. */
  revived: number;
  /** True when no list member after the new position was left unread. */
  caughtUp: boolean;
}

/**
 * Takes in up to `limit` list members added after the batch's intake position, as pending
 * contacts with the call id `callIdFor(contactId)`, and advances the position. Run it in a
 * transaction: it locks the batch row, so concurrent intakes of one batch queue up.
 */
export async function intakeListMembers(
  tx: Queryable,
  batchId: string,
  limit: number,
  callIdFor: (contactId: string) => string,
): Promise<IntakeResult> {
  const { rows: locked } = await tx.query<{ list_id: string; intake_seq: number }>('SELECT list_id, intake_seq FROM batches WHERE id = $1 FOR UPDATE', [batchId]);
  if (!locked[0]) throw new Error(`batch ${batchId} not found`);
  const { list_id: listId, intake_seq: after } = locked[0];
  const { rows: members } = await tx.query<{ contact_id: string; seq: number }>(
    'SELECT contact_id, seq FROM list_contacts WHERE list_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
    [listId, after, limit],
  );
  if (members.length === 0) return { added: 0, revived: 0, caughtUp: true };
  // Skipped for the do-not-call list and revived below: they leave that count too (the batch row lock holds them still).
  const { rows: dnc } = await tx.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM batch_contacts WHERE batch_id = $1 AND contact_id = ANY($2::uuid[]) AND state = 'skipped' AND skip_reason = 'do_not_call'`,
    [batchId, members.map((m) => m.contact_id)],
  );
  const { rows } = await tx.query<{ inserted: boolean }>(
    `INSERT INTO batch_contacts (batch_id, contact_id, seq, call_id)
     SELECT $1, m.contact_id, m.seq, m.call_id FROM unnest($2::uuid[], $3::bigint[], $4::uuid[]) AS m(contact_id, seq, call_id)
     ON CONFLICT (batch_id, contact_id) DO UPDATE SET state = 'pending', seq = excluded.seq, skip_reason = NULL
       WHERE batch_contacts.state = 'skipped'
     RETURNING (xmax = 0) AS inserted`,
    [batchId, members.map((m) => m.contact_id), members.map((m) => m.seq), members.map((m) => callIdFor(m.contact_id))],
  );
  const added = rows.filter((r) => r.inserted).length;
  const revived = rows.length - added;
  await tx.query('UPDATE batches SET intake_seq = $2, updated_at = now() WHERE id = $1', [batchId, members[members.length - 1].seq]);
  await bumpCounts(tx, batchId, { pending: added + revived, skipped: -revived, skipped_dnc: -dnc[0].n });
  return { added, revived, caughtUp: members.length < limit };
}

export interface PendingContact {
  contact_id: string;
  call_id: string;
  /** List position: pages of pending contacts continue after the last one's. */
  seq: number;
  /** Still a member of the batch's list. */
  member: boolean;
  has_phone: boolean;
  phone_number: string | null;
  timezone: string | null;
}

/** The next pending contacts in list order (after list position `afterSeq`), with whether they are still on the list and callable. */
export async function nextPendingContacts(db: Queryable, batchId: string, listId: string, limit: number, afterSeq = -1): Promise<PendingContact[]> {
  if (limit <= 0) return [];
  const { rows } = await db.query<PendingContact>(
    `SELECT bc.contact_id, bc.call_id, bc.seq,
            EXISTS (SELECT 1 FROM list_contacts lc WHERE lc.list_id = $2 AND lc.contact_id = bc.contact_id) AS member,
            c.phone_number IS NOT NULL AS has_phone, c.phone_number, c.timezone
       FROM batch_contacts bc JOIN contacts c ON c.id = bc.contact_id
      WHERE bc.batch_id = $1 AND bc.state = 'pending' AND bc.seq > $4
      ORDER BY bc.seq LIMIT $3`,
    [batchId, listId, limit, afterSeq],
  );
  return rows;
}

/**
 * Locks the given contacts' rows by primary key and returns those still pending. The
 * lookup names no state on purpose: with `state = 'pending'` in the condition the planner
 * may walk a big batch's whole pending index (its partial predicate matches) instead of
 * probing the key, when statistics are fresh out of a bulk intake.
 */
async function lockPending(tx: Queryable, batchId: string, contactIds: string[]): Promise<string[]> {
  const { rows } = await tx.query<{ contact_id: string; state: string }>(
    'SELECT contact_id, state FROM batch_contacts WHERE batch_id = $1 AND contact_id = ANY($2::uuid[]) FOR UPDATE',
    [batchId, contactIds],
  );
  return rows.filter((r) => r.state === 'pending').map((r) => r.contact_id);
}

/** pending → calling for contacts whose call now exists (their first attempt); returns how many moved. Run it in a transaction. */
export async function markContactsCalling(tx: Queryable, batchId: string, contactIds: string[]): Promise<number> {
  if (contactIds.length === 0) return 0;
  const pending = await lockPending(tx, batchId, contactIds);
  if (pending.length === 0) return 0;
  await tx.query(`UPDATE batch_contacts SET state = 'calling', dispatched_at = now() WHERE batch_id = $1 AND contact_id = ANY($2::uuid[])`, [batchId, pending]);
  await bumpCounts(tx, batchId, { pending: -pending.length, calling: pending.length, attempts: pending.length });
  return pending.length;
}

/** pending → skipped with a reason; returns how many moved. Run it in a transaction. */
export async function markContactsSkipped(tx: Queryable, batchId: string, contactIds: string[], reason: string): Promise<number> {
  if (contactIds.length === 0) return 0;
  const pending = await lockPending(tx, batchId, contactIds);
  if (pending.length === 0) return 0;
  await tx.query(
    `UPDATE batch_contacts SET state = 'skipped', skip_reason = $3, finished_at = now() WHERE batch_id = $1 AND contact_id = ANY($2::uuid[])`,
    [batchId, pending, reason],
  );
  await bumpCounts(tx, batchId, { pending: -pending.length, skipped: pending.length, ...(reason === 'do_not_call' ? { skipped_dnc: pending.length } : {}) });
  return pending.length;
}

/** The call a calling contact is on now: its latest attempt. */
const CURRENT_CALL = 'COALESCE(bc.current_call_id, bc.call_id)';

/**
 * For every calling contact whose current call has a terminal status: when the call's end
 * scheduled a retry (next_attempt_call_id, written with the retry's insert before the call
 * ended), the contact moves on to it and stays calling; otherwise its chain has ended and it
 * is done. Returns the count of done contacts by status.
 */
export async function finishEndedCalls(tx: Queryable, batchId: string): Promise<Record<string, number>> {
  // A chain may have moved on several attempts since the last look (at most the policy's 10).
  for (let step = 0; step < 10; step += 1) {
    const { rowCount } = await tx.query(
      `UPDATE batch_contacts bc SET current_call_id = c.next_attempt_call_id
         FROM calls c
        WHERE bc.batch_id = $1 AND bc.state = 'calling' AND c.id = ${CURRENT_CALL}
          AND c.status NOT IN ('scheduled', 'in-progress') AND c.next_attempt_call_id IS NOT NULL
          AND EXISTS (SELECT 1 FROM calls n WHERE n.id = c.next_attempt_call_id)`,
      [batchId],
    );
    if (!rowCount) break;
    await bumpCounts(tx, batchId, { attempts: rowCount });
  }
  const { rows } = await tx.query<{ call_status: string }>(
    `UPDATE batch_contacts bc SET state = 'done', call_status = c.status, finished_at = now()
       FROM calls c
      WHERE bc.batch_id = $1 AND bc.state = 'calling' AND c.id = ${CURRENT_CALL}
        AND c.status NOT IN ('scheduled', 'in-progress') AND c.next_attempt_call_id IS NULL
      RETURNING bc.call_status`,
    [batchId],
  );
  const byStatus: Record<string, number> = {};
  for (const r of rows) byStatus[r.call_status] = (byStatus[r.call_status] ?? 0) + 1;
  const deltas: Record<string, number> = { calling: -rows.length };
  for (const [status, n] of Object.entries(byStatus)) deltas[`done:${status}`] = n;
  await bumpCounts(tx, batchId, deltas);
  return byStatus;
}

/**
 * Calls of the batch that still wait to start (status scheduled); with `removedOnly`, only
 * those whose contact has left the batch's list since.
 */
export async function waitingCallsOfBatch(db: Queryable, batchId: string, opts: { removedOnly?: boolean } = {}): Promise<string[]> {
  const { rows } = await db.query<{ call_id: string }>(
    `SELECT c.id AS call_id FROM batch_contacts bc
       JOIN calls c ON c.id = ${CURRENT_CALL}
       JOIN batches b ON b.id = bc.batch_id
      WHERE bc.batch_id = $1 AND bc.state = 'calling' AND c.status = 'scheduled'
        AND (NOT $2 OR NOT EXISTS (SELECT 1 FROM list_contacts lc WHERE lc.list_id = b.list_id AND lc.contact_id = bc.contact_id))`,
    [batchId, opts.removedOnly ?? false],
  );
  return rows.map((r) => r.call_id);
}

/** Calls of the batch that are in progress right now. */
export async function countInProgressCalls(db: Queryable, batchId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM batch_contacts bc JOIN calls c ON c.id = ${CURRENT_CALL}
      WHERE bc.batch_id = $1 AND bc.state = 'calling' AND c.status = 'in-progress'`,
    [batchId],
  );
  return rows[0].n;
}

/** Whether a batch made this call (its contact's first call) and has since been cancelled or failed: its chains stop. */
export async function isCallOfStoppedBatch(db: Queryable, firstCallId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM batch_contacts bc JOIN batches b ON b.id = bc.batch_id WHERE bc.call_id = $1 AND b.status IN ('cancelled', 'failed')`,
    [firstCallId],
  );
  return (rowCount ?? 0) > 0;
}

/** Whether the list is deleted (soft) or gone. */
export async function isListDeleted(db: Queryable, listId: string): Promise<boolean> {
  const { rows } = await db.query<{ deleted: boolean }>('SELECT deleted_at IS NOT NULL AS deleted FROM lists WHERE id = $1', [listId]);
  return rows[0]?.deleted ?? true;
}

/**
 * Contacts of the batches still going (scheduled, running, paused), by state: pending,
 * calling, skipped and done (batch_counts' done:<status> buckets together), with how many
 * such batches there are (the batch progress gauges of docs/observability.md).
 */
export async function activeBatchProgress(db: Queryable): Promise<{ batches: number; contacts: Record<string, number> }> {
  const [{ rows: counts }, { rows: active }] = await Promise.all([
    db.query<{ state: string; n: string }>(
      `SELECT split_part(c.bucket, ':', 1) AS state, sum(c.n)::bigint AS n
         FROM batch_counts c JOIN batches b ON b.id = c.batch_id
        WHERE b.status IN ('scheduled', 'running', 'paused')
        GROUP BY 1`,
    ),
    db.query<{ n: number }>(`SELECT count(*)::int AS n FROM batches WHERE status IN ('scheduled', 'running', 'paused')`),
  ]);
  return { batches: active[0].n, contacts: Object.fromEntries(counts.map((r) => [r.state, Number(r.n)])) };
}
