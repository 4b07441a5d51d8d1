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

export async function findPhoneDialClaim(db: Queryable, callId: string): Promise<PhoneDialClaim | undefined> {
  const { rows } = await db.query<{ call_id: string; claim_id: string; media_task_queue: string; claimed_at: Date }>(
    'SELECT call_id, claim_id, media_task_queue, claimed_at FROM phone_dial_claims WHERE call_id = $1',
    [callId],
  );
  const row = rows[0];
  return row ? { callId: row.call_id, claimId: row.claim_id, mediaTaskQueue: row.media_task_queue, claimedAt: row.claimed_at } : undefined;
}
