import type { Queryable } from '../pool.js';

export interface ScriptRecord<D = unknown> {
  id: string;
  team_id: string;
  name: string;
  definition: D;
  created_at: Date;
}

export async function insertScript(db: Queryable, script: { teamId: string; name: string; definition: unknown }): Promise<ScriptRecord> {
  const { rows } = await db.query<ScriptRecord>('INSERT INTO scripts (team_id, name, definition) VALUES ($1, $2, $3) RETURNING *', [
    script.teamId,
    script.name,
    JSON.stringify(script.definition),
  ]);
  return rows[0];
}

/** A script of the team, or undefined (another team's script is not found). */
export async function findTeamScript(db: Queryable, teamId: string, scriptId: string): Promise<ScriptRecord | undefined> {
  const { rows } = await db.query<ScriptRecord>('SELECT * FROM scripts WHERE team_id = $1 AND id = $2', [teamId, scriptId]);
  return rows[0];
}
