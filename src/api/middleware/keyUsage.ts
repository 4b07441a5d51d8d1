import type { Logger } from '../../logging/logger.js';
import type { Pool } from '../../db/pool.js';
import { recordApiKeysUsed } from '../../db/repositories/apiKeys.js';

/**
 * Remembers when each key was last used and writes them in one batched UPDATE every
 * few seconds, so no request waits on a database write for last_used_at.
 */
export class KeyUsageRecorder {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pool: Pool, private readonly logger: Logger, private readonly flushMs: number) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  touch(keyId: string): void {
    this.pending.set(keyId, new Date());
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await recordApiKeysUsed(this.pool, batch);
    } catch (err) {
      this.logger.warn({ err }, 'could not record API key usage; will retry');
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
