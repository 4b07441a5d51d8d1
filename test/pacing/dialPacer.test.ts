// test-runner: foreground (grants counted per second of real time)
// The dial pacer (src/pacing/dialPacer.ts) on each of its stores: Redis and Postgres shared by
// two pacers (two worker instances), memory in one. Real time: a few seconds per test.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createDialPacer, paceSlot, type DialPacer, type DialPacingStore, type PacingKey } from '../../src/pacing/dialPacer.js';
import { testPool } from '../support/app.js';

let redis: Redis | undefined;

before(async () => {
  if (process.env.REDIS_URL) redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 });
});

after(async () => {
  redis?.disconnect();
});

const key = (teamRate: number | null = null, fromNumber = `+1212${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`): PacingKey => ({ fromNumber, teamId: randomUUID(), teamRate });

/** The grant instants (the pacer's clock) of `count` takes started at once over `pacers` (round robin). */
async function grantTimes(pacers: DialPacer[], k: (i: number) => PacingKey, count: number): Promise<number[]> {
  const times: number[] = [];
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const at = await pacers[i % pacers.length].take(k(i), { maxWaitMs: 30_000 });
      assert.ok(at !== null, 'granted');
      times.push(at);
    }),
  );
  return times.sort((a, b) => a - b);
}

const maxPerSecond = (times: number[]) => Math.max(...Object.values(times.reduce<Record<number, number>>((m, t) => ({ ...m, [Math.floor(t / 1000)]: (m[Math.floor(t / 1000)] ?? 0) + 1 }), {})));

test('slots are 1/rate long and aligned to the clock', () => {
  assert.deepEqual(paceSlot(10_000, 5), { index: 50, nextStartMs: 10_200 });
  assert.deepEqual(paceSlot(10_199, 5), { index: 50, nextStartMs: 10_200 });
  assert.deepEqual(paceSlot(10_500, 1), { index: 10, nextStartMs: 11_000 });
  assert.deepEqual(paceSlot(10_500, 0.5), { index: 5, nextStartMs: 12_000 });
  assert.deepEqual(paceSlot(1_000, 3), { index: 3, nextStartMs: 1334 });
});

for (const kind of ['redis', 'postgres'] as const) {
  describe(`shared store: ${kind}`, () => {
    const store = async (): Promise<DialPacingStore> => (kind === 'redis' ? { kind, redis: redis! } : { kind, pool: await testPool() });

    test('two pacers on one number never exceed the rate in any second, and use every slot', { skip: kind === 'redis' && !process.env.REDIS_URL }, async () => {
      const s = await store();
      const pacers = [createDialPacer({ perNumberRate: 10, store: s }), createDialPacer({ perNumberRate: 10, store: s })];
      const k = key();
      const started = Date.now();
      const times = await grantTimes(pacers, () => k, 40);
      assert.ok(maxPerSecond(times) <= 10, `at most 10 a second: ${maxPerSecond(times)}`);
      // 40 dials at 10 a second: the last one about 3.9 s after the first slot.
      const span = times[times.length - 1] - started;
      assert.ok(span >= 3_800 && span <= 5_500, `span ${span} ms`);
      // Spread over the slots rather than bursting: one grant per 100 ms slot.
      assert.equal(new Set(times.map((t) => Math.floor(t / 100))).size, times.length);
    });

    test('a team rate holds the team’s numbers together; the per-number rate still holds each', { skip: kind === 'redis' && !process.env.REDIS_URL }, async () => {
      const s = await store();
      const pacers = [createDialPacer({ perNumberRate: 20, store: s }), createDialPacer({ perNumberRate: 20, store: s })];
      const teamId = randomUUID();
      const numbers = [key().fromNumber, key().fromNumber, key().fromNumber];
      const times = await grantTimes(pacers, (i) => ({ fromNumber: numbers[i % 3], teamId, teamRate: 4 }), 12);
      assert.ok(maxPerSecond(times) <= 4, `team: at most 4 a second: ${maxPerSecond(times)}`);
      assert.ok(times[times.length - 1] - times[0] >= 2_400, 'twelve dials at 4 a second take about three seconds');
    });
  });
}

