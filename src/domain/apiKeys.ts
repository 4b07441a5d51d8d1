import { randomBytes } from 'node:crypto';
import { hashSecret } from './digests.js';

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
