import { notFound } from './errors.js';
import { withTransaction, type Pool } from '../db/pool.js';
import type { ContactFields } from '../db/repositories/contacts.js';
import { addContactsToList, addExistingContactsToList, lockLiveList, type AddToListResult } from '../db/repositories/lists.js';
import type { Logger } from '../logging/logger.js';

/** What listeners hear after contacts joined a list (only those that were not members yet). */
export interface ListContactsAddedEvent {
  teamId: string;
  listId: string;
  contactIds: string[];
}

export type ListContactsAddedListener = (event: ListContactsAddedEvent) => void | Promise<void>;

const listeners = new Set<ListContactsAddedListener>();

/**
 * Registers a listener told after every committed addition of contacts to a list made
 * through addToList (the API's add-contacts path and anything else that uses it, such as a
 * webhook automation). Per process: register it in every process that adds contacts (API
 * and worker). Delivery is best effort, after the commit; a consumer that must not miss an
 * addition also reads list_contacts by seq (listMembersAfter). Returns an unregister function.
 */
export function onListContactsAdded(listener: ListContactsAddedListener): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

/** Tells every listener; a failing listener is logged and does not affect the others or the caller. */
export async function notifyListContactsAdded(event: ListContactsAddedEvent, logger?: Logger): Promise<void> {
  if (event.contactIds.length === 0) return;
  const results = await Promise.allSettled([...listeners].map(async (listener) => listener(event)));
  for (const r of results) {
    if (r.status === 'rejected') logger?.warn({ err: r.reason, listId: event.listId }, 'list contacts listener failed');
  }
}

export type AddToListInput = { contacts: ContactFields[] } | { contactIds: string[] };

/**
 * Adds contacts (by their fields, E.164 numbers; or by id) to a live list of the team in one
 * transaction of a fixed number of statements, then tells the listeners. Not found (`List not
 * found`) for a missing, deleted or foreign list, or naming the first unknown contact id.
 */
export async function addToList(pool: Pool, teamId: string, listId: string, input: AddToListInput, logger?: Logger): Promise<AddToListResult> {
  const result = await withTransaction(pool, async (tx) => {
    if (!(await lockLiveList(tx, teamId, listId))) throw notFound('List not found');
    if ('contacts' in input) return addContactsToList(tx, teamId, listId, input.contacts);
    const res = await addExistingContactsToList(tx, teamId, listId, input.contactIds);
    if (res.unknownIds.length) throw notFound(`Contact ${res.unknownIds[0]} not found`);
    return res;
  });
  await notifyListContactsAdded({ teamId, listId, contactIds: result.addedContactIds }, logger);
  return result;
}
