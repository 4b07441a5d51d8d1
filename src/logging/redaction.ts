/**
 * What keeps credentials out of the logs: every pino logger of the project and the Temporal
 * runtime's logger pass what they write through redactLogValue, and the access log's path
 * through redactPath. Tokens keep a recognisable tail for correlation (`wh_…Ab3x`); secrets,
 * signatures and header values are replaced whole.
 */
import { stdSerializers } from 'pino';
import { HOOK_PATH_PREFIX } from '../domain/hookTokens.js';

export const REDACTED = '[REDACTED]';
/** How many trailing characters of a token a log keeps (enough to tell two tokens apart). */
const TOKEN_TAIL = 4;
/** A value shorter than this after its prefix shows no tail at all. */
const MIN_TAILED_LENGTH = 9;
/** Nesting past this is not logged (a log object is never that deep on purpose). */
const MAX_DEPTH = 8;

/** `wh_…<last 4>`: a hook token as logs show it (no tail for short, guessed values). */
export function redactHookToken(token: string): string {
  const prefix = token.startsWith('wh_') ? 'wh_' : '';
  const rest = token.slice(prefix.length);
  return `${prefix}…${rest.length >= MIN_TAILED_LENGTH ? rest.slice(-TOKEN_TAIL) : ''}`;
}

// The hook token is the path segment after /api/v1/hooks/ (any case, as a router might take
// it); a segment already holding "…" was redacted before.
const HOOK_PATH_RE = new RegExp(`(${HOOK_PATH_PREFIX.replace(/\//g, '\\/')})(?![^/?#\\s]*…)([^/?#\\s"'<>]+)`, 'gi');

/** A request path as the access log shows it: `/api/v1/hooks/wh_…<last 4>` for a hook URL. */
export function redactPath(path: string): string {
  return path.replace(HOOK_PATH_RE, (_m, prefix: string, token: string) => `${prefix}${redactHookToken(token)}`);
}

const tail = (value: string) => (value.length >= MIN_TAILED_LENGTH ? value.slice(-TOKEN_TAIL) : '');

/**
 * Credentials recognised in free text (messages, error messages and stacks, SIP message
 * samples, URLs), each with its replacement. The formats are the project's own (hook and
 * session tokens, API keys, whsec_ secrets) and the usual carriers of others: header lines,
 * Bearer values, Digest responses, user:password@ in URLs and credential query parameters.
 */
