import type { CallingWindow } from '../../domain/callingWindows.js';
import type { ConversationTurn, SystemNote } from '../../domain/calls.js';
import type { RetryPolicy } from '../../domain/retryPolicy.js';
import type { KeysetPosition } from '../../domain/cursor.js';
import type { Queryable } from '../pool.js';

/** A calls row (src/db/migrations/0500_calls.sql). */
export interface CallRecord {
  id: string;
  seq: number;
  team_id: string;
  contact_id: string;
  script_id: string;
  type: string;
  from_number: string | null;
  to_number: string | null;
  status: string;
  progress: string;
  scheduled_time: Date;
  actual_time: Date | null;
  end_time: Date | null;
  duration: number | null;
  end_reason: string | null;
  call_summary: string | null;
  transcript: string | null;
  transcript_json: unknown[] | null;
  structured_data: Record<string, unknown> | null;
  objectives: { objective: string; met: boolean }[] | null;
  recording_url: string | null;
  rating: unknown;
  post_call_actions: unknown[];
  analysed_at: Date | null;
  conversation: ConversationTurn[];
  system_notes: SystemNote[];
  objects: Record<string, unknown> | null;
  provider: string | null;
  provider_call_id: string | null;
  original_call_id: string | null;
  participant_identity: string | null;
  workflow_started_at: Date | null;
  /** 1 for the first call of a chain (docs/calls.md, "Retries"). */
  attempt: number;
  next_attempt_call_id: string | null;
  retry_policy: RetryPolicy | null;
  /** The dialing policy resolved when the call was scheduled: its window (null = any time) and zone. */
  calling_window: CallingWindow | null;
  timezone: string | null;
  /** Not dialled before: the window's first opening at or after scheduled_time, moved on when it closes first. */
  dial_after: Date | null;
  /** When the slot line granted it a slot (null while in line, docs/calls.md "The concurrency ceiling"). */
  slot_granted_at: Date | null;
  /** Its workflow sleeps in the admission line until its slot is granted (docs/calls.md, "Admission"). */
  wakes_on_grant: boolean;
  created_at: Date;
  modified_at: Date;
  /** created_at in epoch microseconds (for cursors); present on list queries. */
  created_us?: string;
}

export const OPEN_STATUS_SQL = `('scheduled', 'in-progress')`;

export interface NewCall {
  id: string;
  teamId: string;
  contactId: string;
  scriptId: string;
  type: string;
  fromNumber: string | null;
  toNumber: string | null;
  scheduledTime: Date;
  progress: string;
  objects?: Record<string, unknown> | null;
  originalCallId?: string | null;
  participantIdentity?: string | null;
  attempt?: number;
  retryPolicy?: RetryPolicy | null;
  callingWindow?: CallingWindow | null;
  timezone?: string | null;
  dialAfter?: Date | null;
  /** Its workflow sleeps in the admission line until its grant wakes it. */
  wakesOnGrant?: boolean;
}

/**
 * Inserts a call, or returns the existing row when a call with that id already exists
 * (an idempotent retry). `created` tells which.
 */
export async function insertCall(db: Queryable, call: NewCall): Promise<{ call: CallRecord; created: boolean }> {
  const { rows } = await db.query<CallRecord>(
    `INSERT INTO calls (id, team_id, contact_id, script_id, type, from_number, to_number, scheduled_time, progress,
                        objects, original_call_id, participant_identity, attempt, retry_policy, calling_window, timezone, dial_after, wakes_on_grant)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
     ON CONFLICT (id) DO NOTHING
     RETURNING *`,
    [
      call.id,
      call.teamId,
      call.contactId,
      call.scriptId,
      call.type,
      call.fromNumber,
      call.toNumber,
      call.scheduledTime,
      call.progress,
      call.objects ? JSON.stringify(call.objects) : null,
      call.originalCallId ?? null,
      call.participantIdentity ?? null,
      call.attempt ?? 1,
      call.retryPolicy ? JSON.stringify(call.retryPolicy) : null,
      call.callingWindow ? JSON.stringify(call.callingWindow) : null,
      call.timezone ?? null,
      call.dialAfter ?? null,
      call.wakesOnGrant ?? false,
    ],
  );
  if (rows[0]) return { call: rows[0], created: true };
  const existing = await findCallById(db, call.id);
  if (!existing) throw new Error(`call ${call.id} neither inserted nor found`);
  return { call: existing, created: false };
}

