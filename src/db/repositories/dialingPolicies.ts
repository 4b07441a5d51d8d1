/** A team's dialing policy (team_dialing_policies, src/db/migrations/1400_dialing_policy.sql). */
import type { CallingWindow } from '../../domain/callingWindows.js';
import type { RetryPolicy } from '../../domain/retryPolicy.js';
import type { Queryable } from '../pool.js';

export interface TeamDialingPolicy {
  team_id: string;
  calling_window: CallingWindow | null;
  timezone: string | null;
  retry_policy: RetryPolicy | null;
  dial_rate: number | null;
  updated_at: Date;
}

/** The team's policy; a team that never set one gets the empty policy (any time, no retries). */
export async function findTeamDialingPolicy(db: Queryable, teamId: string): Promise<TeamDialingPolicy> {
  const { rows } = await db.query<TeamDialingPolicy>('SELECT * FROM team_dialing_policies WHERE team_id = $1', [teamId]);
  return rows[0] ?? { team_id: teamId, calling_window: null, timezone: null, retry_policy: null, dial_rate: null, updated_at: new Date(0) };
}

export type DialingPolicyChanges = Partial<Pick<TeamDialingPolicy, 'calling_window' | 'timezone' | 'retry_policy' | 'dial_rate'>>;

/** Sets the given parts of the team's policy (null clears one); the others keep their value. */
export async function updateTeamDialingPolicy(db: Queryable, teamId: string, changes: DialingPolicyChanges): Promise<TeamDialingPolicy> {
  const has = (k: keyof DialingPolicyChanges) => Object.prototype.hasOwnProperty.call(changes, k);
  const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));
  const { rows } = await db.query<TeamDialingPolicy>(
    `INSERT INTO team_dialing_policies AS p (team_id, calling_window, timezone, retry_policy, dial_rate)
     VALUES ($1, $3::jsonb, $5, $7::jsonb, $9)
     ON CONFLICT (team_id) DO UPDATE SET
       calling_window = CASE WHEN $2 THEN EXCLUDED.calling_window ELSE p.calling_window END,
       timezone = CASE WHEN $4 THEN EXCLUDED.timezone ELSE p.timezone END,
       retry_policy = CASE WHEN $6 THEN EXCLUDED.retry_policy ELSE p.retry_policy END,
       dial_rate = CASE WHEN $8 THEN EXCLUDED.dial_rate ELSE p.dial_rate END,
       updated_at = now()
     RETURNING *`,
    [
      teamId,
      has('calling_window'),
      json(changes.calling_window),
      has('timezone'),
      changes.timezone ?? null,
      has('retry_policy'),
      json(changes.retry_policy),
      has('dial_rate'),
      changes.dial_rate ?? null,
    ],
  );
  return rows[0];
}
