import type { Queryable } from '../pool.js';

export interface TeamRecord {
  id: string;
  name: string;
  max_concurrent: number;
  created_at: Date;
}

export async function insertTeam(db: Queryable, team: { name: string; maxConcurrent: number }): Promise<TeamRecord> {
  const { rows } = await db.query<TeamRecord>('INSERT INTO teams (name, max_concurrent) VALUES ($1, $2) RETURNING *', [team.name, team.maxConcurrent]);
  return rows[0];
}

export async function findTeam(db: Queryable, teamId: string): Promise<TeamRecord | undefined> {
  const { rows } = await db.query<TeamRecord>('SELECT * FROM teams WHERE id = $1', [teamId]);
  return rows[0];
}
