// The automations of a webhook hook run (docs/webhooks.md), run by the worker's hook-run
// activities: schedule_call and add_to_list. Each is idempotent, and each refusal is a
// use-case error whose code names the run's failure type.
import type { MappedContact } from '../domain/hookAutomation.js';
import { nameBasedUuid } from '../domain/ids.js';
import { withTransaction } from '../db/pool.js';
import { upsertContactByPhone } from '../db/repositories/contacts.js';
import { addExistingContactsToList, lockLiveList } from '../db/repositories/lists.js';
import { HOOK_CALL_REJECTED_FAILURE, HOOK_LIST_NOT_FOUND_FAILURE } from '../../workflows/contracts.js';
import { wakeListBatches, type BatchServiceDeps } from './batches.js';
import { scheduleCall, type CallServiceDeps } from './calls.js';
import { UseCaseError } from './errors.js';
import { notifyListContactsAdded } from './lists.js';

/** The call a schedule_call run makes: the same run always gets the same call id, so a retried activity never makes a second call. */
export const hookRunCallId = (runId: string) => nameBasedUuid(`hook-run-call:${runId}`);

export interface HookContactAdded {
  contactId: string;
  contactCreated: boolean;
  /** False when the contact was already in the list. */
  added: boolean;
}

/**
 * add_to_list: upserts the contact (fields sent overwrite stored ones, as create-phone-call
 * does) and adds it to the list, in one transaction that holds the list against a
 * concurrent delete, then wakes the list's batches (their intake). Idempotent: a
 * retry finds the contact and the membership in place.
 */
export async function addHookContactToList(
  deps: Pick<BatchServiceDeps, 'pool' | 'temporal' | 'logger'>,
  run: { teamId: string; listId: string; contact: MappedContact },
): Promise<HookContactAdded> {
  const result = await withTransaction(deps.pool, async (db) => {
    if (!(await lockLiveList(db, run.teamId, run.listId))) {
      throw new UseCaseError('not_found', `List ${run.listId} of this hook no longer exists; the contact was not added`, {}, HOOK_LIST_NOT_FOUND_FAILURE);
    }
    const { contact, created } = await upsertContactByPhone(db, run.teamId, run.contact);
    const added = await addExistingContactsToList(db, run.teamId, run.listId, [contact.id]);
    return { contactId: contact.id, contactCreated: created, addedContactIds: added.addedContactIds };
  });
  await notifyListContactsAdded(wakeListBatches(deps), { teamId: run.teamId, listId: run.listId, contactIds: result.addedContactIds }, deps.logger);
  return { contactId: result.contactId, contactCreated: result.contactCreated, added: result.addedContactIds.length > 0 };
}

export interface HookCallScheduled {
  callId: string;
  contactId: string;
}

/**
 * schedule_call: the create-phone-call path (scheduleCall: ownership checks, contact upsert,
 * call row, call workflow) with a call id derived from the run, so a retried activity
 * finds the same call instead of making a second one. A refusal of that path (script or
 * number no longer the team's) is permanent.
 */
export async function scheduleHookCall(
  deps: CallServiceDeps,
  run: { runId: string; teamId: string; scriptId: string; fromNumber: string; contact: MappedContact },
): Promise<HookCallScheduled> {
  try {
    const call = await scheduleCall(deps, {
      teamId: run.teamId,
      scriptId: run.scriptId,
      fromNumber: run.fromNumber,
      contact: run.contact,
      callId: hookRunCallId(run.runId),
    });
    return { callId: call.callId, contactId: call.contactId };
  } catch (err) {
    if (err instanceof UseCaseError) {
      throw new UseCaseError(err.kind, `The call could not be scheduled: ${err.message}`, {}, HOOK_CALL_REJECTED_FAILURE);
    }
    throw err;
  }
}
