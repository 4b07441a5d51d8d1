/**
 * How many calls the admission pacer may admit now (docs/calls.md, "Admission"): a token
 * bucket filled at `ratePerSecond`, holding at most one tick's worth (at least one call), so
 * an idle spell never turns into a burst. Pure: the caller passes the clock.
 */
export class AdmissionRate {
  private tokens: number;
  private last: number | undefined;
  private readonly capacity: number;

  constructor(
    private readonly ratePerSecond: number,
    tickMs: number,
  ) {
    this.capacity = Math.max(1, (ratePerSecond * tickMs) / 1000);
    this.tokens = this.capacity;
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
