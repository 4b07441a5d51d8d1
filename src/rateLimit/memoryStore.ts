import { RATE_LIMIT_WINDOW_MS } from './buckets.js';
import type { Clock, ConsumeRequest, ConsumeResult, RateLimitStore, Reservation } from './store.js';

/** One bucket's log: entry times in ascending order and the request each belongs to. */
interface Log {
  at: number[];
  members: string[];
}

/**
 * The in-process store (no REDIS_URL, or Redis unreachable): a sliding-window log per
 * bucket, exactly the semantics of the Redis script, for one API instance. JavaScript runs
 * one consume at a time, so check-then-add is atomic without locks.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly logs = new Map<string, Log>();
  private lastSweep: number;

  constructor(
    private readonly clock: Clock = Date.now,
    private readonly windowMs: number = RATE_LIMIT_WINDOW_MS,
  ) {
    this.lastSweep = clock();
  }

  async consume(request: ConsumeRequest): Promise<ConsumeResult> {
    return this.consumeNow(request);
  }

  /** Synchronous core of consume (also what the fallback path of the limiter calls). */
  consumeNow({ buckets, member, release }: ConsumeRequest): ConsumeResult {
    const now = this.clock();
    const cutoff = now - this.windowMs;
    this.sweepIfDue(now, cutoff);
    let rejected: { index: number; wait: number } | undefined;
    const counts: number[] = [];
    for (let i = 0; i < buckets.length; i++) {
      const log = this.logs.get(buckets[i].key);
      const count = log ? prune(log, cutoff) : 0;
      counts.push(count);
      if (count >= buckets[i].limit) {
        // The bucket admits again when enough of its oldest entries leave to get below the limit.
        const wait = log!.at[count - buckets[i].limit] + this.windowMs - now;
        if (!rejected || wait > rejected.wait) rejected = { index: i, wait };
      }
    }
    if (rejected) {
      if (release) this.releaseNow(release);
      return { allowed: false, bucket: buckets[rejected.index], retryAfterMs: rejected.wait };
    }
    for (const { key } of buckets) this.add(key, now, member);
    return {
      allowed: true,
      remaining: buckets.map((b, i) => b.limit - counts[i] - 1),
      reservation: { keys: buckets.map((b) => b.key), member },
    };
  }

  async release(reservation: Reservation): Promise<void> {
    this.releaseNow(reservation);
  }

  releaseNow({ keys, member }: Reservation): void {
    for (const key of keys) this.remove(key, member);
  }

  /** Buckets currently held (for tests of the memory bound). */
  get size(): number {
    return this.logs.size;
  }

  private add(key: string, at: number, member: string): void {
    let log = this.logs.get(key);
    if (!log) {
      log = { at: [], members: [] };
      this.logs.set(key, log);
    }
    // Keep ascending order even if the wall clock steps back.
    let i = log.at.length;
    while (i > 0 && log.at[i - 1] > at) i--;
    log.at.splice(i, 0, at);
    log.members.splice(i, 0, member);
  }

  private remove(key: string, member: string): void {
    const log = this.logs.get(key);
    if (!log) return;
    const i = log.members.lastIndexOf(member);
    if (i < 0) return;
    log.at.splice(i, 1);
    log.members.splice(i, 1);
  }

  /** Once per window, drop every bucket that has emptied so memory stays bounded. */
  private sweepIfDue(now: number, cutoff: number): void {
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    for (const [key, log] of this.logs) if (prune(log, cutoff) === 0) this.logs.delete(key);
  }
}

/** Drops entries at or before the cutoff (they have left the window); returns the count left. */
function prune(log: Log, cutoff: number): number {
  let n = 0;
  while (n < log.at.length && log.at[n] <= cutoff) n++;
  if (n > 0) {
    log.at.splice(0, n);
    log.members.splice(0, n);
  }
  return log.at.length;
}
