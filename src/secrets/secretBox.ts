/**
 * Secrets kept in the database, encrypted (docs/security.md): the signing secrets of hooks
 * and of event webhook endpoints, and the kept answers of idempotent requests (which carry
 * session tokens, call tokens, endpoint secrets and signed links). AES-256-GCM from
 * node:crypto under SECRETS_ENCRYPTION_KEY.
 *
 * Stored form: `enc:v1:<key id>:<base64url(iv ‖ ciphertext ‖ tag)>`. The version names the
 * format; the key id (8 hex digits derived from the key) names the key, so values sealed
 * under a previous key still open while SECRETS_ENCRYPTION_KEY_PREVIOUS holds it. The
 * authenticated data is the header plus a context naming what the value belongs to (a hook,
 * an endpoint, an idempotency record), so a value copied onto another row does not open.
 * A stored value that does not start with `enc:` was written before encryption and is
 * returned as it is.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

export const SECRETS_KEY_VARIABLE = 'SECRETS_ENCRYPTION_KEY';
export const PREVIOUS_SECRETS_KEYS_VARIABLE = 'SECRETS_ENCRYPTION_KEY_PREVIOUS';

const SEALED_MARK = 'enc:';
const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A stored value that cannot be opened: wrong or missing key, altered, or moved to another row. */
export class SecretUnreadable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretUnreadable';
  }
}

/** The 32 bytes of a key written as 64 hex digits or in base64 / base64url (43 or 44 characters); undefined otherwise. */
export function decodeSecretsKey(text: string): Buffer | undefined {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) return undefined;
  const key = Buffer.from(value, 'base64');
  return key.length === KEY_BYTES ? key : undefined;
}

/** The public name of a key: stored next to what it sealed, it tells which key opens it. */
export function secretsKeyId(key: Buffer): string {
  return createHmac('sha256', key).update('voice-agent secrets key id').digest('hex').slice(0, 8);
}

/** Whether a stored value is sealed (any key, any version) rather than written before encryption. */
export function isSealed(stored: string): boolean {
  return stored.startsWith(SEALED_MARK);
}

export class SecretBox {
  /** Id of the key that seals. */
  readonly keyId: string;
  /** How every value sealed under the current key starts: what needs no re-sealing. */
  readonly currentPrefix: string;
  private readonly keys = new Map<string, Buffer>();

  /** `current` seals and opens; each of `previous` only opens (key rotation). */
  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    for (const key of [current, ...previous]) {
      if (key.length !== KEY_BYTES) throw new Error(`a secrets key must be ${KEY_BYTES} bytes`);
      if (!this.keys.has(secretsKeyId(key))) this.keys.set(secretsKeyId(key), key);
    }
    this.keyId = secretsKeyId(current);
    this.currentPrefix = `${SEALED_MARK}${VERSION}:${this.keyId}:`;
  }

  /** The stored form of `plaintext`, bound to `context` (what it belongs to): it opens only with the same context. */
  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.keyId)!, iv);
    cipher.setAAD(Buffer.from(this.currentPrefix + context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return this.currentPrefix + Buffer.concat([iv, ciphertext, cipher.getAuthTag()]).toString('base64url');
  }

  /** The plaintext of a stored value (returned as it is when written before encryption); SecretUnreadable when it cannot be opened. */
  open(stored: string, context: string): string {
    if (!isSealed(stored)) return stored;
    const parts = stored.split(':');
    if (parts.length !== 4 || parts[1] !== VERSION) {
      throw new SecretUnreadable(`a stored secret has the unknown format ${JSON.stringify(parts[1] ?? '')} (this version reads ${VERSION})`);
    }
    const [, , keyId, payload] = parts;
    const key = this.keys.get(keyId);
    if (!key) {
      throw new SecretUnreadable(
        `a stored secret was encrypted under key id ${keyId}, which is neither ${SECRETS_KEY_VARIABLE} (key id ${this.keyId}) nor one of ${PREVIOUS_SECRETS_KEYS_VARIABLE}: configure the key it was written with`,
      );
    }
    const bytes = Buffer.from(payload, 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new SecretUnreadable(`a stored secret under key id ${keyId} is truncated`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(`${SEALED_MARK}${VERSION}:${keyId}:${context}`, 'utf8'));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretUnreadable(`a stored secret under key id ${keyId} does not decrypt: it was altered or belongs to another record`);
    }
  }

  /** Whether `stored` is already sealed under the current key. */
  isCurrent(stored: string): boolean {
    return stored.startsWith(this.currentPrefix);
  }
}
