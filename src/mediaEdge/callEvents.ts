/**
 * Reports a call's progress to the service: POST /internal/v1/calls/{call_id}/events with
 * the media edge's bearer secret (docs/calls.md documents the body). Each event carries a
 * stable event_id, so a retried report is applied once. After the call, System Notes of what
 * the edge learnt late (a lost recording) go to POST /internal/v1/calls/{call_id}/system-notes.
 */
import { context as otelContext, propagation, trace, type Context } from '@opentelemetry/api';
import type { CallEvent } from '../../workflows/contracts.js';
import type { Logger } from '../logging/logger.js';
import { contextOfTraceparent } from '../tracing/traceContext.js';

export interface CallEventReporterOptions {
  /** Base URL of the API, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  secret: string;
  logger: Logger;
  /** Attempts before giving up (network errors and 5xx are retried; 4xx are final). */
  attempts?: number;
  fetch?: typeof fetch;
}

/** Calls whose trace is kept at once, at most (their ends forget them; a bound in case one never ends). */
const MAX_TRACED_CALLS = 10_000;

export class CallEventReporter {
  private readonly doFetch: typeof fetch;
  /**
   * The trace each call's requests join: a phone call's dial activity's context, taken when it
   * claims the dial; a browser call's, as the service answered its admission (joinTrace). The
   * events (ringing from the trunk's responses, answered, ended) run outside any span, and
   * fetch is not instrumented: without it each would root a trace of its own at the API
   * (docs/observability.md, "Traces").
   */
  private readonly traces = new Map<string, Context>();

  constructor(private readonly options: CallEventReporterOptions) {
    this.doFetch = options.fetch ?? fetch;
  }

  /**
   * Whether the service took the event (false when it refused it for good, e.g. the call
   * has ended), and the call's team when it did; when it refused it because the call has
   * ended (409), the status the call ended with (`cancelled`: cancel-call came first).
   */
  async report(callId: string, event: CallEvent): Promise<{ accepted: boolean; teamId?: string; endedAs?: string }> {
    const answer = await this.post(`/internal/v1/calls/${encodeURIComponent(callId)}/events`, event, { callId, event: event.type }, 'call event');
    if (answer.ok) return { accepted: true, teamId: teamIdIn(answer.body) };
    const endedAs = answer.status === 409 ? stringField(answer.body, 'status') : undefined;
    return { accepted: false, ...(endedAs ? { endedAs } : {}) };
  }

  /**
   * Adds a System Note to the ended call (POST /internal/v1/calls/{id}/system-notes, once per
   * kind); while the call is still open (409) it is tried again like a 5xx. Whether it is on the call.
   */
  async addSystemNote(callId: string, note: { kind: 'recording_lost'; text: string }): Promise<boolean> {
    const answer = await this.post(`/internal/v1/calls/${encodeURIComponent(callId)}/system-notes`, note, { callId, note: note.kind }, 'system note', (status) => status === 409);
    return answer.ok;
  }

  /**
   * Claims the call's one dial for this edge (POST /internal/v1/calls/{id}/dial-claim,
   * docs/telephony.md "One call, one INVITE"): `claimed` (`first`: this request took it, so
   * the edge may send the INVITE), `refused` with the service's status and message (409 held
   * by another edge, named by its task queue; 410 the call has ended; 404), or `unreachable`
   * (the service did not answer: the claim may or may not be taken).
   */
  async claimDial(
    callId: string,
    claim: { claimId: string; mediaTaskQueue: string },
  ): Promise<{ kind: 'claimed'; first: boolean; teamId?: string } | { kind: 'refused'; status: number; message: string; heldBy?: string } | { kind: 'unreachable'; detail: string }> {
    this.traceCall(callId);
    const answer = await this.post(`/internal/v1/calls/${encodeURIComponent(callId)}/dial-claim`, { claim_id: claim.claimId, media_task_queue: claim.mediaTaskQueue }, { callId }, 'dial claim');
    let parsed: { first?: unknown; team_id?: unknown; message?: unknown; media_task_queue?: unknown } = {};
    try {
      parsed = JSON.parse(answer.body) as typeof parsed;
    } catch {
      // Not JSON: a proxy's page, or the network error's text.
    }
    if (answer.ok) return { kind: 'claimed', first: parsed.first === true, ...(typeof parsed.team_id === 'string' ? { teamId: parsed.team_id } : {}) };
    if (answer.status === 0 || answer.status >= 500) return { kind: 'unreachable', detail: answer.body };
    return {
      kind: 'refused',
      status: answer.status,
      message: typeof parsed.message === 'string' ? parsed.message : answer.body,
      ...(typeof parsed.media_task_queue === 'string' ? { heldBy: parsed.media_task_queue } : {}),
    };
  }

  /** The call's later requests join the trace active now, when there is one (tracing on, inside an activity). */
  traceCall(callId: string): void {
    const active = otelContext.active();
    if (trace.getSpan(active)) this.keepTrace(callId, active);
  }

  /**
   * A browser call's requests join the trace the service answered its claim or redemption
   * with (the create-web-call request's, or the redemption's): nothing on the edge is inside
   * that trace when the call connects.
   */
  joinTrace(callId: string, traceparent: string | undefined): void {
    const joined = contextOfTraceparent(traceparent);
    if (joined) this.keepTrace(callId, joined);
  }

  private keepTrace(callId: string, traced: Context): void {
    if (this.traces.size >= MAX_TRACED_CALLS) this.traces.delete(this.traces.keys().next().value as string);
    this.traces.set(callId, traced);
  }

  /** The call has ended on this edge: its trace is no longer kept. */
  forgetCall(callId: string): void {
    this.traces.delete(callId);
  }

  /** POSTs with retries (network errors, 5xx, and what `retryAlso` names); 4xx otherwise final. */
  private async post(
    path: string,
    body: unknown,
    fields: Record<string, string>,
    what: string,
    retryAlso: (status: number) => boolean = () => false,
  ): Promise<{ ok: boolean; status: number; body: string }> {
    const attempts = this.options.attempts ?? 6;
    const url = `${this.options.apiUrl.replace(/\/$/, '')}${path}`;
    const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${this.options.secret}` };
    // traceparent (W3C): the call's trace, or the one active now; nothing when tracing is off.
    propagation.inject((fields.callId && this.traces.get(fields.callId)) || otelContext.active(), headers);
    for (let attempt = 1; ; attempt++) {
      let status = 0;
      let detail = '';
      try {
        const res = await this.doFetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(5_000),
        });
        status = res.status;
        detail = await res.text();
        if (res.ok) return { ok: true, status, body: detail };
        if (status < 500 && !retryAlso(status)) {
          this.options.logger.warn({ ...fields, status, detail }, `${what} refused`);
          return { ok: false, status, body: detail };
        }
      } catch (err) {
        detail = (err as Error).message;
      }
      if (attempt >= attempts) {
        this.options.logger.error({ ...fields, status, detail }, `${what} could not be delivered`);
        return { ok: false, status, body: detail };
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(200 * 2 ** (attempt - 1), 3_000)));
    }
  }
}

function teamIdIn(body: string): string | undefined {
  return stringField(body, 'team_id');
}

function stringField(body: string, name: string): string | undefined {
  try {
    const value = (JSON.parse(body) as Record<string, unknown>)[name];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
