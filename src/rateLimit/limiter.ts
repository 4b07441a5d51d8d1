import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Config } from '../config/index.js';
import type { Logger } from '../logging/logger.js';
import { rateLimiters } from '../metrics/apiMetrics.js';
import { bucketLimits, type BucketLimits } from './buckets.js';
import { IdentityCache } from './identityCache.js';
import { MemoryRateLimitStore } from './memoryStore.js';
import { RedisRateLimitStore } from './redisStore.js';
import type { Clock, ConsumeRequest, ConsumeResult, Reservation } from './store.js';

export interface RateLimiterOptions {
  logger: Logger;
  limits: BucketLimits;
  /** RATE_LIMITS_ENABLED: when false the API builds no rate-limit middleware at all. */
  enabled: boolean;
  /** The shared store; without it the in-process store is the only one. */
  redis?: Redis;
  /** A Redis answer slower than this counts as Redis being down for this request. */
  redisTimeoutMs: number;
  /** While falling back, how often at most to try Redis again (default 1000 ms). */
  recoveryProbeMs?: number;
  /** Drives the windows of both stores; default: Redis server time, and Date.now in memory. */
  clock?: Clock;
  /** Redis key prefix (default `rl:`). */
  keyPrefix?: string;
  /** The store over `redis` (default: a RedisRateLimitStore; the benchmark substitutes one to measure the bare round trip). */
  redisStore?: RedisRateLimitStore;
}

/**
 * The API's rate limiter: Redis when configured, the in-process store otherwise or while
 * Redis is unreachable or slow. The switch is logged once each way; `degraded` is true
 * while falling back (health then reports redis down).
 */
export class RateLimiter {
  readonly limits: BucketLimits;
  readonly enabled: boolean;
  /** Tokens known to authenticate, so their request's buckets go in one round trip. */
  readonly identities = new IdentityCache();
  private readonly memory: MemoryRateLimitStore;
  private readonly redisStore?: RedisRateLimitStore;
  private fallbackSince: number | undefined;
  private lastRedisAttempt = 0;
  private readonly instance = randomBytes(6).toString('base64url');
  private sequence = 0;
  private readyWait: Promise<boolean> | undefined;

  constructor(private readonly opts: RateLimiterOptions) {
    this.limits = opts.limits;
    this.enabled = opts.enabled;
    this.memory = new MemoryRateLimitStore(opts.clock);
    if (opts.redis) this.redisStore = opts.redisStore ?? new RedisRateLimitStore(opts.redis, { clock: opts.clock, keyPrefix: opts.keyPrefix });
    rateLimiters.add(this);
  }

  /** True while Redis is configured but the limiter is counting in process instead. */
  get degraded(): boolean {
    return this.fallbackSince !== undefined;
  }

  /** Where the next check goes first: 'redis' or 'memory'. */
  get store(): 'redis' | 'memory' {
    return this.redisStore && !this.degraded ? 'redis' : 'memory';
  }

  /** A member id unique across instances and requests (never a client-supplied value). */
  newMember(): string {
    this.sequence += 1;
    return `${this.instance}:${this.sequence.toString(36)}`;
  }

  async consume(request: ConsumeRequest): Promise<ConsumeResult> {
    const redis = this.opts.redis;
    if (!this.redisStore || !redis) return this.memory.consumeNow(request);
    if (!(await this.redisReady(redis))) {
      // enableOfflineQueue is off: a command now would fail at once, so do not even try.
      this.enterFallback(`redis connection is ${redis.status}`);
      return this.memory.consumeNow(request);
    }
    if (this.degraded && Date.now() - this.lastRedisAttempt < (this.opts.recoveryProbeMs ?? 1000)) {
      return this.memory.consumeNow(request);
    }
    this.lastRedisAttempt = Date.now();
    try {
      const result = await withTimeout(this.redisStore.consume(request), this.opts.redisTimeoutMs);
      this.leaveFallback();
      return result;
    } catch (err) {
      this.enterFallback((err as Error).message);
      return this.memory.consumeNow(request);
    }
  }

  /** Takes back what an admitted check added (best effort: entries leave with their window anyway). */
  async release(reservation: Reservation): Promise<void> {
    this.memory.releaseNow(reservation);
    if (!this.redisStore || this.store !== 'redis') return;
    try {
      await withTimeout(this.redisStore.release(reservation), this.opts.redisTimeoutMs);
    } catch (err) {
      this.enterFallback((err as Error).message);
    }
  }

  /**
   * Ready now, or (only while not falling back) the first connection is still being made:
   * wait for it up to the timeout rather than fall back on an API that just started.
   */
  private redisReady(redis: Redis): boolean | Promise<boolean> {
    if (redis.status === 'ready') return true;
    if (this.degraded || (redis.status !== 'connecting' && redis.status !== 'connect')) return false;
    this.readyWait ??= new Promise<boolean>((resolve) => {
      const done = (ready: boolean) => {
        clearTimeout(timer);
        redis.off('ready', onReady);
        this.readyWait = undefined;
        resolve(ready);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), this.opts.redisTimeoutMs);
      redis.once('ready', onReady);
    });
    return this.readyWait;
  }

  private enterFallback(reason: string): void {
    if (this.fallbackSince !== undefined) return;
    this.fallbackSince = Date.now();
    this.lastRedisAttempt = Date.now();
    this.opts.logger.warn({ reason }, 'rate limiting falls back to the in-process store until Redis answers again');
  }

  private leaveFallback(): void {
    if (this.fallbackSince === undefined) return;
    const ms = Date.now() - this.fallbackSince;
    this.fallbackSince = undefined;
    this.opts.logger.info({ fallbackMs: ms }, 'rate limiting is back on Redis');
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`redis did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The limiter of one API app, from configuration. */
export function createRateLimiter(
  deps: { config: Config; redis?: Redis; logger: Logger },
  opts: Pick<RateLimiterOptions, 'clock' | 'keyPrefix' | 'recoveryProbeMs' | 'redisStore'> = {},
): RateLimiter {
  return new RateLimiter({
    logger: deps.logger,
    limits: bucketLimits(deps.config),
    enabled: deps.config.RATE_LIMITS_ENABLED,
    redis: deps.redis,
    redisTimeoutMs: deps.config.RATE_LIMIT_REDIS_TIMEOUT_MS,
    ...opts,
  });
}
