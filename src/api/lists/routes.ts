import { badRequest, notFound } from '../errors.js';
import { defineRoute } from '../route.js';
import { idempotentId } from '../middleware/idempotency.js';
import { findList, insertList, listContactsPage, listLists, removeContactsFromList, renameList, softDeleteList, type ListRecord } from '../../db/repositories/lists.js';
import { decodeCursor, encodeCursor } from '../../domain/cursor.js';
import { listContactView, normalizeContactInput, objectDataForContacts, type ContactInput } from '../../services/contacts.js';
import { addToList } from '../../services/lists.js';
import {
  addContactsBody,
  addContactsResponse,
  deletedResponse,
  getListQuery,
  listBody,
  listCreated,
  listParams,
  listResponse,
  listListsQuery,
  listsResponse,
  removeContactsBody,
  removeContactsResponse,
  renamedResponse,
} from './schemas.js';

function listView(l: ListRecord, contactCount: number) {
  return { id: l.id, name: l.name, team_id: l.team_id, contact_count: contactCount };
}

const tags = ['Lists'];
const notFoundResponse = { description: 'The list does not exist, is deleted or is not the team’s' };

export const listRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/lists',
    operationId: 'createList',
    summary: 'Create a list',
    tags,
    auth: 'apiKey',
    request: { body: listBody, bodyRequired: true },
    responses: { 201: { description: 'Created', schema: listCreated }, 400: { description: 'Missing or invalid name' } },
    handler: async ({ body, auth, ctx }, deps) => {
      const list = await insertList(deps.pool, auth.teamId, body.name, idempotentId(ctx));
      return { status: 201, body: { success: true, list_id: list.id, list: { ...listView(list, 0), contacts: [] } } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/lists',
    operationId: 'listLists',
    summary: "List the team's lists",
    description: 'Newest first. limit: integer, default 100; a non-integer answers 400, a value outside 1 to 500 is clamped into that range.',
    tags,
    auth: 'apiKey',
    request: { query: listListsQuery },
    responses: { 200: { description: 'The lists', schema: listsResponse }, 400: { description: 'limit is not an integer' } },
    handler: async ({ query, auth }, deps) => {
      const limit = query.limit ?? 100;
      const { lists, total } = await listLists(deps.pool, auth.teamId, limit);
      return { body: { success: true, lists: lists.map((l) => listView(l, l.contact_count)), meta: { limit, total } } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/lists/{list_id}',
    operationId: 'getList',
    summary: 'Get a list with one page of its contacts',
    description:
      'Contacts most recently added first. limit: integer 1 to 500 (default 100; 400 otherwise). cursor: meta.next_cursor of the previous page (a date-time; null on the last page).',
    tags,
    auth: 'apiKey',
    request: { params: listParams, query: getListQuery },
    responses: { 200: { description: 'The list', schema: listResponse }, 400: { description: 'Invalid limit or cursor' }, 404: notFoundResponse },
    handler: async ({ params, query, auth }, deps) => {
      const limit = query.limit ?? 100;
      const position = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined;
      if (query.cursor !== undefined && !position) throw badRequest('Invalid request: cursor is not a valid cursor');
      const list = await findList(deps.pool, auth.teamId, params.list_id);
      if (!list) throw notFound('List not found');
      const rows = await listContactsPage(deps.pool, auth.teamId, list.id, limit + 1, position ? (position.seq !== undefined ? { seq: position.seq } : { at: position.at }) : {});
      const page = rows.slice(0, limit);
      const objectData = await objectDataForContacts(deps.pool, auth.teamId, page.map((r) => r.id));
      const last = page[page.length - 1];
      return {
        body: {
          success: true,
          list: {
            ...listView(list, list.contact_count),
            contacts: page.map((r) => ({ ...listContactView(r, objectData.get(r.id)), added_at: r.added_at.toISOString() })),
          },
          meta: { limit, total: list.contact_count, next_cursor: rows.length > limit ? encodeCursor(BigInt(last.added_at_us), last.seq) : null },
        },
      };
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/lists/{list_id}',
    operationId: 'renameList',
    summary: 'Rename a list',
    tags,
    auth: 'apiKey',
    request: { params: listParams, body: listBody, bodyRequired: true },
    responses: { 200: { description: 'Renamed', schema: renamedResponse }, 400: { description: 'Missing or invalid name' }, 404: notFoundResponse },
    handler: async ({ params, body, auth }, deps) => {
      const renamed = await renameList(deps.pool, auth.teamId, params.list_id, body.name);
      if (!renamed) throw notFound('List not found');
      const list = await findList(deps.pool, auth.teamId, renamed.id);
      return { body: { success: true, list: listView(renamed, list?.contact_count ?? 0) } };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/v1/lists/{list_id}',
    operationId: 'deleteList',
    summary: 'Delete a list (soft: its contacts stay)',
    tags,
    auth: 'apiKey',
    request: { params: listParams },
    responses: { 200: { description: 'Deleted', schema: deletedResponse }, 404: notFoundResponse },
    handler: async ({ params, auth }, deps) => {
      if (!(await softDeleteList(deps.pool, auth.teamId, params.list_id))) throw notFound('List not found');
      return { body: { success: true, list_id: params.list_id } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/lists/{list_id}/contacts',
    operationId: 'addContactsToList',
    summary: 'Add contacts to a list',
    description:
      'Body: contacts (at most 500), a single contact object (the body itself, or under contact), or contact_ids (existing contacts). A phone number that already belongs to a team contact reuses that contact (unchanged). totalContactsAdded counts new members; newContactsCount contacts created; existingContactsCount contacts reused; alreadyInListCount contacts that were members already. list_contacts: each distinct contact of the request, in request order.',
    tags,
    auth: 'apiKey',
    request: { params: listParams, body: addContactsBody, bodyRequired: true },
    responses: {
      201: { description: 'Added', schema: addContactsResponse },
      400: { description: 'Missing or invalid field, invalid phone number, more than 500 contacts' },
      404: { description: 'The list, or one of contact_ids, does not exist or is not the team’s' },
    },
    handler: async ({ params, body, auth, ctx }, deps) => {
      const region = deps.config.DEFAULT_PHONE_REGION;
      const { contacts, contact_ids, contact, ...single } = body;
      const input = contact_ids
        ? { contactIds: contact_ids }
        : {
            contacts: contacts
              ? contacts.map((c, i) => normalizeContactInput(c, region, `contacts[${i}].`))
              : [contact ? normalizeContactInput(contact, region, 'contact.') : normalizeContactInput(single as ContactInput, region)],
          };
      const result = await addToList({ pool: deps.pool, logger: ctx.state.log ?? deps.logger, contactsAdded: deps.listContactsAdded }, auth.teamId, params.list_id, input);
      const objectData = await objectDataForContacts(deps.pool, auth.teamId, result.contacts.map((c) => c.id));
      return {
        status: 201,
        body: {
          success: true,
          totalContactsAdded: result.totalContactsAdded,
          newContactsCount: result.newContactsCount,
          existingContactsCount: result.existingContactsCount,
          alreadyInListCount: result.alreadyInListCount,
          list_contacts: result.contacts.map((c) => listContactView(c, objectData.get(c.id))),
        },
      };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/v1/lists/{list_id}/contacts',
    operationId: 'removeContactsFromList',
    summary: 'Remove contacts from a list (the contacts stay)',
    tags,
    auth: 'apiKey',
    request: { params: listParams, body: removeContactsBody, bodyRequired: true },
    responses: { 200: { description: 'Removed', schema: removeContactsResponse }, 400: { description: 'Missing or invalid contact_ids' }, 404: notFoundResponse },
    handler: async ({ params, body, auth }, deps) => {
      const list = await findList(deps.pool, auth.teamId, params.list_id);
      if (!list) throw notFound('List not found');
      const removedCount = await removeContactsFromList(deps.pool, auth.teamId, list.id, body.contact_ids);
      return { body: { success: true, list_id: list.id, removedCount } };
    },
  }),
];
