import { JSON_PATH_PATTERN } from '../../domain/jsonPath.js';
import { TYPE_NAME_PATTERN } from '../../domain/objectTypes.js';
import { findUnstorableText, isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../domain/storableText.js';
import { keysDocument, withOneOfFields, z } from '../schemas.js';

// A missing value keeps zod's own message (reported as "<field> is required").
const jsonObject = z
  .record(z.string(), z.unknown(), { error: (issue) => (issue.input === undefined ? undefined : 'must be an object') })
  .superRefine((value, ctx) => {
    const at = findUnstorableText(value);
    if (at) ctx.addIssue({ code: 'custom', path: at.path, message: at.inKey ? `keys ${UNSTORABLE_TEXT_MESSAGE}` : UNSTORABLE_TEXT_MESSAGE });
  });
const storable = (schema: z.ZodString) => schema.refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);

/**
 * The `objects` map of create-phone-call and create-web-session: object type name ->
 * free-form properties, linked to the call's contact by linkObjectsToContact
 * (src/services/objects.ts). This checks the shape; the type names and each type's
 * validation are checked against the team's types by the service (400 naming
 * objects.<type_name>...).
 */
const objectTypeNameKey = z.string().regex(TYPE_NAME_PATTERN, 'keys must be object type names');

export const objectsMapSchema = z
  .record(objectTypeNameKey, jsonObject)
  .refine((m) => Object.keys(m).length <= 50, 'must name at most 50 object types')
  .openapi('ObjectsMap', {
    maxProperties: 50,
    ...keysDocument(objectTypeNameKey),
    description: 'Object type name to an object of free-form properties; each becomes an object of that type linked to the contact',
    example: { insurance_policy: { policy_number: 'P-1234', premium: 120 } },
  });

const keySchema = (name: string) =>
  z
    .strictObject({
      path: storable(z.string().min(1, 'must not be empty').max(512, 'must be at most 512 characters')).openapi({ description: 'JSON path into data (docs/contacts-and-lists.md), at most 32 segments', example: '$.external_ids.hubspot.property_id', pattern: JSON_PATH_PATTERN.source }),
      value: z.union([storable(z.string()), z.number()], { message: 'must be a string' }).transform((v) => String(v)).openapi({ type: 'string' } as never),
    })
    .openapi(name);

export const upsertObjectBody = withOneOfFields(
  z.strictObject({
    name: storable(z.string().max(500, 'must be at most 500 characters')).optional(),
    data: jsonObject,
    type_name: z.string().min(1, 'must not be empty').max(64, 'must be at most 64 characters').optional(),
    type_id: z.string().uuid('must be a UUID').optional(),
    parent_id: z.string().uuid('must be a UUID').nullable().optional(),
    upsert_key: keySchema('UpsertKey').optional(),
    unique_key: keySchema('UniqueKey').optional(),
  }),
  ['type_name', 'type_id'],
  'type_name or type_id is required',
).openapi('UpsertObjectRequest');

export const objectShape = z
  .object({ id: z.string().uuid(), name: z.string().nullable(), type_id: z.string().uuid(), parent_id: z.string().uuid().nullable(), data: z.record(z.string(), z.unknown()) })
  .openapi('Object');

export const upsertObjectResponse = z
  .object({
    success: z.literal(true),
    object_id: z.string().uuid(),
    object: objectShape,
    action: z.enum(['created', 'updated']),
    upsert_key: z.object({ path: z.string(), value: z.string() }).nullable(),
  })
  .openapi('UpsertObjectResponse');
