/**
 * Carrier pacing (docs/calls.md, "Carrier pacing"): dial attempts per second per caller
 * number (DIAL_RATE_PER_NUMBER) and, when the team sets one, per team, shared by every
 * worker instance through rate-limiter-flexible: its Redis limiter when REDIS_URL is set,
 * its Postgres limiter (table dial_pacing) otherwise, its in-memory one in tests.
 *
 * Time is cut into slots of 1/rate seconds, aligned to the clock (slot i of a key is
 * [i/rate, (i+1)/rate) seconds since the epoch), and each slot admits one dial: the limiter
 * counts per (key, slot) with one point. So a calendar second holds at most `rate` dials of
 * a number whatever the number of workers, and dials spread evenly instead of bursting at
 * the start of each second. A call that finds its slot taken waits for the next one: in
 * process, the waiters of one number queue in the slot line's order and only the first asks
 * the store; across processes the first to ask takes the slot. A dial checks that it goes out
 * inside its token's slot (dialTiming), and takes a fresh token when it came too late.
 * Workers' clocks are assumed to agree (NTP): a skew of d ms can bring two dials d ms closer.
 */
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Pool } from '../db/pool.js';

export type DialPacingStore = { kind: 'redis'; redis: Redis } | { kind: 'postgres'; pool: Pool } | { kind: 'memory' };

export interface PacingKey {
  /** The caller number (E.164). */
  fromNumber: string;
  teamId: string;
  /** Dial attempts per second across the team; null = only the per-number rate. */
  teamRate: number | null;
}

/** `at`: the instant the token was taken; its slot is the token's. */
export type TakeResult = { taken: true; at: number } | { taken: false; waitMs: number };

/** Whether a dial holding the token of `at` may go out now, or its slot is over (take a fresh token). */
export type DialTiming = { kind: 'now' } | { kind: 'stale' };

export interface TakeOptions {
  maxWaitMs: number;
  signal?: AbortSignal;
  onWait?: () => void | Promise<void>;
  /** Lower goes first among this process's waiters of the number (element by element); default the time it asks. */
  priority?: readonly number[];
}

export interface DialPacer {
  readonly store: DialPacingStore['kind'];
  /**
   * Takes a dial token now if the current slots of the number (and team) are free and no one
   * of this process waits for the number already; else how long until the next slot.
   */
  tryTake(key: PacingKey): Promise<TakeResult>;
  /**
   * Waits, queued behind the waiters of the same number in this process that have a lower
   * `priority` (ties in arrival order), until a token is taken (its `at`) or `maxWaitMs` has
   * passed (null). `onWait` runs when the first attempt finds no token and then about every
   * second while waiting (heartbeats).
   */
  take(key: PacingKey, opts: TakeOptions): Promise<number | null>;
  /** Whether a dial holding the token of `at` may go out now (inside its slot, of the number and of the team). */
  dialTiming(key: PacingKey, at: number): DialTiming;
}

/** The slot of `nowMs` at `rate` per second, and when the next one starts. */
export function paceSlot(nowMs: number, rate: number): { index: number; nextStartMs: number } {
  const index = Math.floor((nowMs * rate) / 1000);
  return { index, nextStartMs: Math.ceil(((index + 1) * 1000) / rate) };
}

/** Seconds a slot's counter is kept: longer than the slot (whole seconds, for Redis). */
const keepSeconds = (rate: number) => Math.max(2, Math.ceil(2 / rate));

function limiterFor(store: DialPacingStore): RateLimiterAbstract {
  const common = { points: 1, duration: 2, keyPrefix: 'dialpace' };
  switch (store.kind) {
    case 'redis':
      return new RateLimiterRedis({ ...common, storeClient: store.redis });
    case 'postgres':
      return new RateLimiterPostgres({ ...common, storeClient: store.pool, storeType: 'pool', tableName: 'dial_pacing', tableCreated: true, clearExpiredByTimeout: true });
    case 'memory':
      return new RateLimiterMemory(common);
  }
}

function comparePriority(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

interface Turn {
  /** Lower goes first (compared element by element); ties in arrival order. */
  priority: readonly number[];
  /** Resolves the current wait of this turn (it may have become the first). */
  wake: () => void;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener('abort', abort);
      resolve();
    }
    function abort() {
      clearTimeout(timer);
      reject(signal!.reason);
    }
    signal?.addEventListener('abort', abort, { once: true });
  });

