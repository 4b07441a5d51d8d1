import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../domain/storableText.js';
import { phoneNumberField } from '../contacts/schemas.js';
import { z } from '../schemas.js';

export const addDoNotCallBody = z
  .strictObject({
    phone_number: phoneNumberField,
    reason: z.string().max(500, 'must be at most 500 characters').refine(isStorableText, UNSTORABLE_TEXT_MESSAGE).nullable().optional(),
  })
  .openapi('AddDoNotCallRequest');

export const doNotCallParams = z.object({
  phone_number: z.string().openapi({ description: 'The phone number, leading + written as %2B', example: '%2B14155550123' }),
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
  limit: z
    .string()
    .optional()
    .refine((v) => v === undefined || (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 500), { message: 'limit must be an integer from 1 to 500' })
    .transform((v) => (v === undefined ? 100 : Number(v)))
    .openapi({ type: 'integer', description: '1 to 500, default 100' }),
  cursor: z.string().optional().openapi({ format: 'date-time', description: 'meta.next_cursor of the previous page' }),
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
