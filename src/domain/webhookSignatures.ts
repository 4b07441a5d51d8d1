/**
 * Signing secrets and signatures of event webhooks, as the Standard Webhooks specification
 * defines them: a secret `whsec_<base64 key>`, and the header
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`
 * with one signature per valid secret, separated by spaces.
 */
import { createHmac, randomBytes } from 'node:crypto';

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

/** One signature, `v1,<base64>`, of a message under one secret. */
export function signWebhookMessage(secret: string, messageId: string, timestamp: number, body: string): string {
  const digest = createHmac('sha256', webhookSecretKey(secret)).update(`${messageId}.${timestamp}.${body}`).digest('base64');
  return `v1,${digest}`;
}

/** The webhook-signature header: a signature under each secret, newest first, separated by spaces. */
export function webhookSignatureHeader(secrets: readonly string[], messageId: string, timestamp: number, body: string): string {
  return secrets.map((s) => signWebhookMessage(s, messageId, timestamp, body)).join(' ');
}
