/**
 * Postgres cannot store some strings a JSON body can carry: the NUL character (in text or
 * jsonb) and, in jsonb, an unpaired UTF-16 surrogate (`"\ud800"`). Left unchecked they
 * turn a malformed request into a 500; these checks make them a 400 naming the field.
 */

// A NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one.
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

export function isStorableText(value: string): boolean {
  return !UNSTORABLE.test(value);
}

export interface UnstorableAt {
  /** Where: member names and array indexes from the value's root. */
  path: (string | number)[];
  /** True when the member name itself is the unstorable string. */
  inKey: boolean;
}

/** Where the first string of a JSON value (keys included) that Postgres cannot store is, if any. */
export function findUnstorableText(value: unknown, path: (string | number)[] = []): UnstorableAt | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : { path, inKey: false };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], [...path, i]);
      if (found) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (!isStorableText(key)) return { path, inKey: true };
      const found = findUnstorableText(child, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

/** "objects.policy.items[0].name" for a path under `prefix`. */
export function formatFieldPath(prefix: string, path: readonly (string | number)[]): string {
  return path.reduce<string>((out, p) => (typeof p === 'number' ? `${out}[${p}]` : `${out}.${p}`), prefix);
}

/** The problem as one message part, e.g. "data.a must not contain NUL characters ...". */
export function unstorableMessage(prefix: string, at: UnstorableAt): string {
  return `${formatFieldPath(prefix, at.path)}${at.inKey ? ' keys' : ''} ${UNSTORABLE_TEXT_MESSAGE}`;
}
