/**
 * One 20 ms clock for every call of the process: each tick, every subscribed call sends one
 * outbound frame, then every call plays one inbound frame. Sends go first, all of them, so the
 * last call's packet leaves after the others' sends only, not after their decoding too: the
 * far ends hear even pacing however many calls share the tick (the played frame feeds speech
 * recognition, which a few milliseconds do not change). One timer instead of one per call, scheduled
 * against the monotonic clock so it does not drift; after a stall of the event loop it
 * catches up by at most a few ticks and drops the rest (late audio is worse than a skip).
 */
import { FRAME_MS } from '../media/channel.js';

export type TickListener = () => void;

interface Subscriber {
  send: TickListener;
  play?: TickListener;
}

const MAX_CATCH_UP_TICKS = 5;

export class FrameClock {
  private readonly listeners = new Set<Subscriber>();
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

  /**
   * Calls `send` every tick, in the tick's first pass, and `play` in its second, until the
   * returned function is called.
   */
  subscribe(send: TickListener, play?: TickListener): () => void {
    const listener: Subscriber = { send, play };
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

  private run(listener: TickListener): void {
    try {
      listener();
    } catch (err) {
      this.onListenerError(err);
    }
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
      const listeners = [...this.listeners];
      for (const listener of listeners) this.run(listener.send);
      for (const listener of listeners) if (listener.play && this.listeners.has(listener)) this.run(listener.play);
    }
    this.next += due * this.periodMs;
    if (this.listeners.size > 0) this.schedule();
    else this.timer = undefined;
  }
}
