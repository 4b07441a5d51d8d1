import type { Queryable } from '../pool.js';

/** How long an X-Webhook-Id keeps answering the same run (docs/webhooks.md). */
export const HOOK_DELIVERY_TTL_SECONDS = 24 * 60 * 60;
// Expired rows deleted by each claim: enough to keep up with any arrival rate, small
// enough that a claim never waits on a large delete.
const PURGE_BATCH = 20;

export interface HookDeliveryClaim {
  runId: string;
  /** True when this delivery id was already seen within the TTL: nothing must run again. */
  duplicate: boolean;
  /** The run's workflow was confirmed started (markHookDeliveryStarted). */
  started: boolean;
}

/**
 * Claims (hook, delivery id) for `runId`, or answers the run that already holds it. Exact
 * under concurrency: the primary key lets one insert win and the others see its run. A
 * claim older than the TTL is taken over in place. The same statement purges a few expired
 * rows (skipping locked ones, so concurrent claims never wait on each other's purge).
 */
export async function claimHookDelivery(
  db: Queryable,
  claim: { hookId: string; deliveryId: string; runId: string; ttlSeconds?: number },
): Promise<HookDeliveryClaim> {
  const ttl = claim.ttlSeconds ?? HOOK_DELIVERY_TTL_SECONDS;
  for (let attempt = 0; attempt < 3; attempt++) {
    const { rows } = await db.query<{ run_id: string }>(
      `WITH purged AS (
         DELETE FROM hook_deliveries WHERE ctid IN (
           SELECT ctid FROM hook_deliveries
            WHERE received_at <= now() - make_interval(secs => $4)
              AND NOT (hook_id = $1 AND delivery_id = $2)
            ORDER BY received_at
            LIMIT ${PURGE_BATCH}
            FOR UPDATE SKIP LOCKED)
       )
       INSERT INTO hook_deliveries AS d (hook_id, delivery_id, run_id) VALUES ($1, $2, $3)
       ON CONFLICT (hook_id, delivery_id) DO UPDATE SET run_id = EXCLUDED.run_id, received_at = now(), started_at = NULL
         WHERE d.received_at <= now() - make_interval(secs => $4)
       RETURNING run_id`,
      [claim.hookId, claim.deliveryId, claim.runId, ttl],
    );
    if (rows[0]) return { runId: rows[0].run_id, duplicate: false, started: false };
    const existing = await findHookDelivery(db, claim.hookId, claim.deliveryId);
    // Gone in between only if it expired and was purged meanwhile: claim again.
    if (existing) return { runId: existing.run_id, duplicate: true, started: existing.started_at !== null };
  }
  throw new Error(`could not claim webhook delivery ${claim.deliveryId}`);
}

export interface HookDeliveryRecord {
  run_id: string;
  received_at: Date;
  started_at: Date | null;
}

export async function findHookDelivery(db: Queryable, hookId: string, deliveryId: string): Promise<HookDeliveryRecord | undefined> {
  const { rows } = await db.query<HookDeliveryRecord>(
    'SELECT run_id, received_at, started_at FROM hook_deliveries WHERE hook_id = $1 AND delivery_id = $2',
    [hookId, deliveryId],
  );
  return rows[0];
}

/** Records that the run's workflow exists (only for that run: a taken-over claim is left alone). */
export async function markHookDeliveryStarted(db: Queryable, hookId: string, deliveryId: string, runId: string): Promise<void> {
  await db.query(
    'UPDATE hook_deliveries SET started_at = now() WHERE hook_id = $1 AND delivery_id = $2 AND run_id = $3 AND started_at IS NULL',
    [hookId, deliveryId, runId],
  );
}
