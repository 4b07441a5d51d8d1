import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../domain/storableText.js';
import { phoneNumberField } from '../contacts/schemas.js';
import { cursorOrEmptyDocument, pageLimitQuery, phoneNumberDocument, z } from '../schemas.js';

export const addDoNotCallBody = z
  .strictObject({
    phone_number: phoneNumberField,
    reason: z.string().max(500, 'must be at most 500 characters').refine(isStorableText, UNSTORABLE_TEXT_MESSAGE).nullable().optional(),
  })
  .openapi('AddDoNotCallRequest');

export const doNotCallParams = z.object({
  phone_number: z.string().openapi(phoneNumberDocument('The phone number; its leading + percent-encoded as %2B in the path')),
});

export const doNotCallEntry = z
  .object({
    phone_number: z.string().openapi({ description: 'E.164' }),
    reason: z.string().nullable(),
    source: z.enum(['api', 'call']).openapi({ description: 'api: added with POST /api/v1/do-not-call; call: the callee asked during the call call_id' }),
    call_id: z.string().nullable().openapi({ description: 'The call in which the callee asked (source call), else null' }),
    created_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('DoNotCallEntry');

export const doNotCallEntryResponse = z.object({ success: z.literal(true), entry: doNotCallEntry }).openapi('DoNotCallEntryResponse');

export const doNotCallRemovedResponse = z.object({ success: z.literal(true), phone_number: z.string() }).openapi('DoNotCallRemoved');

export const listDoNotCallQuery = z.object({
  limit: pageLimitQuery,
  cursor: z.string().optional().openapi(cursorOrEmptyDocument),
});

export const listDoNotCallResponse = z
  .object({
    success: z.literal(true),
    entries: z.array(doNotCallEntry),
    meta: z.object({
      limit: z.number().int(),
      total: z.number().int(),
      next_cursor: z.string().nullable().openapi({ format: 'date-time', description: 'Null on the last page.' }),
    }),
  })
  .openapi('DoNotCallList');
