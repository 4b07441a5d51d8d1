// The Redis store against the in-process store as its model: random sequences of checks,
// batches of checks made in the same event-loop turn (one script call), reservations taken
// back on rejection or afterwards, and a clock that moves forward, often by exactly half or
// all of the window to land on its edge. (Not backward: each store forgets what it pruned,
// and they prune at different moments, so after a clock step back they may differ for up
// to a window.)
// Both stores must give the same answer to every check.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import type { BucketCheck } from '../../src/rateLimit/buckets.js';
import { openRedis } from '../../src/infrastructure.js';
import { createLogger } from '../../src/logging/logger.js';
import { MemoryRateLimitStore } from '../../src/rateLimit/memoryStore.js';
import { RedisRateLimitStore } from '../../src/rateLimit/redisStore.js';
import type { ConsumeResult, Reservation } from '../../src/rateLimit/store.js';
import { testConfig } from '../support/app.js';

const KEYS = ['a', 'b', 'c'];

interface Check {
  /** Indexes into KEYS with their limits. */
  buckets: { key: number; limit: number }[];
  /** Take back the reservation of an earlier admitted check if this one is rejected. */
  releaseOnReject?: number;
}

type Step =
  | { kind: 'advance'; ms: number }
  | { kind: 'batch'; checks: Check[] }
  | { kind: 'release'; of: number };

const checkArb: fc.Arbitrary<Check> = fc.record(
  {
    buckets: fc.uniqueArray(fc.record({ key: fc.integer({ min: 0, max: 2 }), limit: fc.integer({ min: 1, max: 4 }) }), {
      minLength: 1,
      maxLength: 3,
      selector: (b) => b.key,
    }),
    releaseOnReject: fc.nat(20),
  },
  { requiredKeys: ['buckets'] },
);

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 30_000 }), fc.constantFrom(1, 30_000, 60_000)) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('batch' as const), checks: fc.array(checkArb, { minLength: 1, maxLength: 4 }) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('release' as const), of: fc.nat(20) }), weight: 1 },
);

/** What a check's answer means to a client, whatever store gave it. */
function outcome(result: ConsumeResult): unknown {
  return result.allowed
    ? { allowed: true, remaining: result.remaining }
    : { allowed: false, bucket: result.bucket.key, retryAfterMs: result.retryAfterMs };
}

describe('Redis store against the in-process store', () => {
  let redis: Redis;

  before(async () => {
    redis = openRedis(testConfig(), createLogger('silent'))!;
    // No offline queue: commands sent before the connection is ready fail at once.
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  });

  after(() => redis?.disconnect());

  test('property: every check gets the same answer from both stores', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (steps) => {
        let now = 1_700_000_000_000;
        const clock = () => now;
        const model = new MemoryRateLimitStore(clock);
        const store = new RedisRateLimitStore(redis, { clock, keyPrefix: `rl-model:${randomUUID()}:` });
        const admitted: { model: Reservation; redis: Reservation }[] = [];
        let member = 0;
        const used = new Set<(typeof admitted)[number]>();
        for (const step of steps) {
          if (step.kind === 'advance') {
            now += step.ms;
          } else if (step.kind === 'release') {
            // A reservation is taken back at most once (times, not ids, identify Redis entries).
            const r = admitted.splice(step.of % Math.max(1, admitted.length), 1)[0];
            if (!r) continue;
            await model.release(r.model);
            await store.release(r.redis);
          } else {
            // One turn of the event loop: every check of the batch goes in one script call.
            const picked = new Set<(typeof admitted)[number]>();
            const requests = step.checks.map((c) => {
              const buckets: BucketCheck[] = c.buckets.map((b) => ({ name: 'ip', key: KEYS[b.key], limit: b.limit }));
              let release = c.releaseOnReject === undefined ? undefined : admitted[c.releaseOnReject % Math.max(1, admitted.length)];
              if (release && picked.has(release)) release = undefined;
              if (release) picked.add(release);
              return { buckets, member: `m${++member}`, release };
            });
            const fromRedis = await Promise.all(requests.map((r) => store.consume({ buckets: r.buckets, member: r.member, release: r.release?.redis })));
            requests.forEach((r, i) => {
              const expected = model.consumeNow({ buckets: r.buckets, member: r.member, release: r.release?.model });
              const actual = fromRedis[i];
              assert.deepEqual(outcome(actual), outcome(expected));
              if (expected.allowed && actual.allowed) admitted.push({ model: expected.reservation, redis: actual.reservation });
              // A rejection took the reservation back: never again.
              if (!expected.allowed && r.release) used.add(r.release);
            });
            for (let i = admitted.length - 1; i >= 0; i--) if (used.has(admitted[i])) admitted.splice(i, 1);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
