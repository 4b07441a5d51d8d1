import { createHash } from 'node:crypto';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `value` is UUID-shaped (so it can be compared with a uuid column without a cast error). */
export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/**
 * A UUID determined by its name (RFC 9562), so every retry of a step names the same
 * resource: version 5 (SHA-1 of the namespace's bytes, then the name) when a namespace is
 * given, otherwise the version-8 shape of the name's SHA-256.
 */
export function nameBasedUuid(name: string, namespace?: Uint8Array): string {
  const digest = namespace ? createHash('sha1').update(namespace).update(name).digest() : createHash('sha256').update(name).digest();
  digest[6] = (digest[6] & 0x0f) | (namespace ? 0x50 : 0x80);
  digest[8] = (digest[8] & 0x3f) | 0x80;
  const hex = digest.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
