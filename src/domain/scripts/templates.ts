/**
 * Script variables and `{{variable}}` templates (docs/scripts.md). Variables live in one
 * nested JSON object (the scope); a dotted name walks it: `contact.full_name`,
 * `objects.identity.date_of_birth`, `webhook.response`. Pure, so workflows use it.
 */

/** A variable name: dotted segments of letters, digits and underscores, not starting with a digit. */
export const VARIABLE_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*$/;

const NAME = '[A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z0-9_]+)*';
const TEMPLATE_RE = new RegExp(`\\{\\{\\s*(${NAME})\\s*\\}\\}`, 'g');
const PLAIN_REF_RE = new RegExp(`^\\s*\\{\\{\\s*(${NAME})\\s*\\}\\}\\s*$`);
const FIELD_PATH_RE = new RegExp(`^\\s*\\{\\{\\s*(${NAME})\\s*\\}\\}\\.([A-Za-z0-9_]+(?:\\.[A-Za-z0-9_]+)*)\\s*$`);

export type Scope = Record<string, unknown>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Follows a dotted path into a value (objects by key, arrays by index); undefined when absent.
 * A name on a list reads its last item: `objects.identity.date_of_birth` is the newest linked
 * identity's when the contact has several.
 */
export function getPath(value: unknown, path: string): unknown {
  let current = value;
  for (const segment of path.split('.')) {
    if (Array.isArray(current) && !/^\d+$/.test(segment)) current = current[current.length - 1];
    if (Array.isArray(current) && /^\d+$/.test(segment)) current = current[Number(segment)];
    else if (isRecord(current) && Object.hasOwn(current, segment)) current = current[segment];
    else return undefined;
  }
  return current;
}

/** The variable's value, or undefined when it is not set. */
export function getVariable(scope: Scope, name: string): unknown {
  return getPath(scope, name);
}

/** Sets a variable in place, creating the objects along its path (a non-object on the way is replaced). */
export function setVariable(scope: Scope, name: string, value: unknown): void {
  const segments = name.split('.');
  let current: Record<string, unknown> = scope;
  for (const segment of segments.slice(0, -1)) {
    const next = current[segment];
    if (!isRecord(next)) current[segment] = {};
    current = current[segment] as Record<string, unknown>;
  }
  current[segments[segments.length - 1]] = value;
}

/** The first segment of a variable name: its namespace (`auth_check` for `auth_check.verified`). */
export function namespaceOf(name: string): string {
  return name.split('.')[0];
}

/** How a value reads inside text: strings as they are, null/undefined as nothing, the rest as JSON. */
export function renderValue(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Replaces every `{{name}}` with the variable's value; unknown variables become empty text. */
export function renderTemplate(template: string, lookup: (name: string) => unknown): string {
  return template.replace(TEMPLATE_RE, (_, name: string) => renderValue(lookup(name)));
}

/** The variable name when the entry is exactly one reference (`{{answers.name}}`), else undefined. */
export function plainReference(entry: string): string | undefined {
  return PLAIN_REF_RE.exec(entry)?.[1];
}

/** `{{variable}}.field_name` (a field of every record of a record set), else undefined. */
export function fieldPathReference(entry: string): { variable: string; field: string } | undefined {
  const m = FIELD_PATH_RE.exec(entry);
  return m ? { variable: m[1], field: m[2] } : undefined;
}
