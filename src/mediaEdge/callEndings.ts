/**
 * The ends of the calls an edge holds being reported: each call's `ended` event and its recording
 * being stored (recording/recordingUpload.ts, which retries for about a minute while the store
 * fails). Closing the edge waits for them, so a call that ended just before a SIGTERM still
 * reaches the service with its recording; but only up to a bound, so a store that does not answer
 * cannot hold the process past its orchestrator's grace period (after which it is killed anyway,
 * mid-write).
 */

/** How long close() waits for the calls' ends by default: under the 30 s a SIGTERM is usually given before SIGKILL. */
export const DEFAULT_CALL_ENDINGS_WAIT_MS = 25_000;

export class CallEndings {
  private readonly pending = new Set<Promise<unknown>>();

  /** Tracks a call's ending until it settles (a rejection counts as settled). */
  add(ending: Promise<unknown>): void {
    this.pending.add(ending);
    const forget = () => this.pending.delete(ending);
    ending.then(forget, forget);
  }

  /** Endings not settled yet. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Resolves once every ending (those added while waiting too) has settled, or after `boundMs`,
   * whichever is first; says how many were still under way.
   */
  async settled(boundMs: number): Promise<{ unsettled: number }> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), boundMs);
    });
    try {
      while (this.pending.size > 0) {
        const outcome = await Promise.race([Promise.allSettled([...this.pending]), timedOut]);
        if (outcome === 'timeout') break;
      }
      return { unsettled: this.pending.size };
    } finally {
      clearTimeout(timer);
    }
  }
}
