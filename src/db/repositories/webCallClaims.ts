/**
 * Media claims of web calls (src/db/migrations/1500_web_call_claims.sql): the one media
 * edge that may carry a create-web-call call's media.
 */
import type { Queryable } from '../pool.js';

/**
 * Claims a scheduled web call for `claimId`, in one statement: true when the claim is now
 * `claimId`'s (taken now, or already taken by the same claim: a retried request), false
 * when the call is not a scheduled web call or another claim holds it.
 */
export async function claimWebCall(db: Queryable, callId: string, claimId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO web_call_claims (call_id, claim_id)
     SELECT id, $2 FROM calls WHERE id = $1 AND type = 'web' AND status = 'scheduled'
     ON CONFLICT (call_id) DO UPDATE SET claim_id = web_call_claims.claim_id
       WHERE web_call_claims.claim_id = EXCLUDED.claim_id
     RETURNING call_id`,
    [callId, claimId],
  );
  return (rowCount ?? 0) > 0;
}

/** Hands back `claimId`'s claim of the call; false when it held none (released already, or another's). */
export async function releaseWebCallClaim(db: Queryable, callId: string, claimId: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM web_call_claims WHERE call_id = $1 AND claim_id = $2', [callId, claimId]);
  return (rowCount ?? 0) > 0;
}
