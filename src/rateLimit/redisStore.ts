import type { Redis } from 'ioredis';
import { RATE_LIMIT_WINDOW_MS } from './buckets.js';
import type { Clock, ConsumeRequest, ConsumeResult, RateLimitStore, Reservation } from './store.js';

// Why not rate-limiter-flexible: its Redis and memory limiters count in fixed windows (one
// counter with a TTL: INCR + PEXPIRE), which reset at once when the TTL lapses, so a client
// can send 2x the limit across a boundary; the spec wants a rolling window in which a
// request is admitted again exactly when the oldest counted one leaves. And its
// RateLimiterUnion consumes from every limiter independently, so a request rejected by one
// bucket still counts in the others, which the spec forbids. So the buckets are sliding-
// window logs (one sorted set per bucket, score = time) checked and filled by one script:
// every bucket of a request in one atomic round trip.
//
// KEYS: the n checked buckets, then the keys of a reservation to release on rejection.
// ARGV: now (ms; empty = Redis server time, shared by every API instance), window (ms),
//       member, n, release member (or empty), then the n limits.
// Returns {1, remaining_1..remaining_n} when admitted, {0, bucket index, wait ms} when not.
const CONSUME_SCRIPT = `
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local window = tonumber(ARGV[2])
local member = ARGV[3]
local n = tonumber(ARGV[4])
local cutoff = now - window
local counts = {}
local worst = 0
local worstWait = -1
for i = 1, n do
  local key = KEYS[i]
  local limit = tonumber(ARGV[5 + i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
  local count = redis.call('ZCARD', key)
  counts[i] = count
  if count >= limit then
    local oldest = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
    local wait = tonumber(oldest[2]) + window - now
    if wait > worstWait then
      worst = i
      worstWait = wait
    end
  end
end
if worst > 0 then
  if ARGV[5] ~= '' then
    for j = n + 1, #KEYS do
      redis.call('ZREM', KEYS[j], ARGV[5])
    end
  end
  return {0, worst, worstWait}
end
local result = {1}
for i = 1, n do
  redis.call('ZADD', KEYS[i], now, member)
  redis.call('PEXPIRE', KEYS[i], window)
  result[i + 1] = tonumber(ARGV[5 + i]) - counts[i] - 1
end
return result
`;

const COMMAND = 'voiceAgentRateLimit';

type ConsumeCommand = (numKeys: number, ...args: (string | number)[]) => Promise<number[]>;

/**
 * The shared store of every API instance (REDIS_URL): one sorted set per bucket under
 * `keyPrefix`, all buckets of a request in one EVALSHA. Without a clock the script uses
 * Redis's own TIME, so instances with skewed clocks still agree on the window.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly command: ConsumeCommand;

  constructor(
    readonly redis: Redis,
    private readonly opts: { clock?: Clock; windowMs?: number; keyPrefix?: string } = {},
  ) {
    // defineCommand loads the script by SHA and re-sends it after NOSCRIPT (a restarted Redis).
    if (typeof (redis as unknown as Record<string, unknown>)[COMMAND] !== 'function') {
      redis.defineCommand(COMMAND, { lua: CONSUME_SCRIPT });
    }
    const command = (redis as unknown as Record<string, ConsumeCommand>)[COMMAND];
    this.command = command.bind(redis);
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

  async consume({ buckets, member, release }: ConsumeRequest): Promise<ConsumeResult> {
    const prefix = this.prefix;
    const keys = buckets.map((b) => prefix + b.key);
    const releaseKeys = release ? release.keys.map((k) => prefix + k) : [];
    const reply = await this.command(
      keys.length + releaseKeys.length,
      ...keys,
      ...releaseKeys,
      this.opts.clock ? this.opts.clock() : '',
      this.opts.windowMs ?? RATE_LIMIT_WINDOW_MS,
      member,
      buckets.length,
      release?.member ?? '',
      ...buckets.map((b) => b.limit),
    );
    if (reply[0] === 0) return { allowed: false, bucket: buckets[reply[1] - 1], retryAfterMs: reply[2] };
    return { allowed: true, remaining: reply.slice(1), reservation: { keys: buckets.map((b) => b.key), member } };
  }
}
