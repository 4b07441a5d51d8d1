import { createHmac, timingSafeEqual } from 'node:crypto';

const SHA256_BYTES = 32;

/**
 * How a signed hook's requests are signed: `x-webhook-signature` (the default: the HMAC of the
 * body in X-Webhook-Signature, below) or `standard-webhooks` (webhook-id, webhook-timestamp and
 * webhook-signature over all three; webhookSignatures.ts), which refuses stale timestamps.
 */
export const HOOK_SIGNATURE_SCHEMES = ['x-webhook-signature', 'standard-webhooks'] as const;
export type HookSignatureScheme = (typeof HOOK_SIGNATURE_SCHEMES)[number];

/** The hex HMAC-SHA256 of the exact body bytes under a hook's secret (what senders put in X-Webhook-Signature). */
export function signWebhookBody(secret: string, rawBody: Buffer | string): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/**
 * The 32 digest bytes of an X-Webhook-Signature value: `sha256=<hex>` or bare hex, either
 * case, surrounding spaces ignored; undefined when it cannot be a SHA-256 signature.
 */
export function parseSignatureHeader(header: string | undefined): Buffer | undefined {
  if (header === undefined) return undefined;
  let value = header.trim();
  if (/^sha256=/i.test(value)) value = value.slice('sha256='.length);
  if (!/^[0-9a-f]{64}$/i.test(value)) return undefined;
  return Buffer.from(value, 'hex');
}

/**
 * Whether the header carries the HMAC-SHA256 of the raw body under the secret. The digests
 * are compared in constant time; only the header's shape (public) can end the check early.
 */
export function webhookSignatureValid(secret: string, rawBody: Buffer, header: string | undefined): boolean {
  const presented = parseSignatureHeader(header);
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  if (!presented || presented.length !== SHA256_BYTES) return false;
  return timingSafeEqual(presented, expected);
}
