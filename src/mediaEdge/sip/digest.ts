/**
 * Optional HTTP Digest challenge of INVITEs (RFC 3261 §22, MD5, qop=auth). The browser's SIP
 * username and password are public bootstrap values, so this only keeps casual scanners out:
 * the session or call token still decides admission. Nonces are stateless (an HMAC of their
 * issue time), so no per-socket state is kept. Written here rather than taken from a package:
 * it is three MD5s over RFC 2617's strings, held to the RFC's examples and to JsSIP's own
 * implementation (test/mediaEdge/sipDigest.test.ts); npm's digest packages serve HTTP
 * requests with in-memory nonces and would add nothing but an adapter.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { parseParams, splitHeaderList } from './message.js';

export interface DigestCredentials {
  username: string;
  password: string;
  realm: string;
}

const NONCE_TTL_MS = 5 * 60_000;
const md5 = (text: string): string => createHash('md5').update(text).digest('hex');

export interface DigestResponseInput {
  username: string;
  realm: string;
  password: string;
  method: string;
  uri: string;
  nonce: string;
  /** With qop (RFC 2617 §3.2.2.1) the client's nc and cnonce count too; without it, the RFC 2069 form. */
  qop?: string;
  nc?: string;
  cnonce?: string;
}

/** The `response` value of a Digest Authorization header with algorithm MD5 (RFC 2617 §3.2.2.1). */
export function digestResponse(input: DigestResponseInput): string {
  const ha1 = md5(`${input.username}:${input.realm}:${input.password}`);
  const ha2 = md5(`${input.method}:${input.uri}`);
  return input.qop ? md5(`${ha1}:${input.nonce}:${input.nc ?? ''}:${input.cnonce ?? ''}:${input.qop}:${ha2}`) : md5(`${ha1}:${input.nonce}:${ha2}`);
}

export class DigestAuthenticator {
  private readonly nonceKey = randomBytes(32);

  constructor(
    private readonly credentials: DigestCredentials,
    private readonly now: () => number = Date.now,
  ) {}

  /** The WWW-Authenticate value of a 401. */
  challenge(): string {
    return `Digest realm="${this.credentials.realm}", nonce="${this.nonce()}", algorithm=MD5, qop="auth"`;
  }

  /** Whether an Authorization header value answers a fresh challenge of ours with the right password. */
  verify(authorization: string | undefined, method: string): boolean {
    if (!authorization || !/^digest\s/i.test(authorization)) return false;
    const fields: Record<string, string> = {};
    for (const part of splitHeaderList(authorization.replace(/^digest\s+/i, ''))) {
      for (const [k, v] of Object.entries(parseParams(part))) if (v !== null) fields[k] = v.replace(/^"(.*)"$/, '$1');
    }
    const { username, realm, nonce, uri, response, qop, nc, cnonce } = fields;
    if (username !== this.credentials.username || realm !== this.credentials.realm || !nonce || !uri || !response) return false;
    if (!this.nonceIsFresh(nonce)) return false;
    const expected = digestResponse({ username, realm, password: this.credentials.password, method, uri, nonce, qop, nc, cnonce });
    const a = Buffer.from(expected);
    const b = Buffer.from(response.toLowerCase());
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private nonce(issuedAt = this.now()): string {
    const time = issuedAt.toString(36);
    return `${time}.${createHmac('sha256', this.nonceKey).update(time).digest('base64url').slice(0, 22)}`;
  }

  private nonceIsFresh(nonce: string): boolean {
    const [time] = nonce.split('.');
    const issuedAt = parseInt(time, 36);
    if (!Number.isFinite(issuedAt) || this.now() - issuedAt > NONCE_TTL_MS || issuedAt > this.now() + 1000) return false;
    const a = Buffer.from(this.nonce(issuedAt));
    const b = Buffer.from(nonce);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
