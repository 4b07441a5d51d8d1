/**
 * The bound on synthesising simulated calls' recordings in one API process: at most
 * `concurrency` recordings are spoken at once (each runs its turns one after the other, so
 * that is also the most `text2wave` processes at once), at most `maxQueued` more wait for a
 * turn, first come first served, and anything past that is refused at once with
 * SynthesisBusyError (the API answers 503 with Retry-After). Without it every first read of
 * a distinct call started its own festival processes.
 */

/** No room to synthesise now: every slot runs and the queue is full. Trying later works. */
export class SynthesisBusyError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('recording synthesis is at capacity');
    this.name = 'SynthesisBusyError';
  }
}

export interface SynthesisPoolOptions {
  /** Syntheses that run at once (RECORDING_SYNTHESIS_CONCURRENCY). */
  concurrency: number;
  /** Syntheses that may wait for a slot (RECORDING_SYNTHESIS_MAX_QUEUED). */
  maxQueued: number;
  /** What a refusal tells the client to wait (Retry-After, seconds). */
  retryAfterSeconds?: number;
}

/** Retry-After of a refusal: about what a queued recording of a few turns waits. */
export const SYNTHESIS_RETRY_AFTER_SECONDS = 5;

export class SynthesisPool {
  readonly concurrency: number;
  readonly maxQueued: number;
  private readonly retryAfterSeconds: number;
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  /** The most that ran at once, and how many were refused (for tests and metrics). */
  readonly stats = { peakRunning: 0, refused: 0 };

  constructor(options: SynthesisPoolOptions) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) throw new Error(`concurrency must be a positive whole number, got ${options.concurrency}`);
    if (!Number.isInteger(options.maxQueued) || options.maxQueued < 0) throw new Error(`maxQueued must be a whole number of at least 0, got ${options.maxQueued}`);
    this.concurrency = options.concurrency;
    this.maxQueued = options.maxQueued;
    this.retryAfterSeconds = options.retryAfterSeconds ?? SYNTHESIS_RETRY_AFTER_SECONDS;
  }

  get running(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Runs `task` in a slot (waiting in line for one), or rejects at once with SynthesisBusyError when the line is full. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.concurrency) {
      if (this.waiting.length >= this.maxQueued) {
        this.stats.refused++;
        throw new SynthesisBusyError(this.retryAfterSeconds);
      }
      // The slot is handed over by the task that frees it (active stays counted).
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    this.stats.peakRunning = Math.max(this.stats.peakRunning, this.active);
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
