import type { Queryable } from '../pool.js';

export interface ApiKeyRecord {
  id: string;
  team_id: string;
  prefix: string;
  key_hash: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export async function insertApiKey(db: Queryable, key: { teamId: string; prefix: string; hash: string; name: string }): Promise<ApiKeyRecord> {
  const { rows } = await db.query<ApiKeyRecord>(
    'INSERT INTO api_keys (team_id, prefix, key_hash, name) VALUES ($1, $2, $3, $4) RETURNING *',
    [key.teamId, key.prefix, key.hash, key.name],
  );
  return rows[0];
}

export async function findApiKeyByPrefix(db: Queryable, prefix: string): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRecord>('SELECT * FROM api_keys WHERE prefix = $1', [prefix]);
  return rows[0];
}

export async function listApiKeys(db: Queryable, teamId: string): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<ApiKeyRecord>('SELECT * FROM api_keys WHERE team_id = $1 ORDER BY created_at, id', [teamId]);
  return rows;
}

/** Revokes a key; revoking twice keeps the first revocation time. */
export async function revokeApiKey(db: Queryable, keyId: string): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRecord>(
    'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING *',
    [keyId],
  );
  return rows[0];
}

/** One statement for any number of keys: last_used_at only ever moves forward. */
export async function recordApiKeysUsed(db: Queryable, usage: Map<string, Date>): Promise<void> {
  if (usage.size === 0) return;
  await db.query(
    `UPDATE api_keys k SET last_used_at = u.used_at
       FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, used_at)
      WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.used_at)`,
    [[...usage.keys()], [...usage.values()]],
  );
}
