/**
 * Object type schemas (docs/contacts-and-lists.md "Object types"): a map of field name to type
 * name. validation_mode `off` accepts any data; `strict` rejects a field whose value does
 * not have the schema's type and a field the schema does not name. Schema fields are
 * optional: data may leave any of them out.
 */

export const FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export const VALIDATION_MODES = ['off', 'strict'] as const;
export type ValidationMode = (typeof VALIDATION_MODES)[number];

/** Machine names of object types: used in URLs and as keys of the objects map. */
export const TYPE_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

function hasType(value: unknown, type: FieldType): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
  }
}

/** One problem per offending field, each naming it as `<prefix>.<field>`; empty when data is valid. */
export function validateObjectData(
  type: { type_name: string; schema: Record<string, string>; validation_mode: string },
  data: Record<string, unknown>,
  prefix = 'data',
): string[] {
  if (type.validation_mode !== 'strict') return [];
  const problems: string[] = [];
  for (const [field, value] of Object.entries(data)) {
    const expected = type.schema[field] as FieldType | undefined;
    if (expected === undefined || !Object.prototype.hasOwnProperty.call(type.schema, field)) {
      problems.push(`${prefix}.${field} is not a field of object type ${type.type_name}`);
    } else if (!hasType(value, expected)) {
      problems.push(`${prefix}.${field} must be ${expected === 'integer' || expected === 'array' || expected === 'object' ? 'an' : 'a'} ${expected}`);
    }
  }
  return problems;
}
