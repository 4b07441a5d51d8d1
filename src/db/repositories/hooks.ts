import type { HookAutomation } from '../../domain/hookAutomation.js';
import type { Queryable } from '../pool.js';

export type { HookAutomation };

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

/** The hook whose token hashes to `tokenHash` (revoked ones included: the caller decides). */
export async function findHookByTokenHash(db: Queryable, tokenHash: string): Promise<HookRecord | undefined> {
  const { rows } = await db.query<HookRecord>('SELECT * FROM hooks WHERE token_hash = $1', [tokenHash]);
  return rows[0];
}

/** A team's hooks, oldest first, revoked ones included. */
export async function listTeamHooks(db: Queryable, teamId: string): Promise<HookRecord[]> {
  const { rows } = await db.query<HookRecord>('SELECT * FROM hooks WHERE team_id = $1 ORDER BY created_at, id', [teamId]);
  return rows;
}

/** Revokes a hook; revoking twice keeps the first revocation time. */
export async function revokeHook(db: Queryable, hookId: string): Promise<HookRecord | undefined> {
  const { rows } = await db.query<HookRecord>('UPDATE hooks SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING *', [hookId]);
  return rows[0];
}
