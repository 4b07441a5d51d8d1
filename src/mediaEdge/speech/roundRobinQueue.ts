/**
 * Work of several owners (the calls of an edge) for one shared worker (the Festival
 * process): each owner's items in their order, the owners taking turns, so an owner with a
 * long queue delays another by at most one item. The owner just served goes behind every
 * owner that arrived meanwhile.
 */
export class RoundRobinQueue<K, T> {
  /** Owners with items, in the order they are served. */
  private readonly queues = new Map<K, T[]>();
  /** The owner taken from last, with what it has left: back in line at the next take. */
  private served: { owner: K; items: T[] } | undefined;

  get size(): number {
    let total = this.served?.items.length ?? 0;
    for (const items of this.queues.values()) total += items.length;
    return total;
  }

  push(owner: K, item: T): void {
    if (this.served?.owner === owner) {
      this.served.items.push(item);
      return;
    }
    const items = this.queues.get(owner);
    if (items) items.push(item);
    else this.queues.set(owner, [item]);
  }

  /** The next item: the first of the owner whose turn it is; undefined when empty. */
  take(): T | undefined {
    if (this.served) {
      if (this.served.items.length > 0) this.queues.set(this.served.owner, this.served.items);
      this.served = undefined;
    }
    const next = this.queues.entries().next();
    if (next.done) return undefined;
    const [owner, items] = next.value;
    this.queues.delete(owner);
    const item = items.shift()!;
    this.served = { owner, items };
    return item;
  }
}
