/**
 * Who may open a call on the media edge. A browser's INVITE carries the credential of
 * docs/web-calls.md: `X-Session-Token` (create-web-session, redeemed once through the
 * service's internal API) or `X-Call-Token` + `X-Call-Id` (create-web-call, an HMAC with an
 * expiry the edge checks itself, then a claim of the call at the service). Both ask the
 * service before any media port is bound. The SIP layer turns a rejection into its status code.
 */
import { randomUUID } from 'node:crypto';
import { checkWebCallToken } from '../domain/webCallTokens.js';
import type { Logger } from '../logging/logger.js';
import { getHeader, type SipRequest } from './sip/message.js';

/** A SIP final status for a refused INVITE: 403 bad credential, 404/409/410 the token's or the call's state, 503 the service is unreachable. */
export type AdmissionRejectStatus = 403 | 404 | 409 | 410 | 500 | 503;

export interface AdmittedCall {
  /** The web call's id in the service. */
  callId: string;
  /** Which credential admitted it. */
  credential: 'session_token' | 'call_token';
  scriptId?: string;
  contactId?: string;
  /** A call token's claim of the call at the service (handed back if the media never comes up). */
  claimId?: string;
  /** The call's trace, as the service answered (W3C traceparent; absent with tracing off): its events join it. */
  traceparent?: string;
}

/** A refused INVITE; `retryAfterSeconds` (a 503 of the edge's caller limits) is sent as Retry-After. */
export interface AdmissionRejection {
  reject: AdmissionRejectStatus;
  reason: string;
  retryAfterSeconds?: number;
}

export type AdmissionResult = AdmittedCall | AdmissionRejection;

export interface CallAdmission {
  admit(invite: SipRequest): Promise<AdmissionResult>;
  /** An admitted call ended; `established` says whether its media ever came up. Never rejects. */
  ended?(call: AdmittedCall, established: boolean): Promise<void>;
}

export const isRejection = (result: AdmissionResult): result is AdmissionRejection => 'reject' in result;

export interface ServiceAdmissionOptions {
  /** Base URL of the service's API, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  /** MEDIA_EDGE_SECRET: bearer secret on /internal/v1 and key of X-Call-Token. */
  secret: string;
  logger: Logger;
  /** Per redemption or claim request; the browser is waiting (default 5 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Admission against the service: redeems session tokens; checks call tokens (HMAC and
 * expiry) locally, then claims their call at the service, which answers for every edge.
 */
export class ServiceCallAdmission implements CallAdmission {
  private readonly fetch: typeof fetch;
  private readonly redeemUrl: string;

  constructor(private readonly options: ServiceAdmissionOptions) {
    this.fetch = options.fetch ?? fetch;
    this.redeemUrl = new URL('/internal/v1/web-sessions/redeem', options.apiUrl).href;
  }

  async admit(invite: SipRequest): Promise<AdmissionResult> {
    const sessionToken = getHeader(invite, 'X-Session-Token');
    if (sessionToken) return this.redeem(sessionToken);
    const callToken = getHeader(invite, 'X-Call-Token');
    if (callToken) return this.checkCallToken(callToken, getHeader(invite, 'X-Call-Id'));
    return { reject: 403, reason: 'Missing session token' };
  }

  /** Hands back the claim of a call token whose media never came up, so the browser may try again. */
  async ended(call: AdmittedCall, established: boolean): Promise<void> {
    if (established || !call.claimId) return;
    await this.release(call.callId, call.claimId);
  }

  private async checkCallToken(token: string, callId: string | undefined): Promise<AdmissionResult> {
    if (!callId || !UUID.test(callId)) return { reject: 403, reason: 'Missing or malformed X-Call-Id' };
    // Checked offline first: a forged or expired token costs the service nothing.
    const check = checkWebCallToken(this.options.secret, callId, token);
    if (!check.valid) return check.reason === 'expired' ? { reject: 410, reason: 'Call token has expired' } : { reject: 403, reason: 'Invalid call token' };
    return this.claim(callId.toLowerCase());
  }