test('memory: waiters of a number are served first come first served, and a wait past maxWaitMs answers false', async () => {
  const pacer = createDialPacer({ perNumberRate: 5, store: { kind: 'memory' } });
  const k = key();
  const order: number[] = [];
  await Promise.all(
    Array.from({ length: 6 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 5));
      assert.ok((await pacer.take(k, { maxWaitMs: 10_000 })) !== null);
      order.push(i);
    }),
  );
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  const first = await pacer.tryTake(k);
  if (first.taken) assert.equal((await pacer.tryTake(k)).taken, false);
  let waits = 0;
  // A clock at the start of a 5-second slot: the next slot is 5 s away.
  const t0 = Date.now();
  const blocked = createDialPacer({ perNumberRate: 0.2, store: { kind: 'memory' }, clock: () => 1_000_000_000 + (Date.now() - t0) });
  assert.ok((await blocked.take(k, { maxWaitMs: 5_000 })) !== null);
  const started = Date.now();
  assert.equal(await blocked.take(k, { maxWaitMs: 1_500, onWait: () => void (waits += 1) }), null);
  assert.ok(Date.now() - started >= 1_400 && waits >= 1, 'it waited, saying so');
});

test('memory: waiters go in priority order (the slot line’s), whatever order they came in', async () => {
  const t0 = Date.now();
  const pacer = createDialPacer({ perNumberRate: 4, store: { kind: 'memory' }, clock: () => 1_000_000_000 + (Date.now() - t0) });
  const k = key();
  assert.ok((await pacer.take(k, { maxWaitMs: 1_000 })) !== null, 'the current slot is taken');
  const order: string[] = [];
  const waiter = async (name: string, priority: number[], delay: number) => {
    await new Promise((r) => setTimeout(r, delay));
    assert.ok((await pacer.take(k, { maxWaitMs: 10_000, priority })) !== null);
    order.push(name);
  };
  await Promise.all([waiter('late in line', [300, 1], 0), waiter('first in line', [100, 7], 20), waiter('second in line', [100, 9], 40), waiter('last', [300, 2], 60)]);
  assert.deepEqual(order, ['first in line', 'second in line', 'late in line', 'last']);
});

test('a dial may use its token inside the token’s slot, of the number and of the team; after it, the token is stale', async () => {
  let now = 1_000_000_000;
  const pacer = createDialPacer({ perNumberRate: 5, store: { kind: 'memory' }, clock: () => now });
  const k = key();
  const at = await pacer.take(k, { maxWaitMs: 1_000 });
  assert.equal(at, 1_000_000_000);
  now = 1_000_000_150;
  assert.deepEqual(pacer.dialTiming(k, at!), { kind: 'now' });
  now = 1_000_000_200;
  assert.deepEqual(pacer.dialTiming(k, at!), { kind: 'stale' }, 'its 200 ms slot is over');
  const team = { ...k, teamRate: 1, fromNumber: key().fromNumber };
  now = 1_000_002_900;
  const teamAt = (await pacer.tryTake(team)) as { taken: true; at: number };
  assert.equal(teamAt.taken, true);
  now = 1_000_003_050;
  assert.deepEqual(pacer.dialTiming(team, teamAt.at), { kind: 'stale' }, 'the team’s one-second slot ended at 3 s');
  now = 1_000_003_100;
  assert.equal((await pacer.tryTake(team)).taken, true, 'a new team slot');
  assert.equal((await pacer.tryTake({ ...team, fromNumber: key().fromNumber })).taken, false, 'another number of the team waits for the team’s next slot');
});

test('memory: an aborted wait throws the abort reason', async () => {
  const pacer = createDialPacer({ perNumberRate: 0.1, store: { kind: 'memory' } });
  const k = key();
  await pacer.take(k, { maxWaitMs: 1_000 });
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error('cancelled')), 100);
  await assert.rejects(pacer.take(k, { maxWaitMs: 5_000, signal: controller.signal }), /cancelled/);
});
