import pg from 'pg';
import { conflict, invalid, notFound } from './errors.js';
import { withTransaction, type PoolClient, type Queryable } from '../db/pool.js';
import { findObjectTypeById, findObjectTypeByName, findObjectTypesByNames, type ObjectTypeRecord } from '../db/repositories/objectTypes.js';
import {
  findLinkedObjectOfType,
  findObjectById,
  findObjectsByKey,
  insertObject,
  linkObjectToContact,
  lockObjectTypeForWrite,
  updateObject,
  type ObjectRecord,
} from '../db/repositories/objects.js';
import { defaultUpsertKeys, keyValueOf, parseKeyPath, postgresPath, valueAtPath, type JsonPathSegment } from '../domain/jsonPath.js';
import { validateObjectData } from '../domain/objectTypes.js';
import { findUnstorableText, unstorableMessage } from '../domain/storableText.js';

/** The `objects` map of create-phone-call and create-web-session: type name -> properties. */
export type ObjectsMap = Record<string, Record<string, unknown>>;

export interface LinkedObject {
  type_name: string;
  object_id: string;
  action: 'created' | 'updated';
}

interface Key {
  path: string;
  segments: JsonPathSegment[];
  value: string;
}

/**
 * Runs fn in a transaction: its own one when given the pool, the caller's when given a
 * client (which must then be inside BEGIN ... COMMIT for the per-type locks to hold).
 */
async function inTransaction<T>(db: pg.Pool | PoolClient, fn: (client: Queryable) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, fn) : fn(db);
}

/**
 * Checks an objects map before anything is written: every type name must be one of the
 * team's object types (invalid, `objects.<name>: object type not found`, otherwise) and every
 * properties object must pass its type's validation (invalid naming `objects.<name>.<field>`).
 * Returns the types by name.
 */
export async function validateObjectsMap(db: Queryable, teamId: string, objects: ObjectsMap, field = 'objects'): Promise<Map<string, ObjectTypeRecord>> {
  const names = Object.keys(objects);
  const types = new Map((await findObjectTypesByNames(db, teamId, names)).map((t) => [t.type_name, t]));
  const problems: string[] = [];
  for (const name of names) {
    const type = types.get(name);
    const unstorable = findUnstorableText(objects[name]);
    if (!type) problems.push(`${field}.${name}: object type not found`);
    else if (unstorable) problems.push(unstorableMessage(`${field}.${name}`, unstorable));
    else problems.push(...validateObjectData(type, objects[name], `${field}.${name}`));
  }
  if (problems.length) throw invalid(`Invalid request: ${problems.join('; ')}`);
  return types;
}

/**
 * Links the objects of an `objects` map to a contact (create-phone-call, create-web-session).
 * For each type name: when the type is unique_by_contact, the contact's object of that type
 * gets the properties as its data (created if the contact has none); otherwise the object
 * found by the default upsert keys of the properties ($.external_ids.<system>.property_id,
 * then $.id) is updated, or a new object is created; either way it is linked to the contact.
 * Validates everything first (see validateObjectsMap), so invalid input writes nothing.
 *
 * `db`: the pool (runs in its own transaction) or a client inside the caller's transaction
 * (to commit the objects together with, say, the contact and the call).
 */
export async function linkObjectsToContact(
  db: pg.Pool | PoolClient,
  teamId: string,
  contactId: string,
  objects: ObjectsMap,
  field = 'objects',
): Promise<LinkedObject[]> {
  if (Object.keys(objects).length === 0) return [];
  const types = await validateObjectsMap(db, teamId, objects, field);
  return inTransaction(db, async (tx) => {
    const linked: LinkedObject[] = [];
    // Fixed order so that two requests touching the same types take the locks in one order.
    for (const name of Object.keys(objects).sort()) {
      const type = types.get(name)!;
      const data = objects[name];
      await lockObjectTypeForWrite(tx, type.id);
      let target: ObjectRecord | undefined;
      let key: Key | undefined;
      if (type.unique_by_contact) {
        target = await findLinkedObjectOfType(tx, teamId, contactId, type.id);
      } else {
        const candidates = defaultUpsertKeys(data);
        ({ object: target, key } = await findByKeys(tx, teamId, type.id, candidates));
        key ??= candidates[0];
      }
      const upsertKey = key ? { path: key.path, value: key.value } : undefined;
      const object = target
        ? await updateObject(tx, teamId, target.id, { data, upsertKey })
        : await insertObject(tx, teamId, { typeId: type.id, data, upsertKey });
      await linkObjectToContact(tx, teamId, contactId, object.id, type.id);
      linked.push({ type_name: name, object_id: object.id, action: target ? 'updated' : 'created' });
    }
    return linked;
  });
}

