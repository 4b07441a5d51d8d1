// An in-memory MediaChannel for conversation tests: a clock ticking every 20 ms (as a
// transport paces) plays one caller frame inbound (what the test makes the caller say,
// else silence or a low noise) and sends at most one queued agent frame, which is recorded.
// With `asFastAsPossible` the clock ticks once per macrotask instead, so a test follows the
// audio clock of both sides (ticks × 20 ms) without waiting for it in real time.
import { FRAME_MS, FRAME_SAMPLES, type ChannelCloseReason, type MediaChannel, type PcmFrame } from '../../src/mediaEdge/media/channel.js';
import { sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { gainFromDb } from '../../src/mediaEdge/audio/level.js';

type Listener = (frame: PcmFrame) => void;

/** White noise whose RMS level is `dbfs` (deterministic: a fixed-seed generator). */
export function whiteNoise(samples: number, dbfs: number, seed = 1): Int16Array {
  let state = seed >>> 0 || 1;
  const random = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x100000000;
  };
  // Uniform noise on [-a, a] has RMS a / √3.
  const amplitude = 32768 * gainFromDb(dbfs) * Math.sqrt(3);
  return Int16Array.from({ length: samples }, () => Math.round((random() * 2 - 1) * amplitude));
}

export class LoopbackChannel implements MediaChannel {
  readonly closed: Promise<ChannelCloseReason>;
  /** Agent frames that left, in order. */
  readonly sent: PcmFrame[] = [];
  /** When each of `sent` left, on the channel's clock (ms). */
  readonly sentAtMs: number[] = [];
  /** Ticks so far: the channel's time is ticks × 20 ms. */
  ticks = 0;
  private settle!: (reason: ChannelCloseReason) => void;
  private closeReason: ChannelCloseReason | undefined;
  private readonly inbound = new Set<Listener>();
  private readonly outbound = new Set<Listener>();
  private queue: PcmFrame[] = [];
  private drainWaiters: (() => void)[] = [];
  private callerFrames: PcmFrame[] = [];
  private callerDone: (() => void)[] = [];
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly backgroundDbfs: number | undefined;
  private readonly hangUpAfterMs: number | undefined;
  private readonly afterTick = new Set<() => void>();

  /**
   * `backgroundDbfs`: the caller's line carries white noise at this level instead of digital silence.
   * `asFastAsPossible`: a tick per macrotask, not per 20 ms of real time.
   * `hangUpAfterMs`: the caller hangs up (remote_hangup) once the channel's clock reaches it.
   */
  constructor(options: { backgroundDbfs?: number; asFastAsPossible?: boolean; hangUpAfterMs?: number } = {}) {
    this.backgroundDbfs = options.backgroundDbfs;
    this.hangUpAfterMs = options.hangUpAfterMs;
    this.closed = new Promise((resolve) => (this.settle = resolve));
    if (options.asFastAsPossible) setImmediate(() => this.tickAsFastAsPossible());
    else this.timer = setInterval(() => this.tick(), FRAME_MS);
  }

  /** The channel's clock: the caller audio played so far (ms). */
  get heardMs(): number {
    return this.ticks * FRAME_MS;
  }

  onInbound(listener: Listener): () => void {
    this.inbound.add(listener);
    return () => this.inbound.delete(listener);
  }

  onOutbound(listener: Listener): () => void {
    this.outbound.add(listener);
    return () => this.outbound.delete(listener);
  }

  enqueue(frame: PcmFrame): void {
    if (!this.closeReason) this.queue.push(frame);
  }

  clear(): void {
    this.queue = [];
    this.resolveDrained();
  }

  drained(): Promise<void> {
    if (this.queue.length === 0 || this.closeReason) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** The caller says these samples (16 kHz) from the next tick on; resolves once they have all been played inbound. */
  callerSays(samples: Int16Array): Promise<void> {
    this.callerFrames.push(...sliceFrames(samples));
    return new Promise((resolve) => this.callerDone.push(resolve));
  }

  /** Resolves after `count` more agent frames have left. */
  agentFrames(count: number): Promise<void> {
    const target = this.sent.length + count;
    return this.until(() => this.sent.length >= target);
  }

  /** Resolves once the condition holds after a tick. */
  until(condition: () => boolean): Promise<void> {
    if (condition()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!condition()) return;
        this.afterTick.delete(check);
        resolve();
      };
      this.afterTick.add(check);
    });
  }

  /** Ends the call: stops the clock and settles `closed`. */
  close(reason: ChannelCloseReason = 'local_hangup'): void {
    clearInterval(this.timer);
    if (this.closeReason) return;
    this.closeReason = reason;
    this.queue = [];
    this.resolveDrained();
    this.settle(reason);
  }

  private tickAsFastAsPossible(): void {
    if (this.closeReason) return;
    this.tick();
    setImmediate(() => this.tickAsFastAsPossible());
  }

  private tick(): void {
    if (this.hangUpAfterMs !== undefined && this.heardMs >= this.hangUpAfterMs) {
      this.close('remote_hangup');
      return;
    }
    this.ticks++;
    const caller = this.callerFrames.shift();
    const frame = caller ?? (this.backgroundDbfs === undefined ? new Int16Array(FRAME_SAMPLES) : whiteNoise(FRAME_SAMPLES, this.backgroundDbfs, this.ticks));
    if (caller && this.callerFrames.length === 0) for (const done of this.callerDone.splice(0)) done();
    for (const listener of this.inbound) listener(frame);
    const out = this.queue.shift();
    if (out) {
      this.sent.push(out);
      this.sentAtMs.push(this.heardMs);
      for (const listener of this.outbound) listener(out);
      if (this.queue.length === 0) this.resolveDrained();
    }
    for (const check of [...this.afterTick]) check();
  }

  private resolveDrained(): void {
    for (const resolve of this.drainWaiters.splice(0)) resolve();
  }
}
