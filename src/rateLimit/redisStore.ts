import type { Redis } from 'ioredis';
import { RATE_LIMIT_WINDOW_MS } from './buckets.js';
import type { Clock, ConsumeRequest, ConsumeResult, RateLimitStore, Reservation } from './store.js';

// Why not rate-limiter-flexible: its Redis and memory limiters count in fixed windows (one
// counter with a TTL: INCR + PEXPIRE), which reset at once when the TTL lapses, so a client
// can send 2x the limit across a boundary; the buckets are rolling windows in which a
// request is admitted again exactly when the oldest counted one leaves. And its
// RateLimiterUnion consumes from every limiter independently, so a request rejected by one
// bucket still counts in the others, which our contract forbids. So the buckets are sliding-
// window logs (one sorted set per bucket, score = time, member = request) checked and
// filled by one script: every bucket of a request in one atomic step.
//
// Checks are batched: all that reach this API instance in one turn of its event loop go to
// Redis in one EVALSHA. Each is still decided on its own and atomically (a script runs
// alone), in arrival order, so batching changes no outcome; it saves round trips, script
// calls and socket writes, the larger part of the limiter's cost.
//
// KEYS, per check in order: its n buckets, then the keys of a reservation to take back if
//       the check is rejected.
// ARGV: window (ms), the number of checks, then per check: now (ms; empty = Redis server
//       time, shared by every API instance), member, n, the reservation's member (or
//       empty), its number of keys, then the n limits.
// Returns per check {1, remaining_1..remaining_n} when admitted, {0, bucket index, wait ms}
// when not.
const CONSUME_SCRIPT = `
local window = tonumber(ARGV[1])
local serverNow
local a = 3
local k = 0
local results = {}
for r = 1, tonumber(ARGV[2]) do
  local now = tonumber(ARGV[a])
  if now == nil then
    if serverNow == nil then
      local t = redis.call('TIME')
      serverNow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    now = serverNow
  end
  local member = ARGV[a + 1]
  local n = tonumber(ARGV[a + 2])
  local releaseMember = ARGV[a + 3]
  local releaseCount = tonumber(ARGV[a + 4])
  local limits = a + 4
  local cutoff = now - window
  local counts = {}
  local worst, worstWait = 0, -1
  for i = 1, n do
    local key = KEYS[k + i]
    local limit = tonumber(ARGV[limits + i])
    redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
    local count = redis.call('ZCARD', key)
    counts[i] = count
    if count >= limit then
      -- Admits again when enough of its oldest entries leave to get below the limit.
      local oldest = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
      local wait = tonumber(oldest[2]) + window - now
      if wait > worstWait then worst, worstWait = i, wait end
    end
  end
  if worst > 0 then
    for j = 1, releaseCount do redis.call('ZREM', KEYS[k + n + j], releaseMember) end
    results[r] = {0, worst, worstWait}
  else
    local result = {1}
    for i = 1, n do
      redis.call('ZADD', KEYS[k + i], now, member)
      redis.call('PEXPIRE', KEYS[k + i], window)
      result[i + 1] = tonumber(ARGV[limits + i]) - counts[i] - 1
    end
    results[r] = result
  end
  a = limits + n + 1
  k = k + n + releaseCount
end
return results
`;

const COMMAND = 'voiceAgentRateLimit';

/** At most this many checks per script call, so one call never holds Redis for long. */
const MAX_BATCH = 128;

type ConsumeCommand = (numKeys: number, ...args: (string | number)[]) => Promise<number[][]>;

interface PendingCheck {
  request: ConsumeRequest;
  now: number | '';
  resolve: (result: ConsumeResult) => void;
  reject: (err: unknown) => void;
}

/**
 * The shared store of every API instance (REDIS_URL): one sorted set per bucket under
 * `keyPrefix`. Checks made in the same turn of the event loop share one EVALSHA. Without a
 * clock the script uses Redis's own TIME, so instances with skewed clocks still agree on
 * the window.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly consumeCommand: ConsumeCommand;
  private pending: PendingCheck[] = [];

  constructor(
    readonly redis: Redis,
    private readonly opts: { clock?: Clock; windowMs?: number; keyPrefix?: string } = {},
  ) {
    const commands = redis as unknown as Record<string, ConsumeCommand>;
    // defineCommand loads the script by SHA and re-sends it after NOSCRIPT (a restarted Redis).
    if (typeof commands[COMMAND] !== 'function') redis.defineCommand(COMMAND, { lua: CONSUME_SCRIPT });
    this.consumeCommand = commands[COMMAND].bind(redis);
  }

  private get prefix(): string {
    return this.opts.keyPrefix ?? 'rl:';
  }

  async release({ keys, member }: Reservation): Promise<void> {
    const pipeline = this.redis.pipeline();
    for (const key of keys) pipeline.zrem(this.prefix + key, member);
    const results = await pipeline.exec();
    const failed = results?.find(([err]) => err);
    if (failed) throw failed[0];
  }

  /** Queues the check; it goes to Redis with the others of this event-loop turn. */
  consume(request: ConsumeRequest): Promise<ConsumeResult> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request, now: this.opts.clock ? this.opts.clock() : '', resolve, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      this.send(batch).catch((err: unknown) => {
        for (const check of batch) check.reject(err);
      });
    }
  }

  /** One call of the consume script (KEYS and ARGV as documented above it); returns its replies. */
  protected runScript(keys: string[], args: (string | number)[]): Promise<number[][]> {
    return this.consumeCommand(keys.length, ...keys, ...args);
  }

  private async send(batch: PendingCheck[]): Promise<void> {
    const prefix = this.prefix;
    const keys: string[] = [];
    const args: (string | number)[] = [this.opts.windowMs ?? RATE_LIMIT_WINDOW_MS, batch.length];
    for (const { request, now } of batch) {
      const { buckets, member, release } = request;
      const releaseKeys = release?.keys ?? [];
      for (const b of buckets) keys.push(prefix + b.key);
      for (const key of releaseKeys) keys.push(prefix + key);
      args.push(now, member, buckets.length, release?.member ?? '', releaseKeys.length);
      for (const b of buckets) args.push(b.limit);
    }
    const replies = await this.runScript(keys, args);
    batch.forEach(({ request, resolve }, i) => {
      const reply = replies[i];
      const { buckets, member } = request;
      if (reply[0] === 0) resolve({ allowed: false, bucket: buckets[reply[1] - 1], retryAfterMs: reply[2] });
      else resolve({ allowed: true, remaining: reply.slice(1), reservation: { keys: buckets.map((b) => b.key), member } });
    });
  }
}
