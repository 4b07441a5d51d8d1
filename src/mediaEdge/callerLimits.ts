/**
 * What one caller address may hold of the media edge, counted across its reconnects: open
 * WebSockets (per address and in total), INVITEs that reach admission per minute, and refused
 * admissions per window. Every INVITE that reaches admission may cost the service a token
 * redemption and a database lookup, so a stranger's share of that work is bounded here.
 * In memory: each edge instance counts for itself.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface CallerLimitsOptions {
  /** WebSockets open at once on this edge. */
  maxSockets: number;
  /** WebSockets open at once from one address. */
  maxSocketsPerAddress: number;
  /** INVITEs from one address that may reach admission per minute. */
  admissionsPerMinute: number;
  /** Refused admissions (any status, 503 included) one address may collect in a window before its INVITEs are refused unasked. */
  maxFailedAdmissions: number;
  /** The window of maxFailedAdmissions, seconds from the address's first refusal in it. */
  failedAdmissionsWindowSeconds: number;
}

/** Far above what honest browsers use (one socket, one INVITE per call), with room for many callers behind one NAT. */
export const DEFAULT_CALLER_LIMITS: CallerLimitsOptions = {
  maxSockets: 1000,
  maxSocketsPerAddress: 32,
  admissionsPerMinute: 120,
  // High enough that a test suite exercising every refusal from one machine does not lock
  // itself out; a 256-bit token cannot be guessed in 100 tries, and the lookups stay bounded.
  maxFailedAdmissions: 100,
  failedAdmissionsWindowSeconds: 600,
};

/** Why a caller was turned away, and when to come back. */
export interface CallerRefusal {
  reason: string;
  retryAfterSeconds: number;
}

/** Sockets turned away at a cap come back when some other socket has closed: a guess, short. */
const SOCKET_RETRY_AFTER_SECONDS = 5;

export class CallerLimits {
  private readonly socketsByAddress = new Map<string, number>();
  private sockets = 0;
  private readonly admissions: RateLimiterMemory;
  private readonly failures: RateLimiterMemory;

  constructor(readonly options: CallerLimitsOptions = DEFAULT_CALLER_LIMITS) {
    this.admissions = new RateLimiterMemory({ points: options.admissionsPerMinute, duration: 60 });
    this.failures = new RateLimiterMemory({ points: options.maxFailedAdmissions, duration: options.failedAdmissionsWindowSeconds });
  }

  /** Open sockets counted, in total. */
  get openSockets(): number {
    return this.sockets;
  }

  /** Takes a socket slot for `address`: its release (call once, when the socket is gone), or why not. */
  openSocket(address: string): (() => void) | CallerRefusal {
    if (this.sockets >= this.options.maxSockets) return { reason: 'Too many connections', retryAfterSeconds: SOCKET_RETRY_AFTER_SECONDS };
    const held = this.socketsByAddress.get(address) ?? 0;
    if (held >= this.options.maxSocketsPerAddress) return { reason: 'Too many connections from this address', retryAfterSeconds: SOCKET_RETRY_AFTER_SECONDS };
    this.socketsByAddress.set(address, held + 1);
    this.sockets++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.sockets--;
      const left = (this.socketsByAddress.get(address) ?? 1) - 1;
      if (left > 0) this.socketsByAddress.set(address, left);
      else this.socketsByAddress.delete(address);
    };
  }

  /** Whether an INVITE from `address` may reach admission now (and counts it), or why not. */
  async beforeAdmission(address: string): Promise<CallerRefusal | undefined> {
    const failed = await this.failures.get(address);
    if (failed && failed.consumedPoints >= this.options.maxFailedAdmissions) {
      return { reason: 'Too many refused calls from this address', retryAfterSeconds: retryAfter(failed.msBeforeNext) };
    }
    try {
      await this.admissions.consume(address);
      return undefined;
    } catch (err) {
      if (err instanceof RateLimiterRes) return { reason: 'Too many calls from this address', retryAfterSeconds: retryAfter(err.msBeforeNext) };
      throw err;
    }
  }

  /** An admission from `address` was refused (bad, spent or expired token, or the service unreachable). */
  async admissionFailed(address: string): Promise<void> {
    await this.failures.penalty(address);
  }
}

const retryAfter = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * The address a caller's limits count: the peer, or with `trustProxy` the last address of
 * X-Forwarded-For (the one the proxy in front appended; earlier ones are the client's word).
 * IPv4 on a dual-stack socket is IPv4; IPv6 counts by its /64, which one host usually holds whole.
 */
export function callerAddress(req: IncomingMessage, trustProxy = false): string {
  if (trustProxy) {
    const header = req.headers['x-forwarded-for'];
    const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').at(-1)?.trim() ?? '';
    if (isIP(forwarded)) return addressKey(forwarded);
  }
  return addressKey(req.socket.remoteAddress ?? '');
}

/** "::ffff:10.0.0.1" → "10.0.0.1"; "2001:db8:1:2:3:4:5:6" → "2001:db8:1:2::/64"; anything else as given. */
export function addressKey(ip: string): string {
  const address = ip.replace(/%.*$/, '');
  if (address.toLowerCase().startsWith('::ffff:') && isIP(address.slice(7)) === 4) return address.slice(7);
  if (isIP(address) !== 6) return address || 'unknown';
  const [head, tail] = address.split('::');
  const groupsOf = (part: string | undefined) => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const first = groupsOf(head);
  const groups = tail === undefined ? first : [...first, ...Array<string>(8 - first.length - groupsOf(tail).length).fill('0'), ...groupsOf(tail)];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
