import type { Queryable } from '../pool.js';
import { isUuid } from '../../domain/ids.js';

export interface ObjectRecord {
  id: string;
  team_id: string;
  type_id: string;
  parent_id: string | null;
  name: string | null;
  data: Record<string, unknown>;
  upsert_path: string | null;
  upsert_value: string | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * Serialises writers of one object type until the end of the caller's transaction, so
 * that "find by key, then insert" and unique-key checks cannot race. Needs a transaction.
 */
export async function lockObjectTypeForWrite(db: Queryable, typeId: string): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('objects:' || $1::text, 0))`, [typeId]);
}

/**
 * Objects of the type whose data holds `value` at `path` (Postgres #>> text form), or that
 * were last written with that upsert key. At most `limit` rows, oldest first; callers check
 * the exact JSON-path match themselves.
 */
export async function findObjectsByKey(
  db: Queryable,
  teamId: string,
  typeId: string,
  key: { path: string; pgPath: string[]; value: string },
  opts: { excludeId?: string; limit?: number } = {},
): Promise<ObjectRecord[]> {
  const { rows } = await db.query<ObjectRecord>(
    `SELECT * FROM objects
     WHERE team_id = $1 AND type_id = $2
       AND (data #>> $3::text[] = $4 OR (upsert_path = $5 AND upsert_value = $4))
       AND ($6::uuid IS NULL OR id <> $6::uuid)
     ORDER BY created_at, id
     LIMIT $7`,
    [teamId, typeId, key.pgPath, key.value, key.path, opts.excludeId ?? null, opts.limit ?? 20],
  );
  return rows;
}

export async function findObjectById(db: Queryable, teamId: string, id: string): Promise<ObjectRecord | undefined> {
  if (!isUuid(id)) return undefined;
  const { rows } = await db.query<ObjectRecord>('SELECT * FROM objects WHERE team_id = $1 AND id = $2', [teamId, id]);
  return rows[0];
}

export interface ObjectWrite {
  typeId: string;
  name?: string | null;
  parentId?: string | null;
  data: Record<string, unknown>;
  upsertKey?: { path: string; value: string } | null;
}

/** Creates an object, under `id` when given (else a random one). */
export async function insertObject(db: Queryable, teamId: string, obj: ObjectWrite, id?: string): Promise<ObjectRecord> {
  const { rows } = await db.query<ObjectRecord>(
    `INSERT INTO objects (id, team_id, type_id, name, parent_id, data, upsert_path, upsert_value)
     VALUES (coalesce($8::uuid, gen_random_uuid()), $1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [teamId, obj.typeId, obj.name ?? null, obj.parentId ?? null, JSON.stringify(obj.data), obj.upsertKey?.path ?? null, obj.upsertKey?.value ?? null, id ?? null],
  );
  return rows[0];
}

/**
 * Replaces an object's data; name and parent_id change only when given (undefined keeps
 * them), the upsert key only when one was used.
 */
export async function updateObject(db: Queryable, teamId: string, id: string, obj: Omit<ObjectWrite, 'typeId'>): Promise<ObjectRecord> {
  const { rows } = await db.query<ObjectRecord>(
    `UPDATE objects SET
       data = $3,
       name = CASE WHEN $4::boolean THEN $5 ELSE name END,
       parent_id = CASE WHEN $6::boolean THEN $7::uuid ELSE parent_id END,
       upsert_path = COALESCE($8, upsert_path),
       upsert_value = CASE WHEN $8::text IS NULL THEN upsert_value ELSE $9 END,
       updated_at = now()
     WHERE team_id = $1 AND id = $2
     RETURNING *`,
    [
      teamId,
      id,
      JSON.stringify(obj.data),
      obj.name !== undefined,
      obj.name ?? null,
      obj.parentId !== undefined,
      obj.parentId ?? null,
      obj.upsertKey?.path ?? null,
      obj.upsertKey?.value ?? null,
    ],
  );
  return rows[0];
}

/** Links an object to a contact (no-op when already linked). */
export async function linkObjectToContact(db: Queryable, teamId: string, contactId: string, objectId: string, typeId: string): Promise<void> {
  await db.query(
    `INSERT INTO contact_objects (contact_id, object_id, team_id, type_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (contact_id, object_id) DO NOTHING`,
    [contactId, objectId, teamId, typeId],
  );
}

/** The newest object of the type linked to the contact, if any. */
export async function findLinkedObjectOfType(db: Queryable, teamId: string, contactId: string, typeId: string): Promise<ObjectRecord | undefined> {
  const { rows } = await db.query<ObjectRecord>(
    `SELECT o.* FROM contact_objects co JOIN objects o ON o.id = co.object_id
     WHERE co.team_id = $1 AND co.contact_id = $2 AND co.type_id = $3
     ORDER BY co.created_at DESC, o.id DESC LIMIT 1`,
    [teamId, contactId, typeId],
  );
  return rows[0];
}

export interface LinkedObjectRow {
  contact_id: string;
  object_id: string;
  type_name: string;
  unique_by_contact: boolean;
  data: Record<string, unknown>;
}

/** Every object linked to any of the contacts, with its type, in one statement (oldest link first). */
export async function findLinkedObjects(db: Queryable, teamId: string, contactIds: readonly string[]): Promise<LinkedObjectRow[]> {
  if (contactIds.length === 0) return [];
  const { rows } = await db.query<LinkedObjectRow>(
    `SELECT co.contact_id, o.id AS object_id, t.type_name, t.unique_by_contact, o.data
     FROM contact_objects co
     JOIN objects o ON o.id = co.object_id
     JOIN object_types t ON t.id = co.type_id
     WHERE co.team_id = $1 AND co.contact_id = ANY($2::uuid[])
     ORDER BY co.created_at, o.id`,
    [teamId, contactIds],
  );
  return rows;
}
