import type { Queryable } from '../pool.js';
import { isUuid } from '../../domain/ids.js';

export interface ObjectTypeRecord {
  id: string;
  team_id: string;
  type_name: string;
  display_name: string;
  description: string;
  schema: Record<string, string>;
  validation_mode: 'off' | 'strict';
  unique_by_contact: boolean;
  created_at: Date;
  updated_at: Date;
}

/** A type's own fields, as created: everything but its ids and times. */
export type NewObjectType = Omit<ObjectTypeRecord, 'id' | 'team_id' | 'created_at' | 'updated_at'>;

/** Creates a type; undefined when the team already has one of that type_name (the unique constraint decides). */
export async function insertObjectType(db: Queryable, teamId: string, type: NewObjectType): Promise<ObjectTypeRecord | undefined> {
  const { rows } = await db.query<ObjectTypeRecord>(
    `INSERT INTO object_types (team_id, type_name, display_name, description, schema, validation_mode, unique_by_contact)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (team_id, type_name) DO NOTHING
     RETURNING *`,
    [teamId, type.type_name, type.display_name, type.description, JSON.stringify(type.schema), type.validation_mode, type.unique_by_contact],
  );
  return rows[0];
}

/** The team's types, oldest first, at most `limit`, and how many the team has. */
export async function listObjectTypes(db: Queryable, teamId: string, limit: number): Promise<{ types: ObjectTypeRecord[]; total: number }> {
  const { rows } = await db.query<ObjectTypeRecord & { total: number }>(
    `SELECT t.*, count(*) OVER () AS total FROM object_types t WHERE team_id = $1 ORDER BY created_at, id LIMIT $2`,
    [teamId, limit],
  );
  if (rows.length > 0) return { types: rows.map(({ total: _total, ...t }) => t), total: rows[0].total };
  // No row to carry the window count: an empty team or limit below 1 (never sent).
  const { rows: count } = await db.query<{ total: number }>('SELECT count(*) AS total FROM object_types WHERE team_id = $1', [teamId]);
  return { types: [], total: count[0].total };
}

export async function findObjectTypeByName(db: Queryable, teamId: string, typeName: string): Promise<ObjectTypeRecord | undefined> {
  const { rows } = await db.query<ObjectTypeRecord>('SELECT * FROM object_types WHERE team_id = $1 AND type_name = $2', [teamId, typeName]);
  return rows[0];
}

export async function findObjectTypeById(db: Queryable, teamId: string, id: string): Promise<ObjectTypeRecord | undefined> {
  if (!isUuid(id)) return undefined;
  const { rows } = await db.query<ObjectTypeRecord>('SELECT * FROM object_types WHERE team_id = $1 AND id = $2', [teamId, id]);
  return rows[0];
}

/** Those of `names` that are types of the team, in one statement. */
export async function findObjectTypesByNames(db: Queryable, teamId: string, names: readonly string[]): Promise<ObjectTypeRecord[]> {
  if (names.length === 0) return [];
  const { rows } = await db.query<ObjectTypeRecord>('SELECT * FROM object_types WHERE team_id = $1 AND type_name = ANY($2::text[])', [teamId, names]);
  return rows;
}
