import { decodeCursor, encodeCursor } from '../../domain/cursor.js';
import { normalizePhoneField } from '../../services/contacts.js';
import { addToDoNotCall, doNotCallView, getDoNotCallEntry, listDoNotCallEntries, removeFromDoNotCall } from '../../services/doNotCall.js';
import { badRequest } from '../errors.js';
import { defineRoute } from '../route.js';
import {
  addDoNotCallBody,
  doNotCallEntryResponse,
  doNotCallParams,
  doNotCallRemovedResponse,
  listDoNotCallQuery,
  listDoNotCallResponse,
} from './schemas.js';

const tags = ['Do not call'];

export const doNotCallRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/do-not-call',
    operationId: 'addDoNotCall',
    summary: 'Put a number on the do-not-call list',
    description:
      'The number is normalised like a contact’s. From then on create-phone-call to it answers 409, a call already scheduled to it ends `failed` / `do_not_call` when it comes to dial, batches skip it and retries stop at it (docs/calls.md).',
    tags,
    auth: 'apiKey',
    request: { body: addDoNotCallBody, bodyRequired: true },
    responses: {
      201: { description: 'Added', schema: doNotCallEntryResponse },
      200: { description: 'The number was on the list already (the entry as it was)', schema: doNotCallEntryResponse },
      400: { description: 'Missing or invalid phone_number, reason too long' },
    },
    handler: async ({ body, auth }, deps) => {
      const e164 = normalizePhoneField(body.phone_number, deps.config.DEFAULT_PHONE_REGION);
      const { entry, created } = await addToDoNotCall(deps.pool, auth.teamId, e164, body.reason);
      return { status: created ? 201 : 200, body: { success: true, entry: doNotCallView(entry) } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/do-not-call',
    operationId: 'listDoNotCall',
    summary: 'The team’s do-not-call list, newest first',
    description: 'Keyset paging like /api/v1/calls: pass `meta.next_cursor` as `cursor` (null on the last page).',
    tags,
    auth: 'apiKey',
    request: { query: listDoNotCallQuery },
    responses: {
      200: { description: 'One page of entries', schema: listDoNotCallResponse },
      400: { description: 'limit not an integer from 1 to 500, or a malformed cursor' },
    },
    handler: async ({ query, auth }, deps) => {
      const position = query.cursor === undefined || query.cursor === '' ? undefined : decodeCursor(query.cursor);
      if (query.cursor && !position) throw badRequest('Invalid request: cursor must be the meta.next_cursor of a previous page (a date-time)');
      const page = await listDoNotCallEntries(deps.pool, auth.teamId, { limit: query.limit, position });
      const last = page.entries[page.entries.length - 1];
      const nextCursor = page.hasMore && last ? encodeCursor(BigInt(last.created_us!), last.seq) : null;
      return { body: { success: true, entries: page.entries.map(doNotCallView), meta: { limit: query.limit, total: page.total, next_cursor: nextCursor } } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/do-not-call/{phone_number}',
    operationId: 'getDoNotCall',
    summary: 'Whether a number is on the do-not-call list',
    tags,
    auth: 'apiKey',
    request: { params: doNotCallParams },
    responses: {
      200: { description: 'The entry', schema: doNotCallEntryResponse },
      400: { description: 'Invalid phone number' },
      404: { description: 'The number is not on the team’s list' },
    },
    handler: async ({ params, auth }, deps) => {
      const e164 = normalizePhoneField(params.phone_number, deps.config.DEFAULT_PHONE_REGION);
      return { body: { success: true, entry: doNotCallView(await getDoNotCallEntry(deps.pool, auth.teamId, e164)) } };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/v1/do-not-call/{phone_number}',
    operationId: 'removeDoNotCall',
    summary: 'Take a number off the do-not-call list',
    description: 'Calls already ended `do_not_call` stay as they are; new calls to the number may be scheduled again.',
    tags,
    auth: 'apiKey',
    request: { params: doNotCallParams },
    responses: {
      200: { description: 'Removed', schema: doNotCallRemovedResponse },
      400: { description: 'Invalid phone number' },
      404: { description: 'The number is not on the team’s list' },
    },
    handler: async ({ params, auth }, deps) => {
      const e164 = normalizePhoneField(params.phone_number, deps.config.DEFAULT_PHONE_REGION);
      await removeFromDoNotCall(deps.pool, auth.teamId, e164);
      return { body: { success: true, phone_number: e164 } };
    },
  }),
];