const TEXT_RULES: Array<[RegExp, (match: string, ...groups: string[]) => string]> = [
  // Header lines, to the end of the line: HTTP (Authorization: Basic ...) and SIP (Digest).
  [
    /\b((?:proxy-)?authorization|x-call-token|x-session-token|x-webhook-signature|webhook-signature|x-media-edge-secret|x-api-key|set-cookie|cookie)([ \t]*:[ \t]*)[^\r\n]+/gi,
    (_m, name, colon) => `${name}${colon}${REDACTED}`,
  ],
  [/\b(bearer)\s+[A-Za-z0-9._~+/-]{8,}=*/gi, (_m, word) => `${word} ${REDACTED}`],
  [/\b(response\s*=\s*"?)[0-9a-f]{32,}/gi, (_m, lead) => `${lead}${REDACTED}`],
  [HOOK_PATH_RE, (_m, prefix, token) => `${prefix}${redactHookToken(token)}`],
  [/\bwh_([A-Za-z0-9_-]{9,})/g, (_m, rest) => `wh_…${tail(rest)}`],
  [/\bwst_([A-Za-z0-9_-]{9,})/g, (_m, rest) => `wst_…${tail(rest)}`],
  [/\bwhsec_[A-Za-z0-9+/=_-]{4,}/g, () => 'whsec_…'],
  // API keys: the prefix (stored in clear to find the key) stays, the secret part goes.
  [/\b(va[a-z0-9]{10})_[A-Za-z0-9_-]{9,}/g, (_m, prefix) => `${prefix}_…`],
  // A language-model vendor's key (LLM_API_KEY: sk-..., sk-proj-...); its own echo of one (sk-ab***yz) too.
  [/\bsk-[A-Za-z0-9_*-]{16,}/g, () => 'sk-…'],
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@?#"'<>]+@/gi, (_m, scheme) => `${scheme}${REDACTED}@`],
  [/\b(sips?:[^:@\s;>"']+):[^@\s;>"']+@/gi, (_m, user) => `${user}:${REDACTED}@`],
  [
    /([?&;](?:(?:access|refresh|id|session|call)_)?(?:token|signature|sig|secret|client_secret|password|passwd|api_key|apikey|key|x-amz-signature|x-amz-credential|x-amz-security-token)=)[^&#\s"'<>]+/gi,
    (_m, name) => `${name}${REDACTED}`,
  ],
];

/** Cheap first look: text matching none of these holds nothing TEXT_RULES would change (most log values). */
const MAY_HOLD_CREDENTIAL_RE = /wh_|wst_|whsec_|va[a-z0-9]{10}_|sk-|bearer|authorization|token|signature|cookie|x-media-edge-secret|x-api-key|response|:\/\/|sips?:|\/hooks\/|=/i;

/** Free text with every credential it visibly carries redacted. */
export function redactCredentials(text: string): string {
  if (!MAY_HOLD_CREDENTIAL_RE.test(text)) return text;
  let out = text;
  for (const [pattern, replace] of TEXT_RULES) out = out.replace(pattern, replace as (substring: string, ...args: unknown[]) => string);
  return out;
}

/** Field names whose values are credentials whatever they look like (headers, options, payloads). */
const SECRET_KEY_RE = /(?:secret|password|passwd|passphrase|token|signature|authorization|api[-_]?key|cookie)$/i;

/** A Postgres error (node-postgres' DatabaseError): its `detail` can echo a failing row or key values. */
const isDatabaseError = (err: Error): boolean =>
  typeof (err as { severity?: unknown }).severity === 'string' && typeof (err as { code?: unknown }).code === 'string' && 'routine' in err;

function redactError(err: Error, depth: number, seen: WeakSet<object>): Record<string, unknown> {
  const serialized = stdSerializers.err(err) as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(serialized)) {
    out[key] = key === 'detail' && isDatabaseError(err) && serialized[key] !== undefined ? REDACTED : redactValue(key, serialized[key], depth + 1, seen);
  }
  return out;
}

function redactValue(key: string | undefined, value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (value === null || value === undefined || typeof value === 'boolean') return value;
  if (key !== undefined && SECRET_KEY_RE.test(key)) return REDACTED;
  if (typeof value === 'string') return redactCredentials(value);
  if (typeof value !== 'object') return value;
  if (depth > MAX_DEPTH) return '[Too deep]';
  if (seen.has(value)) return '[Circular]';
  seen.add(value);
  try {
    if (value instanceof Error) return redactError(value, depth, seen);
    // Dates, URLs, Buffers: what JSON would write (a URL's href can carry user:password@).
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return redactValue(undefined, (value as { toJSON(): unknown }).toJSON(), depth + 1, seen);
    if (Array.isArray(value)) return value.map((v) => redactValue(undefined, v, depth + 1, seen));
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value)) out[k] = redactValue(k, (value as Record<string, unknown>)[k], depth + 1, seen);
    return out;
  } finally {
    seen.delete(value);
  }
}

/**
 * A copy of a log object with credentials redacted: values of credential-named fields
 * (`secret`, `*_token`, `authorization`, `x-webhook-signature`...) whole, credentials in
 * strings as redactCredentials finds them, errors serialized first (a Postgres error's
 * `detail` dropped).
 */
export function redactLogValue<T>(value: T): T {
  return redactValue(undefined, value, 0, new WeakSet()) as T;
}
