/**
 * How deeply JSON from outside may nest. Deeper values overflow the stack of recursive
 * consumers (JSON.stringify in Temporal's payload converter, recursive walks and schemas),
 * so they are refused where they enter: the API's body parser, script definitions.
 * Both checks here are iterative: their own depth costs no stack.
 */

/** Arrays and objects inside each other, counting the outermost: `{"a":[1]}` is 2 levels. */
export const MAX_JSON_DEPTH = 64;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when the JSON text (UTF-8 bytes) opens more than `max` arrays or objects inside each
 * other. One pass over the bytes, stopping at the first level too deep; brackets inside
 * strings do not count. Text that is not JSON gives some answer and is refused by the
 * parser anyway. (In UTF-8 the bytes of `"` and `\` never occur inside other characters.)
 */
export function jsonTextNestedDeeperThan(bytes: Uint8Array, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i += 1;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) {
      inString = true;
    } else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      depth += 1;
      if (depth > max) return true;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      depth -= 1;
    }
  }
  return false;
}

/** True when a parsed JSON value has more than `max` arrays or objects inside each other. */
export function jsonNestedDeeperThan(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const top = stack.pop()!;
    if (top.value === null || typeof top.value !== 'object') continue;
    const depth = top.depth + 1;
    if (depth > max) return true;
    for (const child of Array.isArray(top.value) ? top.value : Object.values(top.value)) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth });
    }
  }
  return false;
}
