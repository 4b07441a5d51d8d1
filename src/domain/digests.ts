import { createHash, timingSafeEqual } from 'node:crypto';

/** The SHA-256 (hex) under which a secret is stored: API keys, hook tokens, session tokens. */
export const hashSecret = (value: string): string => createHash('sha256').update(value).digest('hex');

/** Constant-time comparison of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