export function createDialPacer(opts: { perNumberRate: number; store: DialPacingStore; clock?: () => number }): DialPacer {
  const limiter = limiterFor(opts.store);
  const clock = opts.clock ?? Date.now;
  // The waiters of each number in this process, in priority order; only the first asks the store.
  const queues = new Map<string, Turn[]>();

  function enqueue(number: string, priority: readonly number[]): Turn {
    const turn: Turn = { priority, wake: () => {} };
    const queue = queues.get(number) ?? [];
    queues.set(number, queue);
    let at = queue.length;
    while (at > 0 && comparePriority(queue[at - 1].priority, priority) > 0) at -= 1;
    queue.splice(at, 0, turn);
    return turn;
  }

  function dequeue(number: string, turn: Turn): void {
    const queue = queues.get(number);
    if (!queue) return;
    const i = queue.indexOf(turn);
    if (i >= 0) queue.splice(i, 1);
    if (queue.length === 0) queues.delete(number);
    else if (i === 0) queue[0].wake();
  }

  const isFirst = (number: string, turn: Turn) => queues.get(number)?.[0] === turn;

  /** Consumes the slot of `prefix:id` that contains the instant `at`; its key when taken. */
  async function consume(prefix: string, id: string, rate: number, at: number): Promise<string | undefined> {
    const key = `${prefix}:${id}:${paceSlot(at, rate).index}`;
    try {
      await limiter.consume(key, 1, { customDuration: keepSeconds(rate) });
      return key;
    } catch (err) {
      if (err instanceof RateLimiterRes) return undefined;
      throw err;
    }
  }

  async function tryTake(key: PacingKey, queued = false): Promise<TakeResult> {
    const now = clock();
    const at = now;
    const waitMs = Math.max(1, paceSlot(now, opts.perNumberRate).nextStartMs - now);
    // Waiters of this process go first: a newcomer joins the queue.
    if (!queued && queues.has(key.fromNumber)) return { taken: false, waitMs };
    const number = await consume('n', key.fromNumber, opts.perNumberRate, at);
    if (!number) return { taken: false, waitMs };
    if (!key.teamRate) return { taken: true, at };
    const team = await consume('t', key.teamId, key.teamRate, at).catch(async (err: unknown) => {
      await limiter.reward(number, 1).catch(() => undefined);
      throw err;
    });
    if (team) return { taken: true, at };
    // The number's slot goes back, so another call of this number may use it (best effort).
    await limiter.reward(number, 1).catch(() => undefined);
    return { taken: false, waitMs: Math.max(waitMs, paceSlot(at, key.teamRate).nextStartMs - at) };
  }

  return {
    store: opts.store.kind,
    tryTake: (key) => tryTake(key),
    dialTiming(key, at) {
      const now = clock();
      const same = (rate: number) => paceSlot(now, rate).index === paceSlot(at, rate).index;
      return same(opts.perNumberRate) && (!key.teamRate || same(key.teamRate)) ? { kind: 'now' } : { kind: 'stale' };
    },
    async take(key, { maxWaitMs, signal, onWait, priority }) {
      const deadline = clock() + maxWaitMs;
      const turn = enqueue(key.fromNumber, priority ?? [clock()]);
      let waited = false;
      const waiting = async () => {
        waited = true;
        await onWait?.();
      };
      try {
        for (;;) {
          const left = deadline - clock();
          if (isFirst(key.fromNumber, turn)) {
            const result = await tryTake(key, true);
            if (result.taken) return result.at;
            if (!waited) await waiting();
            if (deadline - clock() <= 0) return null;
            // Until the next slot, at most a second: a waiter of higher priority may have come first meanwhile.
            await sleep(Math.min(result.waitMs, deadline - clock(), 1000), signal);
            if (result.waitMs > 1000) await waiting();
            continue;
          }
          if (left <= 0) return null;
          await waiting();
          // Our turn comes when the waiters ahead leave (wake), or we look again within a second.
          await Promise.race([new Promise<void>((resolve) => (turn.wake = resolve)), sleep(Math.min(1000, left), signal)]);
        }
      } finally {
        dequeue(key.fromNumber, turn);
      }
    },
  };
}