/** The first of `keys` that finds an object of the type, and that object. */
async function findByKeys(db: Queryable, teamId: string, typeId: string, keys: Key[]): Promise<{ object?: ObjectRecord; key?: Key }> {
  for (const key of keys) {
    const rows = await findObjectsByKey(db, teamId, typeId, { path: key.path, pgPath: postgresPath(key.segments), value: key.value });
    const object = rows.find((o) => keyValueOf(valueAtPath(o.data, key.segments)) === key.value || (o.upsert_path === key.path && o.upsert_value === key.value));
    if (object) return { object, key };
  }
  return {};
}

export interface UpsertObjectInput {
  name?: string;
  data: Record<string, unknown>;
  type_name?: string;
  type_id?: string;
  parent_id?: string | null;
  upsert_key?: { path: string; value: string };
  unique_key?: { path: string; value: string };
}

export interface UpsertObjectResult {
  object: ObjectRecord;
  action: 'created' | 'updated';
  upsert_key: { path: string; value: string } | null;
}

function parsedKey(key: { path: string; value: string }, field: string): Key {
  const parsed = parseKeyPath(key.path);
  if (!parsed.ok) throw invalid(`Invalid request: ${field}.path ${parsed.error}`);
  return { path: key.path, segments: parsed.segments, value: key.value };
}

/**
 * upsert-object (docs/contacts-and-lists.md "Objects"): finds the object of the type by `upsert_key` (or by the
 * default keys of `data` when none is sent), replaces its data, or creates it. `unique_key`
 * must not match another object of the type (a conflict). Writers of one type are serialised.
 */
/**
 * upsert-object. `createId`: the id to create the object under when no key finds one (the
 * idempotent id of a request with an Idempotency-Key). An object that already has that id
 * is the one an earlier run of the same request created before it crashed: it is updated,
 * as a found object, never created twice (this matters to data without any key).
 */
export async function upsertObject(pool: pg.Pool, teamId: string, input: UpsertObjectInput, createId?: string): Promise<UpsertObjectResult> {
  // Everything that can be invalid or not found is checked before the transaction starts.
  const upsertKey = input.upsert_key ? parsedKey(input.upsert_key, 'upsert_key') : undefined;
  const uniqueKey = input.unique_key ? parsedKey(input.unique_key, 'unique_key') : undefined;
  const byId = input.type_id !== undefined ? await findObjectTypeById(pool, teamId, input.type_id) : undefined;
  const byName = input.type_name !== undefined ? await findObjectTypeByName(pool, teamId, input.type_name) : undefined;
  if (input.type_id !== undefined && !byId) throw notFound('Object type not found');
  if (input.type_name !== undefined && !byName) throw notFound('Object type not found');
  if (byId && byName && byId.id !== byName.id) throw invalid('Invalid request: type_id and type_name name different object types');
  const type = (byId ?? byName)!;
  const problems = validateObjectData(type, input.data);
  if (problems.length) throw invalid(`Invalid request: ${problems.join('; ')}`);
  if (input.parent_id != null && !(await findObjectById(pool, teamId, input.parent_id))) throw notFound('parent_id not found');

  return withTransaction(pool, async (tx) => {
    await lockObjectTypeForWrite(tx, type.id);
    const candidates = upsertKey ? [upsertKey] : defaultUpsertKeys(input.data);
    const byKey = await findByKeys(tx, teamId, type.id, candidates);
    const created = !byKey.object && createId ? await findObjectById(tx, teamId, createId) : undefined;
    const found = created ? { ...byKey, object: created } : byKey;
    const key = found.key ?? candidates[0];
    if (input.parent_id && found.object && input.parent_id === found.object.id) throw invalid('Invalid request: parent_id cannot be the object itself');
    if (uniqueKey) {
      const others = await findObjectsByKey(
        tx,
        teamId,
        type.id,
        { path: uniqueKey.path, pgPath: postgresPath(uniqueKey.segments), value: uniqueKey.value },
        { excludeId: found.object?.id },
      );
      if (others.some((o) => keyValueOf(valueAtPath(o.data, uniqueKey.segments)) === uniqueKey.value)) {
        throw conflict(`An object of type ${type.type_name} with ${uniqueKey.path} = ${uniqueKey.value} already exists`);
      }
    }
    const storedKey = key ? { path: key.path, value: key.value } : undefined;
    const object = found.object
      ? await updateObject(tx, teamId, found.object.id, { data: input.data, name: input.name, parentId: input.parent_id, upsertKey: storedKey })
      : await insertObject(tx, teamId, { typeId: type.id, data: input.data, name: input.name, parentId: input.parent_id, upsertKey: storedKey }, createId);
    return { object, action: found.object ? 'updated' : 'created', upsert_key: storedKey ?? null };
  });
}

/** An object as the API returns it. */
export function objectView(o: ObjectRecord) {
  return { id: o.id, name: o.name, type_id: o.type_id, parent_id: o.parent_id, data: o.data };
}