  /** POST /internal/v1/web-calls/{id}/claim: the call's state decides before any port is bound. */
  private async claim(callId: string): Promise<AdmissionResult> {
    const claimId = randomUUID();
    let res: Response;
    try {
      res = await this.postInternal(`/internal/v1/web-calls/${callId}/claim`, { claim_id: claimId });
    } catch (err) {
      this.options.logger.error({ err, callId }, 'web call claim failed: service unreachable');
      // The claim may have been taken before the answer was lost.
      void this.release(callId, claimId);
      return { reject: 503, reason: 'Service unavailable' };
    }
    const body = (await res.json().catch(() => ({}))) as { call_id?: unknown; message?: unknown; traceparent?: unknown };
    const message = typeof body.message === 'string' ? body.message : undefined;
    switch (res.status) {
      case 200:
        return { callId, credential: 'call_token', claimId, ...traceOf(body) };
      case 404:
        return { reject: 404, reason: message ?? 'Call not found' };
      case 409:
        return { reject: 409, reason: message ?? 'Call already connected' };
      case 410:
        return { reject: 410, reason: message ?? 'Call has ended' };
      case 401:
        this.options.logger.error('web call claim refused the media edge secret (401): check MEDIA_EDGE_SECRET');
        return { reject: 403, reason: 'Invalid call token' };
      default:
        this.options.logger.error({ status: res.status, message, callId }, 'web call claim failed');
        return { reject: res.status >= 500 ? 503 : 500, reason: 'Claim failed' };
    }
  }

  private async release(callId: string, claimId: string): Promise<void> {
    try {
      const res = await this.postInternal(`/internal/v1/web-calls/${callId}/release`, { claim_id: claimId });
      await res.body?.cancel();
      if (!res.ok) this.options.logger.warn({ status: res.status, callId }, 'web call claim not released');
    } catch (err) {
      // The call ends not_connected at the end of its window all the same.
      this.options.logger.warn({ err, callId }, 'web call claim not released: service unreachable');
    }
  }

  private postInternal(path: string, body: unknown): Promise<Response> {
    return this.fetch(new URL(path, this.options.apiUrl).href, {
      method: 'POST',
      headers: { Authorization: `Bearer ${this.options.secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
    });
  }

  private async redeem(sessionToken: string): Promise<AdmissionResult> {
    let res: Response;
    try {
      res = await this.fetch(this.redeemUrl, {
        method: 'POST',
        headers: { Authorization: `Bearer ${this.options.secret}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ session_token: sessionToken }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
    } catch (err) {
      this.options.logger.error({ err }, 'session token redemption failed: service unreachable');
      return { reject: 503, reason: 'Service unavailable' };
    }
    const body = (await res.json().catch(() => ({}))) as { call_id?: unknown; script_id?: unknown; contact_id?: unknown; message?: unknown; traceparent?: unknown };
    const message = typeof body.message === 'string' ? body.message : undefined;
    switch (res.status) {
      case 201:
        if (typeof body.call_id !== 'string') {
          this.options.logger.error({ status: res.status }, 'session token redemption answered without call_id');
          return { reject: 500, reason: 'Redemption failed' };
        }
        return {
          callId: body.call_id,
          credential: 'session_token',
          ...(typeof body.script_id === 'string' ? { scriptId: body.script_id } : {}),
          ...(typeof body.contact_id === 'string' ? { contactId: body.contact_id } : {}),
          ...traceOf(body),
        };
      case 404:
        return { reject: 404, reason: message ?? 'Session token not found' };
      case 409:
        return { reject: 409, reason: message ?? 'Session token has already been used' };
      case 410:
        return { reject: 410, reason: message ?? 'Session token has expired' };
      case 400:
        return { reject: 403, reason: 'Invalid session token' };
      case 401:
        // Our own secret was refused: a deployment error, not the browser's fault.
        this.options.logger.error('session token redemption refused the media edge secret (401): check MEDIA_EDGE_SECRET');
        return { reject: 403, reason: 'Invalid session token' };
      default:
        this.options.logger.error({ status: res.status, message }, 'session token redemption failed');
        return { reject: res.status >= 500 ? 503 : 500, reason: 'Redemption failed' };
    }
  }
}

/** The call's traceparent from the service's answer, when it sent one. */
function traceOf(body: { traceparent?: unknown }): { traceparent?: string } {
  return typeof body.traceparent === 'string' ? { traceparent: body.traceparent } : {};
}
