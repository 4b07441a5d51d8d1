/**
 * The small, safe subset of JSONPath used by upsert and unique keys of objects:
 *
 *   $                      the whole document (never useful as a key; rejected by parseKeyPath)
 *   $.name                 a member; name = letters, digits, _ and -, not starting with a digit or -
 *   $['any name'] $["x"]   a member with any name (\' \" \\ escapes inside the quotes)
 *   $[0]                   an array element (non-negative integer, no leading zeros)
 *
 * chained, e.g. $.external_ids.hubspot.property_id or $.items[0]['sku code'].
 * No wildcards, slices, filters, unions, recursive descent or script expressions: the
 * path names exactly one location, and evaluating it is a plain walk (no eval, no regex
 * built from input). Paths are at most MAX_PATH_LENGTH characters and MAX_PATH_SEGMENTS deep.
 */

export type JsonPathSegment = { kind: 'member'; name: string } | { kind: 'index'; index: number };

export const MAX_PATH_LENGTH = 512;
export const MAX_PATH_SEGMENTS = 32;

/**
 * Key paths (parseKeyPath: at least one segment) as one regular expression, the OpenAPI
 * pattern of upsert and unique keys; it does not count segments (MAX_PATH_SEGMENTS).
 */
export const JSON_PATH_PATTERN = /^\$(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[(?:0|[1-9][0-9]{0,8})\]|\['(?:[^'\\]|\\['\\])*'\]|\["(?:[^"\\]|\\["\\])*"\])+$/;

export type ParseResult = { ok: true; segments: JsonPathSegment[] } | { ok: false; error: string };

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_-]/;

/** Parses a path of the supported subset; a malformed path gives an error saying why. */
export function parseJsonPath(path: string): ParseResult {
  if (typeof path !== 'string') return { ok: false, error: 'must be a string' };
  if (path.length > MAX_PATH_LENGTH) return { ok: false, error: `must be at most ${MAX_PATH_LENGTH} characters` };
  if (path[0] !== '$') return { ok: false, error: 'must start with $' };
  const segments: JsonPathSegment[] = [];
  let i = 1;
  while (i < path.length) {
    if (segments.length >= MAX_PATH_SEGMENTS) return { ok: false, error: `must have at most ${MAX_PATH_SEGMENTS} segments` };
    const c = path[i];
    if (c === '.') {
      i += 1;
      const start = i;
      if (i >= path.length || !IDENT_START.test(path[i])) return { ok: false, error: `expected a member name at position ${i}` };
      while (i < path.length && IDENT_PART.test(path[i])) i += 1;
      segments.push({ kind: 'member', name: path.slice(start, i) });
    } else if (c === '[') {
      i += 1;
      const q = path[i];
      if (q === "'" || q === '"') {
        i += 1;
        let name = '';
        let closed = false;
        while (i < path.length) {
          const ch = path[i];
          if (ch === '\\') {
            const next = path[i + 1];
            if (next !== q && next !== '\\') return { ok: false, error: `invalid escape at position ${i}` };
            name += next;
            i += 2;
          } else if (ch === q) {
            closed = true;
            i += 1;
            break;
          } else {
            name += ch;
            i += 1;
          }
        }
        if (!closed) return { ok: false, error: 'has an unterminated quoted name' };
        if (path[i] !== ']') return { ok: false, error: `expected ] at position ${i}` };
        i += 1;
        segments.push({ kind: 'member', name });
      } else {
        const start = i;
        while (i < path.length && path[i] >= '0' && path[i] <= '9') i += 1;
        const digits = path.slice(start, i);
        if (digits.length === 0 || path[i] !== ']') return { ok: false, error: `expected an array index or a quoted name at position ${start}` };
        if (digits.length > 1 && digits[0] === '0') return { ok: false, error: `array index has a leading zero at position ${start}` };
        if (digits.length > 9) return { ok: false, error: `array index is too large at position ${start}` };
        i += 1;
        segments.push({ kind: 'index', index: Number(digits) });
      }
    } else {
      return { ok: false, error: `unexpected character ${JSON.stringify(c)} at position ${i}` };
    }
  }
  return { ok: true, segments };
}

/** Like parseJsonPath, but the path must name something inside the document (not $ itself). */
export function parseKeyPath(path: string): ParseResult {
  const parsed = parseJsonPath(path);
  if (parsed.ok && parsed.segments.length === 0) return { ok: false, error: 'must name a field inside data, e.g. $.id' };
  return parsed;
}

/** The value at the path, or undefined when the document has nothing there. */
export function valueAtPath(document: unknown, segments: readonly JsonPathSegment[]): unknown {
  let current: unknown = document;
  for (const segment of segments) {
    if (segment.kind === 'member') {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
      if (!Object.prototype.hasOwnProperty.call(current, segment.name)) return undefined;
      current = (current as Record<string, unknown>)[segment.name];
    } else {
      if (!Array.isArray(current) || segment.index >= current.length) return undefined;
      current = current[segment.index];
    }
  }
  return current;
}

/**
 * The key value of a scalar as compared with an upsert or unique key's `value`: strings as
 * they are, numbers and booleans in their JSON text; objects, arrays and null have none.
 */
export function keyValueOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return JSON.stringify(value);
  if (typeof value === 'boolean') return String(value);
  return undefined;
}

/** Writes segments back as a canonical path ($.a['b c'][0]). */
export function formatJsonPath(segments: readonly JsonPathSegment[]): string {
  let out = '$';
  for (const segment of segments) {
    if (segment.kind === 'index') out += `[${segment.index}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(segment.name)) out += `.${segment.name}`;
    else out += `['${segment.name.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}']`;
  }
  return out;
}

/** The path as the text[] Postgres' #>> operator takes (members by name, elements by index). */
export function postgresPath(segments: readonly JsonPathSegment[]): string[] {
  return segments.map((s) => (s.kind === 'member' ? s.name : String(s.index)));
}

/**
 * The upsert keys tried when an upsert-object request sends none (docs/contacts-and-lists.md "Objects"): each
 * $.external_ids.<system>.property_id present in data (in data's order), then $.id.
 * Only candidates whose value is a string, number or boolean are returned.
 */
export function defaultUpsertKeys(data: Record<string, unknown>): { path: string; segments: JsonPathSegment[]; value: string }[] {
  const keys: { path: string; segments: JsonPathSegment[]; value: string }[] = [];
  const externalIds = data.external_ids;
  if (externalIds !== null && typeof externalIds === 'object' && !Array.isArray(externalIds)) {
    for (const system of Object.keys(externalIds)) {
      const segments: JsonPathSegment[] = [
        { kind: 'member', name: 'external_ids' },
        { kind: 'member', name: system },
        { kind: 'member', name: 'property_id' },
      ];
      const value = keyValueOf(valueAtPath(data, segments));
      if (value !== undefined) keys.push({ path: formatJsonPath(segments), segments, value });
    }
  }
  const idSegments: JsonPathSegment[] = [{ kind: 'member', name: 'id' }];
  const id = keyValueOf(valueAtPath(data, idSegments));
  if (id !== undefined) keys.push({ path: '$.id', segments: idSegments, value: id });
  return keys;
}
