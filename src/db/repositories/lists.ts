import type { Queryable } from '../pool.js';
import { isUuid } from '../../domain/ids.js';
import { CONTACT_OPTIONAL_FIELDS, type ContactFields, type ContactRecord } from './contacts.js';

export interface ListRecord {
  id: string;
  team_id: string;
  name: string;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export type ListWithCount = ListRecord & { contact_count: number };

/**
 * Creates a list, under `id` when given (the idempotent id of a request with an
 * Idempotency-Key). A list that already has that id is the one an earlier run of the same
 * request created before it crashed: it is returned as it is, not created twice.
 */
export async function insertList(db: Queryable, teamId: string, name: string, id?: string): Promise<ListRecord> {
  const { rows } = await db.query<ListRecord>(
    `WITH created AS (
       INSERT INTO lists (id, team_id, name) VALUES (coalesce($3::uuid, gen_random_uuid()), $1, $2)
       ON CONFLICT (id) DO NOTHING
       RETURNING *)
     SELECT * FROM created
     UNION ALL
     SELECT * FROM lists WHERE id = $3::uuid AND team_id = $1 AND NOT EXISTS (SELECT 1 FROM created)`,
    [teamId, name, id ?? null],
  );
  return rows[0];
}

/** The team's list unless it is deleted; undefined otherwise (another team's list too). */
export async function findList(db: Queryable, teamId: string, listId: string): Promise<ListWithCount | undefined> {
  if (!isUuid(listId)) return undefined;
  const { rows } = await db.query<ListWithCount>(
    `SELECT l.*, (SELECT count(*) FROM list_contacts lc WHERE lc.list_id = l.id) AS contact_count
     FROM lists l WHERE l.team_id = $1 AND l.id = $2 AND l.deleted_at IS NULL`,
    [teamId, listId],
  );
  return rows[0];
}

/**
 * Locks the live list row against a concurrent delete until the caller's transaction ends;
 * false when the list is not the team's or is deleted.
 */
export async function lockLiveList(db: Queryable, teamId: string, listId: string): Promise<boolean> {
  if (!isUuid(listId)) return false;
  const { rows } = await db.query('SELECT 1 FROM lists WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL FOR SHARE', [teamId, listId]);
  return rows.length > 0;
}

/** The team's live lists, newest first, at most `limit`, with their contact counts, and the total. */
export async function listLists(db: Queryable, teamId: string, limit: number): Promise<{ lists: ListWithCount[]; total: number }> {
  const { rows } = await db.query<ListWithCount & { total: number }>(
    `SELECT l.*, (SELECT count(*) FROM list_contacts lc WHERE lc.list_id = l.id) AS contact_count, count(*) OVER () AS total
     FROM lists l WHERE l.team_id = $1 AND l.deleted_at IS NULL
     ORDER BY l.created_at DESC, l.id DESC LIMIT $2`,
    [teamId, limit],
  );
  if (rows.length > 0) return { lists: rows.map(({ total: _total, ...l }) => l), total: rows[0].total };
  const { rows: count } = await db.query<{ total: number }>('SELECT count(*) AS total FROM lists WHERE team_id = $1 AND deleted_at IS NULL', [teamId]);
  return { lists: [], total: count[0].total };
}

export async function renameList(db: Queryable, teamId: string, listId: string, name: string): Promise<ListRecord | undefined> {
  if (!isUuid(listId)) return undefined;
  const { rows } = await db.query<ListRecord>(
    'UPDATE lists SET name = $3, updated_at = now() WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *',
    [teamId, listId, name],
  );
  return rows[0];
}

/** Soft-deletes a live list (its contacts stay); false when there was none to delete. */
export async function softDeleteList(db: Queryable, teamId: string, listId: string): Promise<boolean> {
  if (!isUuid(listId)) return false;
  const { rowCount } = await db.query(
    'UPDATE lists SET deleted_at = now(), updated_at = now() WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL',
    [teamId, listId],
  );
  return (rowCount ?? 0) > 0;
}

export type ListContactRow = ContactRecord & { seq: number; added_at: Date; added_at_us: string };

/**
 * One page of a list's contacts, most recently added first (seq descending). `before`: a
 * member's position (seq) to continue after, or an instant (members added strictly before it).
 * added_at_us is added_at in epoch microseconds (for cursors).
 */
export async function listContactsPage(
  db: Queryable,
  teamId: string,
  listId: string,
  limit: number,
  before: { seq?: number; at?: string } = {},
): Promise<ListContactRow[]> {
  const { rows } = await db.query<ListContactRow>(
    `SELECT c.*, lc.seq, lc.added_at, (extract(epoch FROM lc.added_at) * 1000000)::bigint::text AS added_at_us
     FROM list_contacts lc JOIN contacts c ON c.id = lc.contact_id
     WHERE lc.team_id = $1 AND lc.list_id = $2
       AND ($3::bigint IS NULL OR lc.seq < $3)
       AND ($4::timestamptz IS NULL OR lc.added_at < $4)
     ORDER BY lc.seq DESC LIMIT $5`,
    [teamId, listId, before.seq ?? null, before.at ?? null, limit],
  );
  return rows;
}

/**
 * Members added to the list after member `afterSeq`, oldest first: what a consumer such as a
 * batch's intake reads to catch up (seq only grows).
 */
export async function listMembersAfter(db: Queryable, teamId: string, listId: string, afterSeq: number, limit: number): Promise<{ contact_id: string; seq: number; added_at: Date }[]> {
  const { rows } = await db.query<{ contact_id: string; seq: number; added_at: Date }>(
    `SELECT contact_id, seq, added_at FROM list_contacts
     WHERE team_id = $1 AND list_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`,
    [teamId, listId, afterSeq, limit],
  );
  return rows;
}

export interface AddToListResult {
  /** Every distinct contact of the request, in request order. */
  contacts: ContactRecord[];
  /** Ids of contacts that became members by this call. */
  addedContactIds: string[];
  totalContactsAdded: number;
  newContactsCount: number;
  existingContactsCount: number;
  alreadyInListCount: number;
}

/**
 * Adds contacts given by their fields to a list in a fixed number of statements whatever
 * their count: one upserts every contact by phone number (a number the team already has
 * reuses that contact, unchanged), one adds the memberships. Duplicate numbers in the input
 * count once (the first occurrence wins). Phone numbers must be E.164 already. The caller
 * checks that the list is the team's and live (lockLiveList in the same transaction).
 */
export async function addContactsToList(db: Queryable, teamId: string, listId: string, input: readonly ContactFields[]): Promise<AddToListResult> {
  const seen = new Set<string>();
  const unique = input.filter((c) => (seen.has(c.phone_number) ? false : (seen.add(c.phone_number), true)));
  if (unique.length === 0) return { contacts: [], addedContactIds: [], totalContactsAdded: 0, newContactsCount: 0, existingContactsCount: 0, alreadyInListCount: 0 };

  const columns = ['phone_number', ...CONTACT_OPTIONAL_FIELDS] as const;
  const arrays = columns.map((col) => unique.map((c) => c[col] ?? null));
  const casts = columns.map((col, i) => `$${i + 2}::${col === 'age' ? 'integer' : 'text'}[]`).join(', ');
  const { rows } = await db.query<ContactRecord & { created: boolean }>(
    `WITH input AS (
       SELECT * FROM unnest(${casts}) WITH ORDINALITY AS i(${columns.join(', ')}, ord)
     ), ins AS (
       INSERT INTO contacts (team_id, ${columns.join(', ')})
       SELECT $1, ${columns.join(', ')} FROM input ORDER BY ord
       ON CONFLICT (team_id, phone_number) DO NOTHING
       RETURNING *
     )
     SELECT ins.*, true AS created FROM ins
     UNION ALL
     SELECT c.*, false AS created FROM contacts c JOIN input i ON c.phone_number = i.phone_number WHERE c.team_id = $1`,
    [teamId, ...arrays],
  );
  const byPhone = new Map(rows.map((r) => [r.phone_number!, r]));
  if (byPhone.size < unique.length) {
    // A concurrent request inserted some of these numbers after this statement's snapshot:
    // they conflicted (so were not inserted) yet were invisible to the SELECT. Read them now.
    const missing = unique.map((c) => c.phone_number).filter((p) => !byPhone.has(p));
    const { rows: late } = await db.query<ContactRecord>('SELECT * FROM contacts WHERE team_id = $1 AND phone_number = ANY($2::text[])', [teamId, missing]);
    for (const r of late) byPhone.set(r.phone_number!, { ...r, created: false });
  }
  const ordered = unique.map((c) => byPhone.get(c.phone_number)).filter((r): r is ContactRecord & { created: boolean } => r !== undefined);
  const newContactsCount = ordered.filter((r) => r.created).length;
  const contacts = ordered.map(({ created: _created, ...c }) => c);
  const added = await insertMemberships(db, teamId, listId, contacts.map((c) => c.id));
  return {
    contacts,
    addedContactIds: added,
    totalContactsAdded: added.length,
    newContactsCount,
    existingContactsCount: contacts.length - newContactsCount,
    alreadyInListCount: contacts.length - added.length,
  };
}

/**
 * Adds existing contacts of the team to a list in two statements. Ids that are not the
 * team's contacts are returned in `unknownIds` and nothing is added for them.
 */
export async function addExistingContactsToList(
  db: Queryable,
  teamId: string,
  listId: string,
  contactIds: readonly string[],
): Promise<AddToListResult & { unknownIds: string[] }> {
  const ids = [...new Set(contactIds)];
  const valid = ids.filter(isUuid);
  const { rows } = valid.length
    ? await db.query<ContactRecord>('SELECT * FROM contacts WHERE team_id = $1 AND id = ANY($2::uuid[])', [teamId, valid])
    : { rows: [] as ContactRecord[] };
  const byId = new Map(rows.map((r) => [r.id, r]));
  const unknownIds = ids.filter((id) => !byId.has(id));
  const contacts = ids.map((id) => byId.get(id)).filter((c): c is ContactRecord => c !== undefined);
  const added = unknownIds.length === 0 ? await insertMemberships(db, teamId, listId, contacts.map((c) => c.id)) : [];
  return {
    contacts,
    addedContactIds: added,
    unknownIds,
    totalContactsAdded: added.length,
    newContactsCount: 0,
    existingContactsCount: contacts.length,
    alreadyInListCount: contacts.length - added.length,
  };
}

/** Inserts memberships in the given order; returns the ids that were not members yet. */
async function insertMemberships(db: Queryable, teamId: string, listId: string, contactIds: string[]): Promise<string[]> {
  if (contactIds.length === 0) return [];
  const { rows } = await db.query<{ contact_id: string }>(
    `INSERT INTO list_contacts (list_id, contact_id, team_id)
     SELECT $2, u.id, $1 FROM unnest($3::uuid[]) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord
     ON CONFLICT (list_id, contact_id) DO NOTHING
     RETURNING contact_id`,
    [teamId, listId, contactIds],
  );
  const added = new Set(rows.map((r) => r.contact_id));
  return contactIds.filter((id) => added.has(id));
}

/** Removes contacts from a list (the contacts stay); returns how many were members. */
export async function removeContactsFromList(db: Queryable, teamId: string, listId: string, contactIds: readonly string[]): Promise<number> {
  const valid = contactIds.filter(isUuid);
  if (valid.length === 0) return 0;
  const { rowCount } = await db.query('DELETE FROM list_contacts WHERE team_id = $1 AND list_id = $2 AND contact_id = ANY($3::uuid[])', [teamId, listId, valid]);
  return rowCount ?? 0;
}