/** Which of `callIds` are still open (scheduled or in progress). */
export async function findOpenCallIds(db: Queryable, callIds: string[]): Promise<string[]> {
  if (callIds.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM calls WHERE id = ANY($1::uuid[]) AND status IN ('scheduled', 'in-progress')`, [callIds]);
  return rows.map((r) => r.id);
}

export async function findCallById(db: Queryable, callId: string): Promise<CallRecord | undefined> {
  const { rows } = await db.query<CallRecord>('SELECT * FROM calls WHERE id = $1', [callId]);
  return rows[0];
}

/** The team's call, or undefined (another team's call is not found). */
export async function findTeamCall(db: Queryable, teamId: string, callId: string): Promise<CallRecord | undefined> {
  const { rows } = await db.query<CallRecord>('SELECT * FROM calls WHERE team_id = $1 AND id = $2', [teamId, callId]);
  return rows[0];
}

export interface CallListFilter {
  type?: string;
  status?: string;
  contactId?: string;
  /** The later attempts of a chain: calls whose original_call_id is this. */
  originalCallId?: string;
}

/**
 * One page of the team's calls, newest first, after `position` (keyset on created_at, seq:
 * the same cost at any depth), with the total count of calls matching the filter.
 */
export async function listTeamCalls(
  db: Queryable,
  teamId: string,
  opts: CallListFilter & { limit: number; position?: KeysetPosition },
): Promise<{ calls: CallRecord[]; total: number; hasMore: boolean }> {
  const where = ['team_id = $1'];
  const params: unknown[] = [teamId];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (opts.type) add('type = ?', opts.type);
  if (opts.status) add('status = ?', opts.status);
  if (opts.contactId) add('contact_id = ?', opts.contactId);
  if (opts.originalCallId) add('original_call_id = ?', opts.originalCallId);
  const filter = where.join(' AND ');
  const filterParams = [...params];
  const page = [...where];
  if (opts.position) {
    params.push(opts.position.at);
    const at = `$${params.length}::timestamptz`;
    if (opts.position.seq === undefined) {
      page.push(`created_at < ${at}`);
    } else {
      params.push(opts.position.seq);
      page.push(`(created_at, seq) < (${at}, $${params.length}::bigint)`);
    }
  }
  params.push(opts.limit + 1);
  const [pageResult, countResult] = await Promise.all([
    db.query<CallRecord>(
      `SELECT *, (extract(epoch FROM created_at) * 1000000)::bigint::text AS created_us
         FROM calls WHERE ${page.join(' AND ')}
        ORDER BY created_at DESC, seq DESC
        LIMIT $${params.length}`,
      params,
    ),
    db.query<{ total: number }>(`SELECT count(*)::int AS total FROM calls WHERE ${filter}`, filterParams),
  ]);
  const hasMore = pageResult.rows.length > opts.limit;
  return { calls: pageResult.rows.slice(0, opts.limit), total: countResult.rows[0].total, hasMore };
}

/** scheduled → cancelled, atomically; undefined when the call is not the team's. */
export async function cancelScheduledCall(
  db: Queryable,
  teamId: string,
  callId: string,
): Promise<{ call: CallRecord; cancelled: boolean } | undefined> {
  const { rows } = await db.query<CallRecord>(
    `UPDATE calls SET status = 'cancelled', progress = 'done', end_reason = 'cancelled', end_time = now(),
                      duration = 0, modified_at = now()
      WHERE team_id = $1 AND id = $2 AND status = 'scheduled'
      RETURNING *`,
    [teamId, callId],
  );
  if (rows[0]) return { call: rows[0], cancelled: true };
  const call = await findTeamCall(db, teamId, callId);
  return call ? { call, cancelled: false } : undefined;
}

/**
 * cancel-call of a phone call in progress on the SIP trunk (docs/telephony.md, "Outbound
 * calls"): in-progress → cancelled, with its duration so far. Only a call a media edge dials
 * (provider `sip`) can be cancelled in progress: its workflow sends CANCEL or BYE. Undefined
 * when the call is not such a call.
 */
export async function cancelSipCallInProgress(db: Queryable, teamId: string, callId: string): Promise<CallRecord | undefined> {
  const { rows } = await db.query<CallRecord>(
    `UPDATE calls SET status = 'cancelled', progress = 'done', end_reason = 'cancelled', end_time = now(),
                      duration = CASE WHEN actual_time IS NULL THEN 0
                                      ELSE GREATEST(0, round(extract(epoch FROM (now() - actual_time))))::int END,
                      modified_at = now()
      WHERE team_id = $1 AND id = $2 AND status = 'in-progress' AND type = 'outbound' AND provider = 'sip'
      RETURNING *`,
    [teamId, callId],
  );
  return rows[0];
}

/** Links a call to the next attempt of its chain (the first link wins); run in the next attempt's insert transaction. */
export async function linkNextAttempt(db: Queryable, callId: string, nextCallId: string): Promise<void> {
  await db.query('UPDATE calls SET next_attempt_call_id = $2, modified_at = now() WHERE id = $1 AND next_attempt_call_id IS NULL', [callId, nextCallId]);
}

/**
 * A scheduled call will not be dialled before `dialAfter` (its calling window's next
 * opening): it leaves the slot line until then (a slot it was granted is released by the
 * caller). Sets `progress` with it.
 */
export async function deferScheduledCall(db: Queryable, callId: string, dialAfter: Date, progress: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE calls SET dial_after = $2, progress = $3, slot_granted_at = NULL, modified_at = now() WHERE id = $1 AND status = 'scheduled'`,
    [callId, dialAfter, progress],
  );
  return (rowCount ?? 0) > 0;
}

