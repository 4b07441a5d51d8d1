/**
 * One 20 ms clock for every call of the process: each tick, every subscribed call sends one
 * outbound frame and plays one inbound frame. One timer instead of one per call, scheduled
 * against the monotonic clock so it does not drift; after a stall of the event loop it
 * catches up by at most a few ticks and drops the rest (late audio is worse than a skip).
 */
import { FRAME_MS } from '../media/channel.js';

export type TickListener = () => void;

const MAX_CATCH_UP_TICKS = 5;

export class FrameClock {
  private readonly listeners = new Set<TickListener>();
  private timer: NodeJS.Timeout | undefined;
  private next = 0;
  /** When the tick being run was due (performance.now() ms): a listener's lateness is now minus this. */
  scheduledAt = 0;
  /** Ticks skipped after stalls longer than the catch-up allows. */
  droppedTicks = 0;

  constructor(
    private readonly onListenerError: (err: unknown) => void,
    private readonly periodMs = FRAME_MS,
  ) {}

  /** Calls `listener` every tick until the returned function is called. */
  subscribe(listener: TickListener): () => void {
    this.listeners.add(listener);
    if (!this.timer) {
      this.next = performance.now() + this.periodMs;
      this.schedule();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    };
  }

  get size(): number {
    return this.listeners.size;
  }

  private schedule(): void {
    this.timer = setTimeout(() => this.fire(), Math.max(0, this.next - performance.now()));
  }

  private fire(): void {
    const now = performance.now();
    let due = Math.floor((now - this.next) / this.periodMs) + 1;
    if (due > MAX_CATCH_UP_TICKS) {
      this.droppedTicks += due - MAX_CATCH_UP_TICKS;
      this.next = now - (MAX_CATCH_UP_TICKS - 1) * this.periodMs;
      due = MAX_CATCH_UP_TICKS;
    }
    for (let i = 0; i < due; i++) {
      this.scheduledAt = this.next + i * this.periodMs;
      for (const listener of [...this.listeners]) {
        try {
          listener();
        } catch (err) {
          this.onListenerError(err);
        }
      }
    }
    this.next += due * this.periodMs;
    if (this.listeners.size > 0) this.schedule();
    else this.timer = undefined;
  }
}
