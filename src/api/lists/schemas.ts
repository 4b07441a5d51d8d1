import { contactUpsertBody, listContact } from '../contacts/schemas.js';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../domain/storableText.js';
import { cursorDocument, formsPresent, oneOfFormsDocument, PAGE_LIMIT, pageLimitDocument, z } from '../schemas.js';

export const MAX_CONTACTS_PER_REQUEST = 500;

const listName = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);

export const listBody = z.strictObject({ name: listName }).openapi('ListNameRequest');

export const listParams = z.object({ list_id: z.string().openapi({ description: 'The list id', example: '0b6f1f1e-2a8e-4c55-9d36-3f7a1f2c9a10' }) });

const integerText = z.string().regex(/^[+-]?\d+$/, 'must be an integer').transform(Number);

/** GET /lists: limit must be an integer (400 otherwise); outside 1 to 500 it is clamped. */
export const listListsQuery = z.object({
  limit: integerText
    .transform((n) => Math.min(PAGE_LIMIT.max, Math.max(PAGE_LIMIT.min, n)))
    .optional()
    .openapi({ type: 'integer', default: PAGE_LIMIT.default, description: `Clamped into ${PAGE_LIMIT.min} to ${PAGE_LIMIT.max}` } as never),
});

/** GET /lists/{id}: limit and cursor like /calls (limit 1 to 500, 400 otherwise). */
export const getListQuery = z.object({
  limit: integerText
    .refine((n) => n >= PAGE_LIMIT.min && n <= PAGE_LIMIT.max, `must be an integer between ${PAGE_LIMIT.min} and ${PAGE_LIMIT.max}`)
    .optional()
    .openapi(pageLimitDocument as never),
  cursor: z.string().max(100, 'is not a valid cursor').optional().openapi(cursorDocument),
});

const contactIds = z
  .array(z.string().uuid('must be a contact id (UUID)'), { message: 'must be an array of contact ids' })
  .min(1, 'must not be empty')
  .max(MAX_CONTACTS_PER_REQUEST, `must have at most ${MAX_CONTACTS_PER_REQUEST} items`);

/** The forms of an add-contacts body, each by its keys (its first key required). */
const ADD_CONTACTS_FORMS = {
  contacts: ['contacts'],
  contact_ids: ['contact_ids'],
  contact: ['contact'],
  single: Object.keys(contactUpsertBody.shape),
} as const;

/**
 * add-contacts: exactly one of `contacts` (array of contact objects), `contact_ids`
 * (existing contacts) or the fields of a single contact.
 */
export const addContactsBody = z
  .strictObject({
    contacts: z
      .array(contactUpsertBody, { message: 'must be an array of contacts' })
      .min(1, 'must not be empty')
      .max(MAX_CONTACTS_PER_REQUEST, `must have at most ${MAX_CONTACTS_PER_REQUEST} items`)
      .optional(),
    contact_ids: contactIds.optional(),
    // The single contact, wrapped ({ contact: {...} }) or as the body itself.
    contact: contactUpsertBody.optional(),
    ...contactUpsertBody.partial().shape,
  })
  .superRefine((b, ctx) => {
    const forms = formsPresent(b, ADD_CONTACTS_FORMS);
    if (forms.length > 1) {
      ctx.addIssue({ code: 'custom', message: 'send only one of contacts, contact_ids or a single contact', path: ['contacts'] });
    } else if (forms.length === 0 || (forms[0] === 'single' && b.phone_number === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'is required unless contacts or contact_ids is sent', path: ['phone_number'] });
    }
  })
  .openapi('AddContactsRequest', {
    description: `Either contacts (at most ${MAX_CONTACTS_PER_REQUEST} contact objects), contact_ids (existing contacts) or a single contact object (the body itself, or under contact). A number that already belongs to a team contact reuses that contact unchanged.`,
    ...oneOfFormsDocument(ADD_CONTACTS_FORMS),
  });

export const removeContactsBody = z.strictObject({ contact_ids: contactIds }).openapi('RemoveContactsRequest');

export const listShape = z
  .object({ id: z.string().uuid(), name: z.string(), team_id: z.string().uuid(), contact_count: z.number().int() })
  .openapi('List');

export const listCreated = z.object({ success: z.literal(true), list_id: z.string().uuid(), list: listShape.extend({ contacts: z.array(listContact) }) }).openapi('ListCreated');

export const listsResponse = z
  .object({ success: z.literal(true), lists: z.array(listShape), meta: z.object({ limit: z.number().int(), total: z.number().int() }) })
  .openapi('ListsResponse');

export const listResponse = z
  .object({
    success: z.literal(true),
    list: listShape.extend({ contacts: z.array(listContact.extend({ added_at: z.string().datetime() })) }),
    meta: z.object({ limit: z.number().int(), total: z.number().int(), next_cursor: z.string().nullable() }),
  })
  .openapi('ListResponse');

export const renamedResponse = z.object({ success: z.literal(true), list: listShape }).openapi('ListRenamed');

export const deletedResponse = z.object({ success: z.literal(true), list_id: z.string().uuid() }).openapi('ListDeleted');

export const addContactsResponse = z
  .object({
    success: z.literal(true),
    totalContactsAdded: z.number().int(),
    newContactsCount: z.number().int(),
    existingContactsCount: z.number().int(),
    alreadyInListCount: z.number().int(),
    list_contacts: z.array(listContact),
  })
  .openapi('AddContactsResponse');

export const removeContactsResponse = z
  .object({ success: z.literal(true), list_id: z.string().uuid(), removedCount: z.number().int() })
  .openapi('RemoveContactsResponse');
