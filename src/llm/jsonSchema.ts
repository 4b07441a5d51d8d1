/**
 * JSON-Schema checks of what a model wrote: a tool call's arguments, the LLM analyser's answer.
 * A schema is compiled once (Ajv generates a validator function) and kept; each check answers
 * the value or the problems, named by where they are (`time: is required`, `day: must be string`).
 * Formats (`"format": "date"`) are not checked: the vendor's strict JSON mode ignores most of
 * them too.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

export type JsonSchema = Record<string, unknown>;

export type JsonCheck<T = unknown> = { ok: true; value: T } | { ok: false; errors: string[]; message: string };

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false, logger: false });

/**
 * Compiled validators by the schema's JSON text: a schema is compiled once however often it is
 * checked, also when it arrives as a new object each time (from an activity's input). Bounded:
 * the least recently used go first.
 */
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 500;

/** `a[0].b` for Ajv's `/a/0/b`; '' for the whole value. */
function pathOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), '');
}

function describe(error: ErrorObject): string {
  const at = pathOf(error.instancePath);
  const join = (name: string) => (at ? `${at}.${name}` : name);
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') return `${join(String(params.missingProperty))}: is required`;
  if (error.keyword === 'additionalProperties') return `${join(String(params.additionalProperty))}: is not allowed`;
  if (error.keyword === 'enum') return `${at || 'value'}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  return `${at || 'value'}: ${error.message ?? error.keyword}`;
}

/** Why `schema` is not a usable JSON Schema, or undefined when it is. */
export function jsonSchemaProblem(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'must be a JSON Schema object';
  try {
    validatorOf(schema as JsonSchema);
    return undefined;
  } catch (err) {
    return `is not a valid JSON Schema: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function validatorOf(schema: JsonSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (validate) {
    compiled.delete(key);
  } else {
    validate = ajv.compile(schema);
    // Ajv keeps every schema object it compiled: this cache is the one that holds them.
    ajv.removeSchema(schema);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  }
  compiled.set(key, validate);
  return validate;
}

/** Checks a value against `schema` (compiled on first use; throws if the schema itself is invalid). */
export function checkJson<T = unknown>(schema: JsonSchema, value: unknown): JsonCheck<T> {
  const validate = validatorOf(schema);
  if (validate(value)) return { ok: true, value: value as T };
  const errors = [...new Set((validate.errors ?? []).map(describe))];
  return { ok: false, errors, message: errors.join('; ') };
}

/** Parses JSON text (a tool call's arguments, a JSON answer) and checks it against `schema`. */
export function checkJsonText<T = unknown>(schema: JsonSchema, text: string): JsonCheck<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const message = `not JSON: ${err instanceof Error ? err.message : String(err)}`;
    return { ok: false, errors: [message], message };
  }
  return checkJson<T>(schema, value);
}
