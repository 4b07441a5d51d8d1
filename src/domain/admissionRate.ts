/**
 * How many calls the admission pacer may admit now (docs/calls.md, "Admission"): a token
 * bucket filled at `ratePerSecond`, holding at most one tick's worth (at least one call), so
 * an idle spell never turns into a burst. Pure: the caller passes the clock.
 */
export class AdmissionRate {
  private tokens: number;
  private last: number | undefined;
  private capacity: number;

  constructor(
    private ratePerSecond: number,
    private readonly tickMs: number,
  ) {
    this.capacity = Math.max(1, (ratePerSecond * tickMs) / 1000);
    this.tokens = this.capacity;
  }

  /** From now on, `ratePerSecond` (the tokens already there stay, up to the new tick's worth). */
  setRate(ratePerSecond: number): void {
    this.ratePerSecond = ratePerSecond;
    this.capacity = Math.max(1, (ratePerSecond * this.tickMs) / 1000);
    this.tokens = Math.min(this.tokens, this.capacity);
  }

  /** Whole calls that may be admitted at `nowMs`. */
  available(nowMs: number): number {
    if (this.last !== undefined) this.tokens = Math.min(this.capacity, this.tokens + ((nowMs - this.last) * this.ratePerSecond) / 1000);
    this.last = nowMs;
    return Math.floor(this.tokens);
  }

  /** `n` calls were admitted (at most what `available` said). */
  spend(n: number): void {
    this.tokens = Math.max(0, this.tokens - n);
  }
}

export interface LiveAdmissionRateOptions {
  /** The lateness above which admissions slow down. */
  limitMs: number;
  /** How often the rate may change. */
  stepMs: number;
  /** After the line was empty this long, the calls that fall due next start slowly (`lineLooked`). */
  idleRestartMs: number;
}

/**
 * The admission rate the live calls' pace allows (docs/calls.md, "Admission"): the configured
 * rate while their tasks start on time; cut by 30 % at each step while they wait longer than
 * `limitMs` (LiveCallPace), and grown back by a fiftieth of the configured rate at each step once they are on
 * time again (additive increase, multiplicative decrease: the admitted calls' own tasks come
 * seconds after their admission, so the rate is lowered firmly and raised slowly). Never below
 * one call a second or a fiftieth of the configured rate, so the line always moves.
 *
 * A line that forms after `idleRestartMs` empty starts slowly: at a quarter of the configured
 * rate, doubled at each step while the live calls stay on time, until the first late step.
 * The same lag makes that worth it: admitted at the full rate from the first instant, a burst's
 * first second of calls has run the live calls late before their pace can say so.
 * Pure: the caller passes the lateness and the clock.
 */
export class LiveAdmissionRate {
  private rate: number;
  private changedAt: number | undefined;
  private readonly floor: number;
  private startingSlowly = false;
  /** When the line last had due calls waiting (undefined: never). */
  private waitingAt: number | undefined;

  constructor(
    private readonly maxPerSecond: number,
    private readonly options: LiveAdmissionRateOptions,
  ) {
    this.rate = maxPerSecond;
    this.floor = Math.min(maxPerSecond, Math.max(1, maxPerSecond / 50));
  }

  /**
   * The rate now, given the live calls' recent lateness (undefined: no reading, which counts
   * as on time), read only when a step is due.
   */
  update(nowMs: number, lateness: () => number | undefined): number {
    if (this.changedAt !== undefined && nowMs - this.changedAt < this.options.stepMs) return this.rate;
    this.changedAt = nowMs;
    const lateMs = lateness();
    if (lateMs !== undefined && lateMs > this.options.limitMs) {
      this.startingSlowly = false;
      this.rate = Math.max(this.floor, this.rate * 0.7);
    } else {
      this.rate = Math.min(this.maxPerSecond, this.startingSlowly ? this.rate * 2 : this.rate + this.maxPerSecond / 50);
    }
    return this.rate;
  }

  /**
   * The line was looked at and had due calls `waiting` or not. Due calls after `idleRestartMs`
   * with none (or the first ever) start slowly; returns the rate.
   */
  lineLooked(nowMs: number, waiting: boolean): number {
    if (!waiting) return this.rate;
    if (this.waitingAt === undefined || nowMs - this.waitingAt >= this.options.idleRestartMs) {
      this.startingSlowly = true;
      this.rate = Math.max(this.floor, Math.min(this.rate, this.maxPerSecond / 4));
      this.changedAt = nowMs;
    }
    this.waitingAt = nowMs;
    return this.rate;
  }
}

/**
 * A cumulative histogram as Prometheus exposes it: each bucket's upper bound (ms; Infinity for
 * +Inf) and the count of observations at or under it.
 */
export type CumulativeBuckets = Map<number, number>;

/**
 * The `q` quantile of what a cumulative histogram observed between two readings (`before`
 * undefined: since it began), as the upper bound of the bucket it falls in; undefined when
 * nothing was observed between them.
 */
export function quantileBetween(before: CumulativeBuckets | undefined, after: CumulativeBuckets, q: number): number | undefined {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const observed = (bound: number) => (after.get(bound) ?? 0) - (before?.get(bound) ?? 0);
  const total = bounds.length > 0 ? observed(bounds[bounds.length - 1]) : 0;
  if (total <= 0) return undefined;
  return bounds.find((bound) => observed(bound) >= q * total);
}

/**
 * Whether the live calls run late, as the admission pacer and the slot releases read it: the
 * p99 of how long the live-call queue's workflow tasks waited to start (scheduled to started)
 * over the last reading, above `limitMs`. A reading older than `staleMs` (the worker's metrics
 * could not be read since) counts as on time, so a lost reading never holds admissions.
 * Pure: the caller passes the readings and the clock.
 */
export class LiveCallPace {
  private latest: { atMs: number; p99Ms: number | undefined } | undefined;

  constructor(
    private readonly limitMs: number,
    private readonly staleMs: number,
  ) {}

  /** A reading: the p99 of the live tasks' wait to start since the last one (undefined: no task). */
  observe(p99Ms: number | undefined, nowMs: number): void {
    this.latest = { atMs: nowMs, p99Ms };
  }

  /** The last reading's p99 (undefined: no task in it, or no fresh reading). */
  lateness(nowMs: number): number | undefined {
    if (!this.latest || nowMs - this.latest.atMs > this.staleMs) return undefined;
    return this.latest.p99Ms;
  }

  /** The live tasks waited longer than `limitMs` to start (no fresh reading, or no task: on time). */
  late(nowMs: number): boolean {
    const waitedMs = this.lateness(nowMs);
    return waitedMs !== undefined && waitedMs > this.limitMs;
  }
}
