import type { Queryable } from '../pool.js';

/** What a hook does with each accepted request (decisions §6). */
export type HookAutomation =
  | { kind: 'schedule_call'; script_id: string; from_number: string }
  | { kind: 'add_to_list'; list_id: string }
  | { kind: 'none' };

export interface HookRecord {
  id: string;
  team_id: string;
  token_hash: string;
  secret: string | null;
  automation: HookAutomation;
  created_at: Date;
  revoked_at: Date | null;
}

export async function insertHook(db: Queryable, hook: { teamId: string; tokenHash: string; secret: string | null; automation: HookAutomation }): Promise<HookRecord> {
  const { rows } = await db.query<HookRecord>('INSERT INTO hooks (team_id, token_hash, secret, automation) VALUES ($1, $2, $3, $4) RETURNING *', [
    hook.teamId,
    hook.tokenHash,
    hook.secret,
    JSON.stringify(hook.automation),
  ]);
  return rows[0];
}
