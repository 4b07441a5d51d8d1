import { withTransaction, type Pool } from '../db/pool.js';
import type { ContactFields } from '../db/repositories/contacts.js';
import { addContactsToList, addExistingContactsToList, lockLiveList, type AddToListResult } from '../db/repositories/lists.js';
import type { Logger } from '../logging/logger.js';
import { notFound } from './errors.js';

/** What a listener hears after contacts joined a list (only those that were not members yet). */
export interface ListContactsAddedEvent {
  teamId: string;
  listId: string;
  contactIds: string[];
}

export type ListContactsAddedListener = (event: ListContactsAddedEvent) => void | Promise<void>;

/**
 * Tells `listener` about an addition that made new members, after its commit. Best effort:
 * a failing listener is logged and does not affect the caller; a consumer that must not
 * miss an addition also reads list_contacts by seq (listMembersAfter).
 */
export async function notifyListContactsAdded(listener: ListContactsAddedListener | undefined, event: ListContactsAddedEvent, logger?: Logger): Promise<void> {
  if (!listener || event.contactIds.length === 0) return;
  try {
    await listener(event);
  } catch (err) {
    logger?.warn({ err, listId: event.listId }, 'list contacts listener failed');
  }
}

export interface ListServiceDeps {
  pool: Pool;
  logger?: Logger;
  /** Told after every committed addition; the API's wakes the list's batches (wakeListBatches). */
  contactsAdded?: ListContactsAddedListener;
}

export type AddToListInput = { contacts: ContactFields[] } | { contactIds: string[] };

/**
 * Adds contacts (by their fields, E.164 numbers; or by id) to a live list of the team in one
 * transaction of a fixed number of statements, then tells deps.contactsAdded. Not found (`List not
 * found`) for a missing, deleted or foreign list, or naming the first unknown contact id.
 */
export async function addToList(deps: ListServiceDeps, teamId: string, listId: string, input: AddToListInput): Promise<AddToListResult> {
  const result = await withTransaction(deps.pool, async (tx) => {
    if (!(await lockLiveList(tx, teamId, listId))) throw notFound('List not found');
    if ('contacts' in input) return addContactsToList(tx, teamId, listId, input.contacts);
    const res = await addExistingContactsToList(tx, teamId, listId, input.contactIds);
    if (res.unknownIds.length) throw notFound(`Contact ${res.unknownIds[0]} not found`);
    return res;
  });
  await notifyListContactsAdded(deps.contactsAdded, { teamId, listId, contactIds: result.addedContactIds }, deps.logger);
  return result;
}
