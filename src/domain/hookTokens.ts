import { randomBytes } from 'node:crypto';
import { hashSecret } from './digests.js';

export const HOOK_PATH_PREFIX = '/api/v1/hooks/';

/** A new hook token (shown once) and the hash that is stored. */
export function generateHookToken(): { token: string; hash: string } {
  const token = `wh_${randomBytes(24).toString('base64url')}`;
  return { token, hash: hashSecret(token) };
}

export const hookPath = (token: string) => `${HOOK_PATH_PREFIX}${token}`;
