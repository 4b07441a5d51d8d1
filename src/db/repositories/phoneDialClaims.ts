/**
 * Dial claims of phone calls (src/db/migrations/1530_phone_dial_claims.sql): the one media
 * edge that sends a call's INVITE.
 */
import type { Queryable } from '../pool.js';

export interface PhoneDialClaim {
  callId: string;
  claimId: string;
  mediaTaskQueue: string;
  claimedAt: Date;
}

/**
 * Claims an in-progress outbound call's dial for `claimId`, in one statement. `taken` when
 * this request took it, `held` when the same claim already held it (a retried request),
 * `refused` when the call is not an in-progress outbound call or another claim holds it.
 */
export async function claimPhoneDial(db: Queryable, callId: string, claimId: string, mediaTaskQueue: string): Promise<'taken' | 'held' | 'refused'> {
  const { rows } = await db.query<{ fresh: boolean }>(
    `INSERT INTO phone_dial_claims (call_id, claim_id, media_task_queue)
     SELECT id, $2, $3 FROM calls WHERE id = $1 AND type = 'outbound' AND status = 'in-progress'
     ON CONFLICT (call_id) DO UPDATE SET claim_id = phone_dial_claims.claim_id
       WHERE phone_dial_claims.claim_id = EXCLUDED.claim_id
     RETURNING (xmax = 0) AS fresh`,
    [callId, claimId, mediaTaskQueue],
  );
  if (!rows[0]) return 'refused';
  return rows[0].fresh ? 'taken' : 'held';
}

/**
 * The provider's answer to the dial `claimId` holds for `callId`: `answered` with it once
 * written (recordPhoneDialAnswer), `unanswered` while it is not, `other` when the call's dial
 * is not held by that claim.
 */
export async function findPhoneDialAnswer(db: Queryable, callId: string, claimId: string): Promise<{ kind: 'answered'; answer: unknown } | { kind: 'unanswered' | 'other' }> {
  const { rows } = await db.query<{ claim_id: string; answer: unknown }>('SELECT claim_id, answer FROM phone_dial_claims WHERE call_id = $1', [callId]);
  const row = rows[0];
  if (!row || row.claim_id !== claimId) return { kind: 'other' };
  return row.answer === null ? { kind: 'unanswered' } : { kind: 'answered', answer: row.answer };
}

/** Writes the provider's answer to the dial `claimId` holds (the first answer stays). */
export async function recordPhoneDialAnswer(db: Queryable, callId: string, claimId: string, answer: unknown): Promise<void> {
  await db.query('UPDATE phone_dial_claims SET answer = $3 WHERE call_id = $1 AND claim_id = $2 AND answer IS NULL', [callId, claimId, JSON.stringify(answer)]);
}

export async function findPhoneDialClaim(db: Queryable, callId: string): Promise<PhoneDialClaim | undefined> {
  const { rows } = await db.query<{ call_id: string; claim_id: string; media_task_queue: string; claimed_at: Date }>(
    'SELECT call_id, claim_id, media_task_queue, claimed_at FROM phone_dial_claims WHERE call_id = $1',
    [callId],
  );
  const row = rows[0];
  return row ? { callId: row.call_id, claimId: row.claim_id, mediaTaskQueue: row.media_task_queue, claimedAt: row.claimed_at } : undefined;
}
