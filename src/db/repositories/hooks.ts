import type { HookAutomation } from '../../domain/hookAutomation.js';
import type { HookSignatureScheme } from '../../domain/hookSignature.js';
import type { Queryable } from '../pool.js';

export type { HookAutomation };

export interface HookRecord {
  id: string;
  team_id: string;
  token_hash: string;
  /** The signing secret as stored: sealed by SecretBox (plaintext in rows written before that); services/hooks.ts hookSigningSecret opens it. */
  secret: string | null;
  automation: HookAutomation;
  /** How requests are signed when there is a secret (migration 1510). */
  signature_scheme: HookSignatureScheme;
  created_at: Date;
  revoked_at: Date | null;
}

export async function insertHook(
  db: Queryable,
  hook: { teamId: string; tokenHash: string; secret: string | null; automation: HookAutomation; signatureScheme?: HookSignatureScheme },
): Promise<HookRecord> {
  const { rows } = await db.query<HookRecord>(
    'INSERT INTO hooks (team_id, token_hash, secret, automation, signature_scheme) VALUES ($1, $2, $3, $4, $5) RETURNING *',
    [hook.teamId, hook.tokenHash, hook.secret, JSON.stringify(hook.automation), hook.signatureScheme ?? 'x-webhook-signature'],
  );
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

/**
 * Up to `limit` hooks after `afterId` (id order) whose secret does not start with
 * `sealedPrefix`: written before encryption, or sealed under an earlier key.
 */
export async function listHookSecretsToReseal(db: Queryable, sealedPrefix: string, afterId: string | null, limit: number): Promise<Array<Pick<HookRecord, 'id' | 'token_hash'> & { secret: string }>> {
  const { rows } = await db.query<Pick<HookRecord, 'id' | 'token_hash'> & { secret: string }>(
    `SELECT id, token_hash, secret FROM hooks
      WHERE secret IS NOT NULL AND left(secret, length($1)) <> $1 AND ($2::uuid IS NULL OR id > $2)
      ORDER BY id LIMIT $3`,
    [sealedPrefix, afterId, limit],
  );
  return rows;
}

/** Stores `to` as the hook's secret if it is still `from` (another process may have re-sealed it first). */
export async function replaceHookSecret(db: Queryable, hookId: string, from: string, to: string): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE hooks SET secret = $3 WHERE id = $1 AND secret = $2', [hookId, from, to]);
  return (rowCount ?? 0) > 0;
}
