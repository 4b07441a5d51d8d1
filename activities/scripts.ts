/**
 * Activities of the script runner (workflows/scriptRunner.ts): the steps that do I/O.
 * A webhook step's HTTP request and the simulated callee's answers run here, so each
 * shows in the workflow history with its input and result. None of them throws for an
 * answer the script should see (a failed request is a result with ok false); retrying
 * them repeats nothing the call has already recorded (the workflow records the result).
 */
import { Context } from '@temporalio/activity';
import type { Config } from '../src/config/index.js';
import type { AnswerKind } from '../src/domain/authCheck/transcript.js';
import { simulatedCalleeAnswer } from '../src/domain/scripts/steps.js';
import type { Scope } from '../src/domain/scripts/templates.js';
import type { Logger } from '../src/logging/logger.js';

export interface ScriptActivityDeps {
  config: Config;
  logger: Logger;
  /** Injected in tests; the global fetch otherwise. */
  fetch?: typeof fetch;
}

/** Largest response body kept in `webhook.response` (it travels through the workflow history). */
export const WEBHOOK_MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookRequest {
  callId: string;
  stepId: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  /** Rendered JSON body (a string is sent as text); ignored for GET. */
  body?: unknown;
  timeoutSeconds: number;
}

export interface WebhookResult {
  ok: boolean;
  /** HTTP status; 0 when no response arrived. */
  status: number;
  /** The response body as text (truncated to WEBHOOK_MAX_RESPONSE_BYTES). */
  response: string;
  truncated: boolean;
  error?: string;
  durationMs: number;
}

export interface CalleeAnswerRequest {
  callId: string;
  stepId: string;
  question: string;
  variable: string;
  expect: AnswerKind;
  /** contact.*, objects.* and call.* of the call, plus the answers so far. */
  scope: Scope;
  simulatedAnswers: Record<string, string>;
}

export function createScriptActivities(deps: ScriptActivityDeps) {
  const doFetch = deps.fetch ?? fetch;
  return {
    /** Settings the runtime needs from configuration (read once per run, recorded in history). */
    async scriptRuntimeSettings(): Promise<{ region: string }> {
      return { region: deps.config.DEFAULT_PHONE_REGION };
    },

    /** The simulated callee's reply to an ask step (VOICE_PROVIDER=simulator). */
    async simulateCalleeAnswer(input: CalleeAnswerRequest): Promise<{ text: string }> {
      return {
        text: simulatedCalleeAnswer({
          variable: input.variable,
          expect: input.expect,
          scope: input.scope,
          simulatedAnswers: input.simulatedAnswers,
          region: deps.config.DEFAULT_PHONE_REGION,
        }),
      };
    },

    /** A webhook step's request. Never throws for network errors, timeouts or HTTP errors: they come back with ok false. */
    async callWebhook(input: WebhookRequest): Promise<WebhookResult> {
      const started = Date.now();
      const headers: Record<string, string> = { ...input.headers };
      let body: string | undefined;
      if (input.method !== 'GET' && input.body !== undefined) {
        body = typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
        const hasType = Object.keys(headers).some((h) => h.toLowerCase() === 'content-type');
        if (!hasType) headers['content-type'] = typeof input.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
      }
      const failed = (error: string): WebhookResult => ({ ok: false, status: 0, response: '', truncated: false, error, durationMs: Date.now() - started });
      let url: URL;
      try {
        url = new URL(input.url);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') return failed(`url must be http or https: ${input.url}`);
      } catch {
        return failed(`invalid url: ${input.url}`);
      }
      const cancelled = activityCancellation();
      const signal = cancelled ? AbortSignal.any([cancelled, AbortSignal.timeout(input.timeoutSeconds * 1000)]) : AbortSignal.timeout(input.timeoutSeconds * 1000);
      try {
        const res = await doFetch(url, { method: input.method, headers, body, signal, redirect: 'follow' });
        const bytes = new Uint8Array(await res.arrayBuffer());
        const truncated = bytes.length > WEBHOOK_MAX_RESPONSE_BYTES;
        const response = new TextDecoder().decode(truncated ? bytes.subarray(0, WEBHOOK_MAX_RESPONSE_BYTES) : bytes);
        deps.logger.info({ callId: input.callId, stepId: input.stepId, status: res.status }, 'script webhook step answered');
        return { ok: res.ok, status: res.status, response, truncated, durationMs: Date.now() - started };
      } catch (err) {
        // A cancelled attempt (worker shutting down) is not an answer: let Temporal retry the step.
        if (cancelled?.aborted) throw err;
        const e = err as Error;
        const message = e.name === 'TimeoutError' ? `no response within ${input.timeoutSeconds} s` : e.message;
        deps.logger.warn({ callId: input.callId, stepId: input.stepId, err: message }, 'script webhook step failed');
        return failed(message);
      }
    },
  };
}

/** The running activity's cancellation signal; undefined when called outside an activity (unit tests). */
function activityCancellation(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

export type ScriptActivities = ReturnType<typeof createScriptActivities>;
