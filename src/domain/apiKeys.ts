import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Lower-case alphanumerics only, so the first "_" of a key always ends its prefix. */
function randomPrefix(): string {
  const bytes = randomBytes(10);
  let out = 'va';
  for (const b of bytes) out += PREFIX_ALPHABET[b % PREFIX_ALPHABET.length];
  return out;
}

export interface GeneratedApiKey {
  apiKey: string;
  prefix: string;
  hash: string;
}

export const hashSecret = (value: string): string => createHash('sha256').update(value).digest('hex');

/** A new key of the form <prefix>_<random token>; only its hash is ever stored. */
export function generateApiKey(): GeneratedApiKey {
  const prefix = randomPrefix();
  const apiKey = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { apiKey, prefix, hash: hashSecret(apiKey) };
}

/** The prefix of a presented key, or undefined when it cannot be one of ours. */
export function apiKeyPrefix(apiKey: string): string | undefined {
  const i = apiKey.indexOf('_');
  if (i <= 0 || i === apiKey.length - 1) return undefined;
  return apiKey.slice(0, i);
}

/** Constant-time comparison of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
