import { FIELD_TYPES, TYPE_NAME_PATTERN, VALIDATION_MODES } from '../../domain/objectTypes.js';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../domain/storableText.js';
import { keysDocument, PAGE_LIMIT, pageLimitDocument, z } from '../schemas.js';

export const typeNameField = z
  .string()
  .regex(TYPE_NAME_PATTERN, 'must be 1 to 64 letters, digits, _ or -, starting with a letter')
  .openapi({ description: 'Machine name, unique per team; used in URLs and as key of the objects map', example: 'insurance_policy' });

const schemaFieldName = z
  .string()
  .min(1, 'field names must not be empty')
  .max(100, 'field names must be at most 100 characters')
  // Said as a pattern too, so the document's propertyNames has it (NUL cannot be stored).
  .regex(/^[^\u0000]*$/, `field names ${UNSTORABLE_TEXT_MESSAGE}`)
  .refine(isStorableText, `field names ${UNSTORABLE_TEXT_MESSAGE}`);

export const createObjectTypeBody = z
  .strictObject({
    type_name: typeNameField,
    display_name: z.string().min(1, 'must not be empty').max(200, 'must be at most 200 characters').refine(isStorableText, UNSTORABLE_TEXT_MESSAGE).optional().openapi({ description: 'Defaults to type_name' }),
    description: z.string().max(2000, 'must be at most 2000 characters').refine(isStorableText, UNSTORABLE_TEXT_MESSAGE).optional(),
    validation_mode: z.enum(VALIDATION_MODES, { message: `must be one of ${VALIDATION_MODES.join(', ')}` }).optional().openapi({ description: 'off (default): any data; strict: data fields must be in the schema and have its type' }),
    unique_by_contact: z.boolean({ message: 'must be a boolean' }).optional().openapi({ description: 'A contact has at most one object of this type (default false)' }),
    schema: z
      .record(schemaFieldName, z.enum(FIELD_TYPES, { message: `must be one of ${FIELD_TYPES.join(', ')}` }))
      .refine((s) => Object.keys(s).length <= 200, 'must have at most 200 fields')
      .optional()
      .openapi({ description: 'Field name to type name', example: { policy_number: 'string', premium: 'number' }, maxProperties: 200, ...keysDocument(schemaFieldName) }),
  })
  .openapi('CreateObjectTypeRequest');

export const objectType = z
  .object({
    id: z.string().uuid(),
    type_name: z.string(),
    display_name: z.string(),
    description: z.string(),
    schema: z.record(z.string(), z.string()),
    validation_mode: z.enum(VALIDATION_MODES),
    unique_by_contact: z.boolean(),
  })
  .openapi('ObjectType');

export const objectTypeCreated = z.object({ success: z.literal(true), object_type_id: z.string().uuid(), object_type: objectType }).openapi('ObjectTypeCreated');

/** limit of GET /object-types: an integer 1 to 500 (default 100); anything else is a 400. */
export const listObjectTypesQuery = z.object({
  limit: z
    .string()
    .regex(/^\d+$/, `must be an integer between ${PAGE_LIMIT.min} and ${PAGE_LIMIT.max}`)
    .transform(Number)
    .refine((n) => n >= PAGE_LIMIT.min && n <= PAGE_LIMIT.max, `must be an integer between ${PAGE_LIMIT.min} and ${PAGE_LIMIT.max}`)
    .optional()
    .openapi(pageLimitDocument as never),
});

export const objectTypeList = z
  .object({ success: z.literal(true), object_types: z.array(objectType), meta: z.object({ limit: z.number().int(), total: z.number().int() }) })
  .openapi('ObjectTypeList');

export const byNameParams = z.object({ type_name: z.string().openapi({ example: 'insurance_policy' }) });

export const objectTypeResponse = z.object({ success: z.literal(true), object_type: objectType }).openapi('ObjectTypeResponse');
