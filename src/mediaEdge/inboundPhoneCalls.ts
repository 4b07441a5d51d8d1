/**
 * Incoming phone calls on the media edge (docs/telephony.md, "Inbound calls"). The trunk
 * agent has checked the INVITE's source and that it offers G.711; then, per INVITE:
 *
 *   RTP port and our SDP answer (nothing usable: 488, nothing recorded)
 *   ── POST /internal/v1/inbound-calls: the service takes the call, or says the SIP refusal
 *      (404 unknown number, 480 no inbound script, 486 the team at its ceiling, 433 no
 *      caller number; 503 when the service cannot be reached)
 *   ── 200 with our SDP, ACK ── the call goes to `onCall` like a browser call (engine,
 *      recorder, `answered` with this edge's task queue); the call workflow runs the script
 *
 * A caller who hangs up (CANCEL) after the service took the call ends it with an `ended`
 * event, so the call never waits for an answer that will not come.
 */
import type { Logger } from '../logging/logger.js';
import type { CallEventReporter } from './callEvents.js';
import { establishedPhoneCall, g711Codec, type PhoneCall } from './phoneCall.js';
import { g711Answer } from './rtp/g711Sdp.js';
import type { RtpSession } from './rtp/rtpSession.js';
import type { IncomingInvite, SipTrunkAgent } from './sip/trunk/sipTrunkAgent.js';

export interface InboundPhoneCallsOptions {
  /** Base URL of the API, e.g. http://127.0.0.1:3000. */
  apiUrl: string;
  /** MEDIA_EDGE_SECRET. */
  secret: string;
  /** A fresh RTP session for one call (RTP_PORT_RANGE, the inactivity limit). */
  openRtp(): Promise<RtpSession>;
  /** The address the far end sends RTP to (SDP c=, SIP_PUBLIC_ADDRESS). */
  publicAddress: string;
  reporter: Pick<CallEventReporter, 'report'>;
  /** Receives every answered call (voiceEdge.ts: engine, recorder, `answered`). */
  onCall(call: PhoneCall): void;
  logger: Logger;
  /** Tries of the service request on network errors and 5xx (default 3). */
  attempts?: number;
  fetch?: typeof fetch;
}

/** The reason phrase of each final response this module sends. */
const REASON: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  433: 'Anonymity Disallowed',
  480: 'Temporarily Unavailable',
  486: 'Busy Here',
  488: 'Not Acceptable Here',
  500: 'Server Internal Error',
  503: 'Service Unavailable',
};

type ServiceAnswer = { kind: 'taken'; callId: string; status: string } | { kind: 'refused'; sipStatus: number; detail: string };

/** Answers the trunk's INVITEs as the service decides (see the file's comment). */
export function answerInboundCalls(agent: Pick<SipTrunkAgent, 'onIncomingInvite'>, options: InboundPhoneCallsOptions): void {
  agent.onIncomingInvite((invite) => handleInvite(invite, options));
}

async function handleInvite(invite: IncomingInvite, o: InboundPhoneCallsOptions): Promise<void> {
  const log = o.logger.child({ sipCallId: invite.callId, to: invite.toNumber });
  const reject = (status: number, detail: string) => {
    log.info({ status, detail }, 'incoming call refused');
    invite.reject(status, REASON[status] ?? REASON[500]);
  };
  let rtp: RtpSession;
  try {
    rtp = await o.openRtp();
  } catch (err) {
    log.warn({ err }, 'no RTP port for an incoming call');
    return reject(503, 'no RTP port');
  }
  let handedOver = false;
  try {
    const answer = g711Answer(invite.sdp, { address: o.publicAddress, port: rtp.localPort, sessionId: Date.now() });
    if ('error' in answer) return reject(488, answer.error);
    const taken = await askService(invite, o, log);
    if (taken.kind === 'refused') return reject(taken.sipStatus, taken.detail);
    // A repeated request for a call that has ended since: nothing to answer.
    if (taken.status !== 'in-progress') return reject(480, `call ${taken.callId} is ${taken.status}`);
    const callLog = log.child({ callId: taken.callId });
    if (invite.signal.aborted) {
      await callerLeft(taken.callId, o);
      return;
    }
    rtp.setRemote(answer.remote);
    let dialog;
    try {
      dialog = await invite.answer(answer.sdp);
    } catch (err) {
      // Cancelled by the caller, or our 200 never ACKed: the call ends as the caller's hang-up.
      callLog.info({ err: (err as Error).message }, 'incoming call gone before the answer');
      await callerLeft(taken.callId, o);
      return;
    }
    o.onCall(establishedPhoneCall(taken.callId, rtp, dialog, g711Codec(answer.remote.payloadType), callLog));
    handedOver = true;
    callLog.info({ from: invite.fromNumber, codec: g711Codec(answer.remote.payloadType) }, 'incoming call answered');
  } finally {
    if (!handedOver) rtp.close();
  }
}

function callerLeft(callId: string, o: InboundPhoneCallsOptions): Promise<unknown> {
  return o.reporter.report(callId, { type: 'ended', reason: 'User Hangup', event_id: `media-edge-ended-${callId}` });
}

/** POST /internal/v1/inbound-calls, tried again on network errors and 5xx (the Call-ID makes a repeat the same call). */
async function askService(invite: IncomingInvite, o: InboundPhoneCallsOptions, log: Logger): Promise<ServiceAnswer> {
  const doFetch = o.fetch ?? fetch;
  const attempts = o.attempts ?? 3;
  let detail = '';
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const res = await doFetch(`${o.apiUrl.replace(/\/$/, '')}/internal/v1/inbound-calls`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${o.secret}` },
        body: JSON.stringify({ to_number: invite.toNumber, from_number: invite.fromNumber, sip_call_id: invite.callId }),
        signal: AbortSignal.timeout(5_000),
      });
      const body = (await res.json().catch(() => ({}))) as { call_id?: string; status?: string; sip_status?: unknown; message?: string };
      if (res.ok && typeof body.call_id === 'string') return { kind: 'taken', callId: body.call_id, status: String(body.status) };
      detail = `${res.status} ${body.message ?? ''}`.trim();
      if (typeof body.sip_status === 'number') return { kind: 'refused', sipStatus: body.sip_status, detail };
      // Rate-limited: the caller may try again later, like a service that cannot be reached.
      if (res.status === 429) return { kind: 'refused', sipStatus: 503, detail };
      if (res.status < 500) {
        // The edge's own mistake (a wrong secret, a malformed request): said, not retried.
        log.error({ status: res.status, detail }, 'the service refused the incoming call request');
        return { kind: 'refused', sipStatus: res.status === 400 ? 400 : 500, detail };
      }
    } catch (err) {
      detail = (err as Error).message;
    }
    if (attempt < attempts) await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
  }
  log.error({ detail }, 'the service could not be asked about an incoming call');
  return { kind: 'refused', sipStatus: 503, detail };
}
