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

/** How late the live calls' timers fired lately: the samples of the last `spanMs`. Pure: the caller passes the clock. */
export class LatenessWindow {
  private samples: { atMs: number; lateMs: number }[] = [];

  constructor(private readonly spanMs: number) {}

  record(lateMs: number, nowMs: number): void {
    // Pruned here only once the oldest is two spans old: a burst records thousands a second,
    // and copying the rest at each one would cost the worker's loop a copy per timer.
    if (this.samples.length > 0 && this.samples[0].atMs <= nowMs - 2 * this.spanMs) this.forgetBefore(nowMs - this.spanMs);
    this.samples.push({ atMs: nowMs, lateMs });
  }

  /** The `q` quantile of the lateness seen in the last `spanMs` (undefined: no timer fired). */
  quantile(q: number, nowMs: number): number | undefined {
    this.forgetBefore(nowMs - this.spanMs);
    if (this.samples.length === 0) return undefined;
    const sorted = this.samples.map((s) => s.lateMs).sort((a, b) => a - b);
    return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
  }

  private forgetBefore(atMs: number): void {
    if (this.samples.length === 0 || this.samples[0].atMs > atMs) return;
    const from = this.samples.findIndex((s) => s.atMs > atMs);
    this.samples = from < 0 ? [] : this.samples.slice(from);
  }
}

export interface LiveAdmissionRateOptions {
  /** The lateness above which admissions slow down. */
  limitMs: number;
  /** How often the rate may change. */
  stepMs: number;
}

/**
 * The admission rate the live calls' pace allows (docs/calls.md, "Admission"): the configured
 * rate while their timers fire on time; cut by 30 % at each step while they fire later than
 * `limitMs`, and grown back by a fiftieth of the configured rate at each step once they are on
 * time again (additive increase, multiplicative decrease: the admitted calls' own tasks come
 * seconds after their admission, so the rate is lowered firmly and raised slowly). Never below
 * one call a second or a fiftieth of the configured rate, so the line always moves. Pure: the
 * caller passes the lateness and the clock.
 */
export class LiveAdmissionRate {
  private rate: number;
  private changedAt: number | undefined;
  private readonly floor: number;

  constructor(
    private readonly maxPerSecond: number,
    private readonly options: LiveAdmissionRateOptions,
  ) {
    this.rate = maxPerSecond;
    this.floor = Math.min(maxPerSecond, Math.max(1, maxPerSecond / 50));
  }

  /**
   * The rate now, given the live timers' recent lateness (undefined: none fired lately, which
   * counts as on time), read only when a step is due.
   */
  update(nowMs: number, lateness: () => number | undefined): number {
    if (this.changedAt !== undefined && nowMs - this.changedAt < this.options.stepMs) return this.rate;
    this.changedAt = nowMs;
    const lateMs = lateness();
    if (lateMs !== undefined && lateMs > this.options.limitMs) this.rate = Math.max(this.floor, this.rate * 0.7);
    else this.rate = Math.min(this.maxPerSecond, this.rate + this.maxPerSecond / 50);
    return this.rate;
  }
}

/**
 * Whether the live calls run late, as the admission pacer and the slot releases read it: the
 * p90 of their timers' lateness over the window, above `limitMs`. The p90 is taken at most
 * once per `lookMs`: taking it sorts the window, and every call that ends asks. Pure: the
 * caller passes the clock.
 */
export class LiveCallPace {
  private lookedAt: number | undefined;
  private p90: number | undefined;

  constructor(
    readonly timers: LatenessWindow,
    private readonly limitMs: number,
    private readonly lookMs: number,
  ) {}

  /** The p90 of the live timers' lateness (undefined: none fired lately), at most `lookMs` old. */
  lateness(nowMs: number): number | undefined {
    if (this.lookedAt === undefined || nowMs - this.lookedAt >= this.lookMs) {
      this.lookedAt = nowMs;
      this.p90 = this.timers.quantile(0.9, nowMs);
    }
    return this.p90;
  }

  /** The live timers fire later than `limitMs` (none fired lately: on time). */
  late(nowMs: number): boolean {
    const lateMs = this.lateness(nowMs);
    return lateMs !== undefined && lateMs > this.limitMs;
  }
}
