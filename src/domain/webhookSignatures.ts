/**
 * Signing secrets and signatures as the Standard Webhooks specification defines them: a
 * secret `whsec_<base64 key>`, and the header
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`
 * with one signature per valid secret, separated by spaces. Event webhooks are signed with
 * it; hooks created with `--signature standard-webhooks` are verified with it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Random bytes of a new secret's key (the specification asks for 24 to 64). */
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** The HMAC key of a secret: the base64-decoded part after `whsec_`. */
export function webhookSecretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret, 'base64');
}

/** The HMAC-SHA256 of `<id>.<timestamp>.<body>`, the body as its exact bytes. */
function messageDigest(secret: string, messageId: string, timestamp: number, body: string | Buffer): Buffer {
  return createHmac('sha256', webhookSecretKey(secret)).update(`${messageId}.${timestamp}.`).update(body).digest();
}

/** One signature, `v1,<base64>`, of a message under one secret. */
export function signWebhookMessage(secret: string, messageId: string, timestamp: number, body: string | Buffer): string {
  return `v1,${messageDigest(secret, messageId, timestamp, body).toString('base64')}`;
}

/** The webhook-signature header: a signature under each secret, newest first, separated by spaces. */
export function webhookSignatureHeader(secrets: readonly string[], messageId: string, timestamp: number, body: string): string {
  return secrets.map((s) => signWebhookMessage(s, messageId, timestamp, body)).join(' ');
}

/** Key sizes the specification allows for a symmetric secret. */
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;

/** Whether a secret is `whsec_` and the canonical base64 of 24 to 64 bytes, as every Standard Webhooks library reads it. */
export function isWebhookSecret(secret: string): boolean {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) return false;
  const encoded = secret.slice(WEBHOOK_SECRET_PREFIX.length);
  const key = Buffer.from(encoded, 'base64');
  return key.length >= MIN_SECRET_BYTES && key.length <= MAX_SECRET_BYTES && key.toString('base64') === encoded;
}

/** The headers of a Standard Webhooks request, as received (undefined when absent). */
export interface StandardWebhookHeaders {
  id?: string;
  timestamp?: string;
  signature?: string;
}

export type StandardWebhookVerdict =
  | { ok: true; id: string; timestamp: number }
  | { ok: false; problem: 'missing_headers' | 'malformed_timestamp' | 'too_old' | 'too_new' | 'bad_signature' };

/**
 * Verifies a Standard Webhooks request: the three headers present, the timestamp (decimal
 * Unix seconds) within `toleranceSeconds` of `nowSeconds` either way, and one `v1,` signature
 * of the header list that is the HMAC of `<id>.<timestamp>.<exact body bytes>` (compared in
 * constant time; other versions, such as the asymmetric `v1a`, are skipped). The timestamp is
 * checked first, as the specification's libraries do: it is public, so refusing it early
 * tells a sender nothing about the secret.
 */
export function verifyStandardWebhook(
  secret: string,
  headers: StandardWebhookHeaders,
  body: string | Buffer,
  clock: { nowSeconds: number; toleranceSeconds: number },
): StandardWebhookVerdict {
  const { id, timestamp: timestampHeader, signature } = headers;
  if (!id || !timestampHeader || !signature) return { ok: false, problem: 'missing_headers' };
  if (!/^\d{1,12}$/.test(timestampHeader.trim())) return { ok: false, problem: 'malformed_timestamp' };
  const timestamp = Number(timestampHeader.trim());
  if (clock.nowSeconds - timestamp > clock.toleranceSeconds) return { ok: false, problem: 'too_old' };
  if (timestamp - clock.nowSeconds > clock.toleranceSeconds) return { ok: false, problem: 'too_new' };
  const expected = messageDigest(secret, id, timestamp, body);
  let matched = false;
  for (const entry of signature.split(' ')) {
    if (!entry.startsWith('v1,')) continue;
    const given = Buffer.from(entry.slice('v1,'.length), 'base64');
    // Every entry is compared, so the time taken does not tell which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched ? { ok: true, id, timestamp } : { ok: false, problem: 'bad_signature' };
}
