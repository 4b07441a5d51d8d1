/**
 * Gauges read when scraped from the objects that hold the value (an edge's sockets, a
 * limiter's fallback): each object registers itself, weakly, so one closed and dropped stops
 * counting without an unregister call, and several in one process (tests, `npm start`) add up.
 */
import type { Gauge } from 'prom-client';

export class LiveSources<T extends object> {
  private readonly refs = new Set<WeakRef<T>>();

  add(source: T): void {
    this.refs.add(new WeakRef(source));
  }

  /** The sources still alive. */
  *live(): Iterable<T> {
    for (const ref of this.refs) {
      const source = ref.deref();
      if (source) yield source;
      else this.refs.delete(ref);
    }
  }
}

/** The collect function of a gauge whose value is the sum of `read` over the live sources, per label set. */
export function sumOfSources<T extends object, L extends string>(
  sources: LiveSources<T>,
  read: (source: T) => Iterable<[Partial<Record<L, string>>, number]>,
): (this: Gauge<L>) => void {
  return function collect(this: Gauge<L>) {
    this.reset();
    for (const source of sources.live()) {
      for (const [labels, value] of read(source)) this.inc(labels, value);
    }
  };
}
