import { conflict, invalid, notFound } from './errors.js';
import type { Queryable } from '../db/pool.js';
import { findContactByPhone, insertContact, type ContactFields, type ContactRecord } from '../db/repositories/contacts.js';
import { findLinkedObjects } from '../db/repositories/objects.js';
import { normalizePhoneNumber } from '../domain/phone.js';

/** Contact fields as a request sends them: the phone number in any accepted format; null = not sent. */
export type ContactInput = { phone_number: string } & { [K in Exclude<keyof ContactFields, 'phone_number'>]?: ContactFields[K] | null };

/** E.164 of a request's phone number; invalid naming `field` when it is not a valid number. */
export function normalizePhoneField(value: string, region: string, field = 'phone_number'): string {
  const e164 = normalizePhoneNumber(value, region);
  if (!e164) throw invalid(`Invalid request: ${field} is not a valid phone number`);
  return e164;
}

/**
 * The contact fields with the phone number normalised to E.164 (invalid naming
 * `${prefix}phone_number` otherwise) and null fields dropped.
 */
export function normalizeContactInput(input: ContactInput, region: string, prefix = ''): ContactFields {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) if (value !== null && value !== undefined) fields[name] = value;
  return { ...(fields as Omit<ContactFields, 'phone_number'>), phone_number: normalizePhoneField(input.phone_number, region, `${prefix}phone_number`) };
}

/** create-contact: a conflict when the team already has a contact with that normalised number. */
export async function createContact(db: Queryable, teamId: string, fields: ContactFields): Promise<ContactRecord> {
  const contact = await insertContact(db, teamId, fields);
  if (!contact) {
    const existing = await findContactByPhone(db, teamId, fields.phone_number);
    throw conflict('Contact already exists', existing ? { contact_id: existing.id } : {});
  }
  return contact;
}

/**
 * object_data of each contact: type name -> the linked object's data for a type that is
 * unique_by_contact, or -> an array of the linked objects' data (oldest link first) otherwise.
 * One statement for any number of contacts.
 */
export async function objectDataForContacts(db: Queryable, teamId: string, contactIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
  const result = new Map<string, Record<string, unknown>>(contactIds.map((id) => [id, {}]));
  for (const row of await findLinkedObjects(db, teamId, contactIds)) {
    const data = result.get(row.contact_id) ?? {};
    result.set(row.contact_id, data);
    if (row.unique_by_contact) data[row.type_name] = row.data; // newest link wins (rows are oldest first)
    else ((data[row.type_name] ??= []) as unknown[]).push(row.data);
  }
  return result;
}

/** A contact as a list shows it (the list-contact shape of docs/contacts-and-lists.md). */
export function listContactView(c: ContactRecord, objectData: Record<string, unknown> = {}) {
  return {
    id: c.id,
    team_id: c.team_id,
    phone_number: c.phone_number,
    first_name: c.first_name,
    last_name: c.last_name,
    full_name: c.full_name,
    email: c.email,
    timezone: c.timezone,
    object_data: objectData,
  };
}

/** A contact with every field (get-contact): the list shape plus the rest. */
export function contactView(c: ContactRecord, objectData: Record<string, unknown> = {}) {
  return {
    ...listContactView(c, objectData),
    address: c.address,
    location: c.location,
    gender: c.gender,
    age: c.age,
    title: c.title,
    created_at: c.created_at.toISOString(),
    updated_at: c.updated_at.toISOString(),
  };
}

/** get-contact: the team's contact with that (already normalised) number, or not found. */
export async function getContactByPhone(db: Queryable, teamId: string, e164: string): Promise<ReturnType<typeof contactView>> {
  const contact = await findContactByPhone(db, teamId, e164);
  if (!contact) throw notFound('Contact not found');
  const objectData = await objectDataForContacts(db, teamId, [contact.id]);
  return contactView(contact, objectData.get(contact.id));
}
