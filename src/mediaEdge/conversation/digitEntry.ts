/**
 * An answer keyed on the telephone's keypad: the digits the caller presses, ended by `#` or by
 * `digitTimeoutMs` without a key (3 s by default, the usual IVR wait). A `#` before any digit
 * is not an answer and is ignored. Without a first key by the no-input deadline (when one is
 * set: an ask that takes only keyed answers), the entry ends as silence.
 */
import type { MediaChannel } from '../media/channel.js';

/** Wait after a key for the next one before the entry counts as complete. */
export const DEFAULT_DIGIT_TIMEOUT_MS = 3_000;

export type DigitEntryResult = { kind: 'keyed'; digits: string; endedAt: number } | { kind: 'silence' };

export class DigitEntry {
  readonly result: Promise<DigitEntryResult>;
  /** True once the first key came. */
  started = false;
  private digits = '';
  private timer: NodeJS.Timeout | undefined;
  private done = false;
  private resolve!: (result: DigitEntryResult) => void;
  private readonly unsubscribe: () => void;

  constructor(
    channel: Required<Pick<MediaChannel, 'onDigit'>>,
    private readonly options: { digitTimeoutMs: number; now: () => number; onFirstDigit: () => void },
  ) {
    this.result = new Promise((resolve) => (this.resolve = resolve));
    this.unsubscribe = channel.onDigit((digit) => this.key(digit));
  }

  /** Ends the entry as silence if no key comes within `timeoutMs` (from now). */
  startNoInputTimer(timeoutMs: number): void {
    if (this.done || this.started) return;
    this.arm(timeoutMs);
  }

  /** Stops listening; the result never settles (the answer came another way). */
  cancel(): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    this.unsubscribe();
  }

  private key(digit: string): void {
    if (this.done) return;
    if (digit === '#') {
      if (this.started) this.finish();
      return;
    }
    this.digits += digit;
    if (!this.started) {
      this.started = true;
      this.options.onFirstDigit();
    }
    this.arm(this.options.digitTimeoutMs);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => (this.started ? this.finish() : this.end({ kind: 'silence' })), Math.max(0, ms));
  }

  private finish(): void {
    this.end({ kind: 'keyed', digits: this.digits, endedAt: this.options.now() });
  }

  private end(result: DigitEntryResult): void {
    if (this.done) return;
    this.cancel();
    this.resolve(result);
  }
}
