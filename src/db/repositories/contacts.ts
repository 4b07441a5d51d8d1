import type { Queryable } from '../pool.js';
import type { ContactFields } from '../../domain/contactFields.js';
import { isUuid } from '../../domain/ids.js';

/** A contact row. `phone_number` is E.164, or null for the shared web contact. */
export interface ContactRecord {
  id: string;
  team_id: string;
  phone_number: string | null;
  shared_web: boolean;
  first_name: string | null;
  last_name: string | null;
  full_name: string | null;
  email: string | null;
  address: string | null;
  location: string | null;
  gender: string | null;
  age: number | null;
  title: string | null;
  timezone: string | null;
  created_at: Date;
  updated_at: Date;
}

export type { ContactFields };

/** The optional fields, in column order (the phone number is handled separately). */
export const CONTACT_OPTIONAL_FIELDS = ['first_name', 'last_name', 'email', 'address', 'location', 'gender', 'age', 'title', 'timezone'] as const;

const INSERT_COLUMNS = `team_id, phone_number, ${CONTACT_OPTIONAL_FIELDS.join(', ')}`;
const INSERT_PLACEHOLDERS = Array.from({ length: CONTACT_OPTIONAL_FIELDS.length + 2 }, (_, i) => `$${i + 1}`).join(', ');

function insertValues(teamId: string, fields: ContactFields): unknown[] {
  return [teamId, fields.phone_number, ...CONTACT_OPTIONAL_FIELDS.map((f) => fields[f] ?? null)];
}

/**
 * Creates the team's contact for `fields.phone_number` or updates the existing one, in one
 * statement (INSERT ... ON CONFLICT). Every field that is sent (not undefined) overwrites the
 * stored value; fields not sent keep theirs. `created` tells which happened.
 */
export async function upsertContactByPhone(
  db: Queryable,
  teamId: string,
  fields: ContactFields,
): Promise<{ contact: ContactRecord; created: boolean }> {
  const updates = CONTACT_OPTIONAL_FIELDS.map((f) => `${f} = COALESCE(EXCLUDED.${f}, contacts.${f})`).join(', ');
  const { rows } = await db.query<ContactRecord & { inserted: boolean }>(
    `INSERT INTO contacts (${INSERT_COLUMNS}) VALUES (${INSERT_PLACEHOLDERS})
     ON CONFLICT (team_id, phone_number) DO UPDATE SET ${updates}, updated_at = now()
     RETURNING *, (xmax = 0) AS inserted`,
    insertValues(teamId, fields),
  );
  const { inserted, ...contact } = rows[0];
  return { contact, created: inserted };
}

/**
 * Creates a contact; undefined when the team already has a contact with that number
 * (the unique constraint decides, so of two concurrent creates exactly one succeeds).
 */
export async function insertContact(db: Queryable, teamId: string, fields: ContactFields): Promise<ContactRecord | undefined> {
  const { rows } = await db.query<ContactRecord>(
    `INSERT INTO contacts (${INSERT_COLUMNS}) VALUES (${INSERT_PLACEHOLDERS})
     ON CONFLICT (team_id, phone_number) DO NOTHING
     RETURNING *`,
    insertValues(teamId, fields),
  );
  return rows[0];
}

/** The team's contact with that id, or undefined (another team's contact is not found). */
export async function findContactById(db: Queryable, teamId: string, id: string): Promise<ContactRecord | undefined> {
  if (!isUuid(id)) return undefined;
  const { rows } = await db.query<ContactRecord>('SELECT * FROM contacts WHERE team_id = $1 AND id = $2', [teamId, id]);
  return rows[0];
}

/** The team's contact with that E.164 number, or undefined. */
export async function findContactByPhone(db: Queryable, teamId: string, e164: string): Promise<ContactRecord | undefined> {
  const { rows } = await db.query<ContactRecord>('SELECT * FROM contacts WHERE team_id = $1 AND phone_number = $2', [teamId, e164]);
  return rows[0];
}

export const SHARED_WEB_CONTACT_FIRST_NAME = 'Web';
export const SHARED_WEB_CONTACT_LAST_NAME = 'Visitor';

/**
 * The team's shared web contact (no phone number), created on first use; used by
 * create-web-session when no contact_id is sent. One statement, safe under concurrency.
 */
export async function getOrCreateSharedWebContact(db: Queryable, teamId: string): Promise<ContactRecord> {
  const { rows } = await db.query<ContactRecord>(
    `INSERT INTO contacts (team_id, phone_number, shared_web, first_name, last_name) VALUES ($1, NULL, true, $2, $3)
     ON CONFLICT (team_id) WHERE shared_web DO UPDATE SET shared_web = true
     RETURNING *`,
    [teamId, SHARED_WEB_CONTACT_FIRST_NAME, SHARED_WEB_CONTACT_LAST_NAME],
  );
  return rows[0];
}

