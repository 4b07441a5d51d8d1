/**
 * Reports a call's progress to the service: POST /internal/v1/calls/{call_id}/events with
 * the media edge's bearer secret (docs/calls.md documents the body). Each event carries a
 * stable event_id, so a retried report is applied once.
 */
import type { CallEvent } from '../../workflows/contracts.js';
import type { Logger } from '../logging/logger.js';

export interface CallEventReporterOptions {
  /** Base URL of the API, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  secret: string;
  logger: Logger;
  /** Attempts before giving up (network errors and 5xx are retried; 4xx are final). */
  attempts?: number;
  fetch?: typeof fetch;
}

export class CallEventReporter {
  private readonly doFetch: typeof fetch;

  constructor(private readonly options: CallEventReporterOptions) {
    this.doFetch = options.fetch ?? fetch;
  }

  /**
   * Whether the service took the event (false when it refused it for good, e.g. the call
   * has ended), and the call's team when it did.
   */
  async report(callId: string, event: CallEvent): Promise<{ accepted: boolean; teamId?: string }> {
    const attempts = this.options.attempts ?? 6;
    const url = `${this.options.apiUrl.replace(/\/$/, '')}/internal/v1/calls/${encodeURIComponent(callId)}/events`;
    for (let attempt = 1; ; attempt++) {
      let status = 0;
      let detail = '';
      try {
        const res = await this.doFetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${this.options.secret}` },
          body: JSON.stringify(event),
          signal: AbortSignal.timeout(5_000),
        });
        status = res.status;
        detail = await res.text();
        if (res.ok) return { accepted: true, teamId: teamIdIn(detail) };
        if (status < 500) {
          this.options.logger.warn({ callId, event: event.type, status, detail }, 'call event refused');
          return { accepted: false };
        }
      } catch (err) {
        detail = (err as Error).message;
      }
      if (attempt >= attempts) {
        this.options.logger.error({ callId, event: event.type, status, detail }, 'call event could not be delivered');
        return { accepted: false };
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(200 * 2 ** (attempt - 1), 3_000)));
    }
  }
}

function teamIdIn(body: string): string | undefined {
  try {
    const teamId = (JSON.parse(body) as { team_id?: unknown }).team_id;
    return typeof teamId === 'string' ? teamId : undefined;
  } catch {
    return undefined;
  }
}
