/**
 * The X-Call-Token of a create-web-call call (docs/web-calls.md): `<exp>.<mac>`, where `exp`
 * is the end of the call's connect window in Unix seconds and `mac` the base64url
 * HMAC-SHA256 of `web-call:<call_id>:<exp>` under MEDIA_EDGE_SECRET. The service mints it;
 * the media edge checks it without a database: the expiry is inside what the HMAC covers,
 * so a kept token is dead once its window has passed.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** A create-web-call call waits this long for the browser (workflows/callWorkflow.ts WEB_CONNECT_TIMEOUT_MS); its token lives as long. */
export const WEB_CALL_CONNECT_MS = 2 * 60_000;

const TOKEN = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

const mac = (secret: string, callId: string, exp: number): string => createHmac('sha256', secret).update(`web-call:${callId}:${exp}`).digest('base64url');

/** The token of `callId`, valid until `expiresAt` (rounded down to the second). */
export function mintWebCallToken(secret: string, callId: string, expiresAt: Date): string {
  const exp = Math.floor(expiresAt.getTime() / 1000);
  return `${exp}.${mac(secret, callId, exp)}`;
}

export type WebCallTokenCheck = { valid: true; expiresAt: Date } | { valid: false; reason: 'invalid' | 'expired' };

/**
 * Whether `token` is the service's token for `callId` and still in its window at `nowMs`.
 * Forged, altered or malformed tokens are `invalid` whatever their expiry; only a genuine
 * token can be `expired`.
 */
export function checkWebCallToken(secret: string, callId: string, token: string, nowMs: number = Date.now()): WebCallTokenCheck {
  const parts = TOKEN.exec(token);
  if (!parts) return { valid: false, reason: 'invalid' };
  const exp = Number(parts[1]);
  const expected = Buffer.from(mac(secret, callId, exp));
  const given = Buffer.from(parts[2]);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { valid: false, reason: 'invalid' };
  if (nowMs >= exp * 1000) return { valid: false, reason: 'expired' };
  return { valid: true, expiresAt: new Date(exp * 1000) };
}
