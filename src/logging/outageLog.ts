import type { Logger } from './logger.js';

/** Logs the first failure of a spell of them as a warning, and the first success after it. */
export class OutageLog {
  private failing = false;

  constructor(
    private readonly logger: Logger | undefined,
    private readonly failedMessage: string,
    private readonly recoveredMessage: string,
  ) {}

  failed(err: unknown, fields: Record<string, unknown> = {}): void {
    if (!this.failing) this.logger?.warn({ err, ...fields }, this.failedMessage);
    this.failing = true;
  }

  ok(): void {
    if (this.failing) this.logger?.info(this.recoveredMessage);
    this.failing = false;
  }
}
