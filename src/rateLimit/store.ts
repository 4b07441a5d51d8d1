import type { BucketCheck } from './buckets.js';

/** Milliseconds since the epoch; injected so tests drive time instead of sleeping. */
export type Clock = () => number;

/** What one admitted check added to its buckets, so a later rejection can take it back. */
export interface Reservation {
  keys: string[];
  member: string;
}

export interface ConsumeRequest {
  buckets: BucketCheck[];
  /** Unique per request: the entry this request adds to each bucket. */
  member: string;
  /**
   * Taken back if this check rejects: the pre-authentication entries of the same request,
   * so that a request rejected by a post-authentication bucket counts in no bucket.
   */
  release?: Reservation;
}

export type ConsumeResult =
  | {
      allowed: true;
      /** Per bucket, in request order: how many more requests its window admits now. */
      remaining: number[];
      reservation: Reservation;
    }
  | {
      allowed: false;
      /** The exhausted bucket whose wait is longest (the earliest a retry can pass). */
      bucket: BucketCheck;
      /** Until the oldest entry that keeps the bucket full leaves the window (> 0). */
      retryAfterMs: number;
    };

/**
 * A rolling-window store. `consume` checks every bucket of the request and, only when none
 * is exhausted, counts the request in all of them, atomically.
 */
export interface RateLimitStore {
  consume(request: ConsumeRequest): Promise<ConsumeResult>;
  /** Takes a reservation's entries back out of its buckets. */
  release(reservation: Reservation): Promise<void>;
}

/** Retry-After in whole seconds, rounded up, at least 1 (docs/rate-limits.md "Answers"). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(1, Math.ceil(retryAfterMs / 1000));
}
