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

/** One step of the path, linked to its parent: a deep value costs no copying of paths. */
type PathLink = { parent: PathLink; segment: string | number } | undefined;
type Pending = { key?: undefined; value: unknown; at: PathLink } | { key: string; at: PathLink };

/**
 * Where the first string of a JSON value (keys included) that Postgres cannot store is, if
 * any. Iterative, in document order (a member's name before its value), so a deeply
 * nested value cannot overflow the stack.
 */
export function findUnstorableText(value: unknown, path: (string | number)[] = []): UnstorableAt | undefined {
  const pathTo = (at: PathLink): (string | number)[] => {
    const segments: (string | number)[] = [];
    for (let link = at; link; link = link.parent) segments.push(link.segment);
    return [...path, ...segments.reverse()];
  };
  const pending: Pending[] = [{ value, at: undefined }];
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (next.key !== undefined) {
      if (!isStorableText(next.key)) return { path: pathTo(next.at), inKey: true };
      continue;
    }
    const current = next.value;
    if (typeof current === 'string') {
      if (!isStorableText(current)) return { path: pathTo(next.at), inKey: false };
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) pending.push({ value: current[i], at: { parent: next.at, segment: i } });
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        pending.push({ value: child, at: { parent: next.at, segment: key } });
        pending.push({ key, at: next.at });
      }
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
