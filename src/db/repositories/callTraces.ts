/** The trace a call belongs to (src/db/migrations/1610_call_traces.sql). */
import type { Queryable } from '../pool.js';

/** Records the call's traceparent; a call's first one stays (a retried create keeps its trace). */
export async function insertCallTrace(db: Queryable, callId: string, traceparent: string): Promise<void> {
  await db.query('INSERT INTO call_traces (call_id, traceparent) VALUES ($1, $2) ON CONFLICT (call_id) DO NOTHING', [callId, traceparent]);
}

/** The call's traceparent, when it was created with tracing on. */
export async function findCallTraceparent(db: Queryable, callId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ traceparent: string }>('SELECT traceparent FROM call_traces WHERE call_id = $1', [callId]);
  return rows[0]?.traceparent;
}
