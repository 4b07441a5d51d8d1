/**
 * A cap on the engine processes an edge runs at once (POCKETSPHINX_MAX_PROCESSES): a
 * session takes a slot before its process starts and gives it back once the process has
 * exited. Sessions over the cap wait in line. When a slot frees, a waiting session that
 * already holds the caller's speech goes first (its caller is waiting for the answer), then
 * the others in the order they came.
 */

import { recognitionQueues } from '../../metrics/edgeMetrics.js';

/** One session's place in line. */
export interface SlotRequest {
  /** Resolves true once the slot is taken, false when refused; rejects when cancelled. */
  readonly granted: Promise<boolean>;
  /** Stops waiting: `granted` resolves false. Nothing once the slot is taken. */
  refuse(): void;
  /** Stops waiting: `granted` rejects with `err`. Nothing once the slot is taken. */
  cancel(err: Error): void;
}

interface Waiter {
  urgent: () => boolean;
  settle: (granted: boolean | Error) => void;
}

export class ProcessSlots {
  private inUse = 0;
  private readonly waiting: Waiter[] = [];
  /** The most processes at once; requests that had to wait; requests refused after waiting too long. */
  readonly stats = { peak: 0, waited: 0, refused: 0 };

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new Error(`the process cap must be a positive whole number, got ${max}`);
    recognitionQueues.add(this);
  }

  /** Slots taken now (processes running or about to). */
  get running(): number {
    return this.inUse;
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** A place in line; `urgent` says whether the session already has speech to recognise. */
  request(urgent: () => boolean): SlotRequest {
    let settled = false;
    let resolve!: (granted: boolean) => void;
    let reject!: (err: Error) => void;
    const granted = new Promise<boolean>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const waiter: Waiter = {
      urgent,
      settle: (outcome) => {
        if (settled) return;
        settled = true;
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      },
    };
    const leave = (outcome: false | Error) => {
      if (settled) return;
      const at = this.waiting.indexOf(waiter);
      if (at >= 0) this.waiting.splice(at, 1);
      if (outcome === false) this.stats.refused++;
      waiter.settle(outcome);
    };
    if (this.inUse < this.max) this.take(waiter);
    else {
      this.stats.waited++;
      this.waiting.push(waiter);
    }
    return { granted, refuse: () => leave(false), cancel: (err) => leave(err) };
  }

  /** Gives a slot back (its process has exited) and hands it to the next in line. */
  release(): void {
    this.inUse--;
    while (this.inUse < this.max && this.waiting.length > 0) {
      const urgent = this.waiting.findIndex((w) => w.urgent());
      const [next] = this.waiting.splice(urgent >= 0 ? urgent : 0, 1);
      this.take(next);
    }
  }

  private take(waiter: Waiter): void {
    this.inUse++;
    this.stats.peak = Math.max(this.stats.peak, this.inUse);
    waiter.settle(true);
  }
}