/** Sets progress while the call is still in `status` (a late write never overwrites a later state). */
export async function setCallProgress(db: Queryable, callId: string, status: string, progress: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'UPDATE calls SET progress = $3, modified_at = now() WHERE id = $1 AND status = $2 AND progress IS DISTINCT FROM $3',
    [callId, status, progress],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * scheduled → in-progress with actual_time, once. Returns the row after the attempt: its
 * status says whether this call is now (or already was) in progress, or was cancelled.
 */
export async function markCallInProgress(db: Queryable, callId: string, actualTime: Date, progress: string): Promise<CallRecord | undefined> {
  const { rows } = await db.query<CallRecord>(
    `UPDATE calls SET status = 'in-progress', actual_time = $2, progress = $3, modified_at = now()
      WHERE id = $1 AND status = 'scheduled'
      RETURNING *`,
    [callId, actualTime, progress],
  );
  return rows[0] ?? (await findCallById(db, callId));
}

export async function setProviderCall(db: Queryable, callId: string, provider: string, providerCallId: string): Promise<void> {
  await db.query('UPDATE calls SET provider = $2, provider_call_id = $3, modified_at = now() WHERE id = $1', [callId, provider, providerCallId]);
}

/**
 * An open call → its one terminal status, with end_time, duration (whole seconds from
 * actual_time; 0 for a call that never started) and end_reason. A second attempt changes
 * nothing and returns the row as it is.
 */
export async function completeCall(
  db: Queryable,
  callId: string,
  outcome: { status: string; endReason: string; endTime: Date; progress: string },
): Promise<{ call: CallRecord; changed: boolean }> {
  const { rows } = await db.query<CallRecord>(
    `UPDATE calls SET status = $2, end_reason = $3, end_time = $4, progress = $5,
                      duration = CASE WHEN actual_time IS NULL THEN 0
                                      ELSE GREATEST(0, round(extract(epoch FROM ($4::timestamptz - actual_time))))::int END,
                      modified_at = now()
      WHERE id = $1 AND status IN ${OPEN_STATUS_SQL}
      RETURNING *`,
    [callId, outcome.status, outcome.endReason, outcome.endTime, outcome.progress],
  );
  if (rows[0]) return { call: rows[0], changed: true };
  const call = await findCallById(db, callId);
  if (!call) throw new Error(`call ${callId} not found`);
  return { call, changed: false };
}

/**
 * Appends conversation turns that start at index `startIndex`. A retry of the same append
 * (the conversation already longer than startIndex) writes nothing.
 */
export async function appendConversationTurns(db: Queryable, callId: string, startIndex: number, turns: ConversationTurn[]): Promise<boolean> {
  if (turns.length === 0) return false;
  const { rowCount } = await db.query(
    `UPDATE calls SET conversation = conversation || $3::jsonb, modified_at = now()
      WHERE id = $1 AND jsonb_array_length(conversation) = $2`,
    [callId, startIndex, JSON.stringify(turns)],
  );
  return (rowCount ?? 0) > 0;
}

/** Appends System Notes starting at index `startIndex`; idempotent like appendConversationTurns. */
export async function appendSystemNotes(db: Queryable, callId: string, startIndex: number, notes: SystemNote[]): Promise<boolean> {
  if (notes.length === 0) return false;
  const { rowCount } = await db.query(
    `UPDATE calls SET system_notes = system_notes || $3::jsonb, modified_at = now()
      WHERE id = $1 AND jsonb_array_length(system_notes) = $2`,
    [callId, startIndex, JSON.stringify(notes)],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * Appends one System Note of `note.kind` to a call that has ended, once: the workflow has
 * written its last note by then (its own appends are positional, so a note slipped in while
 * it runs would make them miss). `noted` when a note of that kind is there already.
 */
export async function appendNoteToEndedCall(db: Queryable, callId: string, note: SystemNote): Promise<'added' | 'noted' | 'open' | 'not_found'> {
  // A concurrent append waits for the row and re-checks the condition on the new version.
  const { rowCount } = await db.query(
    `UPDATE calls SET system_notes = system_notes || jsonb_build_array($2::jsonb), modified_at = now()
      WHERE id = $1 AND status NOT IN ${OPEN_STATUS_SQL} AND NOT system_notes @> jsonb_build_array(jsonb_build_object('kind', $3::text))`,
    [callId, JSON.stringify(note), note.kind],
  );
  if ((rowCount ?? 0) > 0) return 'added';
  const { rows } = await db.query<{ status: string }>('SELECT status FROM calls WHERE id = $1', [callId]);
  if (!rows[0]) return 'not_found';
  return rows[0].status === 'scheduled' || rows[0].status === 'in-progress' ? 'open' : 'noted';
}

/**
 * One write of what a stretch of the conversation produced: the progress of an in-progress
 * call, turns appended from index `turnStart` and System Notes from `noteStart`. Each part
 * is applied only when the row is where the writer expects it (a retry writes nothing twice).
 */
export async function recordConversation(
  db: Queryable,
  callId: string,
  write: { progress?: string; turnStart: number; turns: ConversationTurn[]; noteStart: number; notes: SystemNote[] },
): Promise<void> {
  await db.query(
    `UPDATE calls SET
        conversation = CASE WHEN $3::int > 0 AND jsonb_array_length(conversation) = $2 THEN conversation || $4::jsonb ELSE conversation END,
        system_notes = CASE WHEN $6::int > 0 AND jsonb_array_length(system_notes) = $5 THEN system_notes || $7::jsonb ELSE system_notes END,
        progress = CASE WHEN $8::text IS NOT NULL AND status = 'in-progress' THEN $8 ELSE progress END,
        modified_at = now()
      WHERE id = $1`,
    [callId, write.turnStart, write.turns.length, JSON.stringify(write.turns), write.noteStart, write.notes.length, JSON.stringify(write.notes), write.progress ?? null],
  );
}

export interface CallAnalysis {
  call_summary: string;
  transcript: string;
  transcript_json: { role: string; text: string }[];
  structured_data: Record<string, unknown>;
  objectives: { objective: string; met: boolean }[];
  recording_url: string | null;
  /** Notes the analysis adds (each kind once per call): an LLM analyser's, saying what it did. */
  systemNotes?: SystemNote[];
}

/** Writes the post-call analysis of a terminal call (same values again on a retry); the row afterwards, undefined when the call is not terminal. */
export async function saveCallAnalysis(db: Queryable, callId: string, analysis: CallAnalysis): Promise<CallRecord | undefined> {
  const { rows } = await db.query<CallRecord>(
    `UPDATE calls SET call_summary = $2, transcript = $3, transcript_json = $4, structured_data = $5, objectives = $6,
                      recording_url = $7, analysed_at = COALESCE(analysed_at, now()), progress = 'done', modified_at = now()
      WHERE id = $1 AND status NOT IN ${OPEN_STATUS_SQL}
      RETURNING *`,
    [
      callId,
      analysis.call_summary,
      analysis.transcript,
      JSON.stringify(analysis.transcript_json),
      JSON.stringify(analysis.structured_data),
      JSON.stringify(analysis.objectives),
      analysis.recording_url,
    ],
  );
  return rows[0];
}

export async function markWorkflowStarted(db: Queryable, callIds: string[]): Promise<void> {
  if (callIds.length === 0) return;
  await db.query('UPDATE calls SET workflow_started_at = COALESCE(workflow_started_at, now()) WHERE id = ANY($1::uuid[])', [callIds]);
}

/** Open calls whose workflow was never confirmed started, older than `olderThanMs`. */
export async function findCallsWithoutWorkflow(db: Queryable, olderThanMs: number, limit: number): Promise<CallRecord[]> {
  const { rows } = await db.query<CallRecord>(
    `SELECT * FROM calls
      WHERE status IN ${OPEN_STATUS_SQL} AND workflow_started_at IS NULL
        AND created_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY created_at LIMIT $2`,
    [olderThanMs, limit],
  );
  return rows;
}

/**
 * Open calls with a started workflow that have not moved for `staleMs` and are past
 * their scheduled time (and their calling window's opening): candidates for a check that
 * their workflow is still running.
 */
export async function findStaleOpenCalls(db: Queryable, staleMs: number, limit: number): Promise<CallRecord[]> {
  const { rows } = await db.query<CallRecord>(
    `SELECT * FROM calls
      WHERE status IN ${OPEN_STATUS_SQL} AND workflow_started_at IS NOT NULL
        AND modified_at < now() - make_interval(secs => $1::double precision / 1000)
        AND COALESCE(dial_after, scheduled_time) < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY modified_at LIMIT $2`,
    [staleMs, limit],
  );
  return rows;
}
