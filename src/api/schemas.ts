import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { CURSOR_PATTERN } from '../domain/cursor.js';
import { PHONE_NUMBER_PATTERN } from '../domain/phone.js';

extendZodWithOpenApi(z);

export { z };

/** Shapes every endpoint shares. Resource schemas live next to their routes. */
export const errorResponse = z
  .object({ success: z.literal(false), message: z.string() })
  .openapi('Error', { description: 'Every failure: success false and a message naming the problem.' });

/** The bounds of `limit` on every paged list (docs/api.md "Limits"). */
export const PAGE_LIMIT = { min: 1, max: 500, default: 100 } as const;

/** How the document states PAGE_LIMIT on a `limit` query parameter. */
export const pageLimitDocument = { type: 'integer', minimum: PAGE_LIMIT.min, maximum: PAGE_LIMIT.max, default: PAGE_LIMIT.default } as const;

/**
 * `limit` of GET /calls, /do-not-call and /webhook-deliveries: decimal digits from
 * PAGE_LIMIT.min to max, else 400 `limit must be an integer from 1 to 500`; absent means the default.
 */
export const pageLimitQuery = z
  .string()
  .optional()
  .refine((v) => v === undefined || (/^\d+$/.test(v) && Number(v) >= PAGE_LIMIT.min && Number(v) <= PAGE_LIMIT.max), {
    message: `limit must be an integer from ${PAGE_LIMIT.min} to ${PAGE_LIMIT.max}`,
  })
  .transform((v) => (v === undefined ? PAGE_LIMIT.default : Number(v)))
  .openapi(pageLimitDocument as never);

const CURSOR_DESCRIPTION = 'meta.next_cursor of the previous page (opaque); a plain date-time means items strictly before that instant';

/** What the document says of a `cursor` query parameter: decodeCursor's pattern (400 otherwise). */
export const cursorDocument = { format: 'date-time', pattern: CURSOR_PATTERN.source, description: CURSOR_DESCRIPTION };

/** The same for the lists whose empty `cursor` means the first page. */
export const cursorOrEmptyDocument = {
  anyOf: [
    { type: 'string' as const, maxLength: 0 },
    { type: 'string' as const, format: 'date-time', pattern: CURSOR_PATTERN.source },
  ],
  description: `${CURSOR_DESCRIPTION}; empty: the first page`,
};

/**
 * What the document says of a phone-number field: the characters it may hold, and in words
 * what a pattern cannot say (the number must be possible for its country). The check itself
 * is the service's (normalizePhoneNumber): 400 `<field> is not a valid phone number`.
 */
export function phoneNumberDocument(description: string) {
  return {
    pattern: PHONE_NUMBER_PATTERN.source,
    description: `${description}. E.164 (+ and the country code), or a local format of the service's DEFAULT_PHONE_REGION; it must be a possible number of its country (a known country code and a length its numbers have), which a pattern cannot say.`,
    examples: ['+14155550123', '+442079460958'],
  };
}

/** A schema as JSON Schema, written by zod itself (what it checks that zod-to-openapi does not carry over). */
export function zodJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return json;
}

/** A record whose keys must match `keys`: propertyNames is that key schema as JSON Schema. */
export function keysDocument(keys: z.ZodType): { propertyNames: Record<string, unknown> } {
  return { propertyNames: zodJsonSchema(keys) };
}

/**
 * An object that must carry at least one of `fields`: the refinement answers 400 with
 * `message`, and the document says the same with anyOf.
 */
export function withOneOfFields<T extends z.ZodType<Record<string, unknown>>>(schema: T, fields: readonly string[], message: string) {
  return schema
    .refine((b) => fields.some((f) => b[f] !== undefined), { message })
    .openapi({ anyOf: fields.map((f) => ({ required: [f] })) });
}

/**
 * A body that takes exactly one of several forms, each known by its keys (an object of
 * form name to keys, the first key of each form required), as the document's oneOf:
 * each branch requires its form's first key and forbids every other form's keys.
 */
export function oneOfFormsDocument(forms: Record<string, readonly string[]>): { oneOf: Record<string, unknown>[] } {
  const all = Object.values(forms);
  return {
    oneOf: all.map((keys) => ({
      required: [keys[0]],
      properties: Object.fromEntries(all.filter((other) => other !== keys).flat().filter((k) => !keys.includes(k)).map((k) => [k, false])),
    })),
  };
}

/** Which of `forms` (see oneOfFormsDocument) an object's keys belong to. */
export function formsPresent(body: Record<string, unknown>, forms: Record<string, readonly string[]>): string[] {
  return Object.entries(forms)
    .filter(([, keys]) => keys.some((k) => body[k] !== undefined))
    .map(([name]) => name);
}
