/**
 * Outbound phone calls on the media edge (docs/telephony.md, "Outbound calls"): the
 * `dialPhoneCall` activity of the edges' shared dial queue. The edge that takes a call's dial
 * holds the call from then on:
 *
 *   RTP port ── dial claim (the service: one per call, ever) ── INVITE through the trunk
 *     180/183 → `ringing` event (naming this edge's queue) · 200 → the call is handed to `onCall` like a browser call
 *     (engine, recorder, `answered` with this edge's queue) · a refusal → the call's end
 *     (src/domain/sipOutcomes.ts) · the ring timeout → CANCEL → rang-out
 *
 * With `screen` the answer is screened before the dial settles (docs/telephony.md, "Voicemail
 * detection"): a CallScreener hears the callee from the answer on; a person → answered (the
 * script runs); a machine → the voicemail message after its beep or greeting, BYE, and the
 * dial ends `voicemail` with the detection and the message for the workflow to write.
 *
 * cancel-call reaches the dial on this edge's own queue (`cancelDial`), not only as the dial
 * activity's cancellation, which Temporal delivers with the activity's next heartbeat (up to
 * 8 s later): ringing, CANCEL goes out at once; while the answer is screened, the screening
 * stops at once (no message, or the rest of it cut), BYE. The dial ends `cancelled`.
 *
 * One call, one INVITE: the INVITE's Call-ID is derived from the call id, a dial already under
 * way on this edge is joined rather than repeated, and an attempt whose claim another edge
 * holds (or that this edge took but no longer knows of) never dials: it reports the call lost.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { NOT_FOUND_FAILURE, type DialPhoneCallInput, type DialPhoneCallResult, type MediaEdgeDialActivities } from '../../workflows/contracts.js';
import { RING_TIMEOUT_END, sipCallIdOf, sipDialEnd } from '../domain/sipOutcomes.js';
import type { Logger } from '../logging/logger.js';
import type { CallEventReporter } from './callEvents.js';
import { CallScreener, ScreeningCancelled, type CallScreening, type SayLine, type VoicemailDropSettings } from './conversation/voicemailDrop.js';
import type { LiveCalls } from './liveCalls.js';
import type { ChannelCloseReason } from './media/channel.js';
import { establishedPhoneCall, type PhoneCall } from './phoneCall.js';
import { g711Offer, parseG711Answer } from './rtp/g711Sdp.js';
import type { RtpSession } from './rtp/rtpSession.js';
import type { OutboundInvite, OutboundInviteResult, SipDialog } from './sip/trunk/sipTrunkAgent.js';

/** Heartbeat this often while the call rings: well inside the workflow's dial heartbeat timeout. */
export const DIAL_HEARTBEAT_MS = 1_000;
/** How long the answer waits for the `ringing` report before it, so the service never sees them out of order. */
const RINGING_REPORT_WAIT_MS = 2_000;

/** An answered phone call, as the edge's `onCall` takes it (phoneCall.ts). */
export type { PhoneCall };

export interface PhoneDialerOptions {
  trunk: { invite(request: OutboundInvite): Promise<OutboundInviteResult> };
  /** A fresh RTP session for one call (RTP_PORT_RANGE, the inactivity limit). */
  openRtp(): Promise<RtpSession>;
  /** The address the far end sends RTP to (SDP c=, SIP_PUBLIC_ADDRESS). */
  publicAddress: string;
  reporter: Pick<CallEventReporter, 'report' | 'claimDial'>;
  calls: LiveCalls;
  /** This edge's own task queue: the call's speech runs there once answered. */
  taskQueue: string;
  /** Receives every answered call (voiceEdge.ts: engine, recorder, `answered`). */
  onCall(call: PhoneCall): void;
  logger: Logger;
  /** This edge's claim id (default: a fresh UUID per dialer, i.e. per edge process). */
  claimId?: string;
  /** The screening's timings and thresholds (default DEFAULT_VOICEMAIL_DROP_SETTINGS; tests shorten the waits). */
  screening?: Partial<VoicemailDropSettings>;
  /** How often the dial heartbeats (default DIAL_HEARTBEAT_MS; a test lengthens it to show that cancel-call does not wait for a heartbeat). */
  heartbeatMs?: number;
}

type DialEnd = Extract<DialPhoneCallResult, { outcome: 'ended' }>;

/** The dial activity of a SIP-enabled edge, and the dials it has under way. */
export class PhoneDialer {
  private readonly claimId: string;
  /** Dials under way on this edge, by call id: a retried activity joins its dial. */
  private readonly dialling = new Map<string, Promise<DialPhoneCallResult>>();
  /** How recent dials on this edge ended, for a retry that comes after its dial settled. */
  private readonly settled = new Map<string, DialPhoneCallResult>();
  /**
   * Calls this edge process sent an INVITE for. The claim id is the process's own, so a claim
   * answered `first: false` (ours already, its first answer lost) may still dial if we never did.
   */
  private readonly invited = new Set<string>();
  /** The cancellation of each dial under way (cancel-call: CANCEL, or BYE while screening). */
  private readonly cancels = new Map<string, AbortController>();

  constructor(private readonly options: PhoneDialerOptions) {
    this.claimId = options.claimId ?? randomUUID();
  }

  activities(): MediaEdgeDialActivities {
    return { dialPhoneCall: (input) => this.dialPhoneCall(input) };
  }

  /**
   * cancel-call while this edge dials the call (the edge's `cancelDial` activity, which the call
   * workflow runs on this edge's own queue: the dial activity's cancellation would get here only
   * with its next heartbeat, up to 8 s later). Ringing: CANCEL now (once a provisional response
   * has come, RFC 3261 §9.1), the dial ends cancelled. Screening the answer: no voicemail
   * message, or the rest of one cut, BYE, the dial ends cancelled. A call no longer being
   * dialled (taken for a person meanwhile) is hung up; one this edge does not hold, nothing.
   * Resolves once the dial has ended, so a second call (or a retried activity) finds nothing to do.
   */
  async cancelDial(callId: string): Promise<void> {
    const dial = this.dialling.get(callId);
    const cancel = this.cancels.get(callId);
    if (dial && cancel) {
      cancel.abort(new Error('cancel-call'));
      await dial.catch(() => undefined);
      return;
    }
    await this.options.calls.get(callId)?.hangUp();
  }

  /**
   * The service refused one of the call's events because the call has ended as `endedAs`.
   * When cancel-call ended it while this edge still dials it, the dial ends as cancelDial ends
   * it (CANCEL while it rings, BYE while the answer is screened), so its end says cancelled,
   * not that the edge hung up: the workflow's own cancelDial may come later than the refusal
   * (a cancel before the phone rang finds the `ringing` report refused, and the workflow never
   * learns this edge's queue). Whether it did; if not, the caller hangs up as before.
   */
  cancelledByService(callId: string, endedAs: string | undefined): boolean {
    if (endedAs !== 'cancelled' || !this.cancels.has(callId)) return false;
    void this.cancelDial(callId);
    return true;
  }

  /** Dials under way now. */
  get active(): number {
    return this.dialling.size;
  }

  private async dialPhoneCall(input: DialPhoneCallInput): Promise<DialPhoneCallResult> {
    const ctx = Context.current();
    const heartbeat = setInterval(() => ctx.heartbeat(), this.options.heartbeatMs ?? DIAL_HEARTBEAT_MS);
    ctx.heartbeat();
    const onCancel = () => this.cancels.get(input.callId)?.abort(ctx.cancellationSignal.reason);
    ctx.cancellationSignal.addEventListener('abort', onCancel);
    try {
      let dial = this.dialling.get(input.callId);
      if (!dial) {
        const known = this.settled.get(input.callId) ?? (this.options.calls.get(input.callId) ? ({ outcome: 'answered', mediaTaskQueue: this.options.taskQueue } as const) : undefined);
        if (known) return known;
        const abort = new AbortController();
        this.cancels.set(input.callId, abort);
        dial = this.dial(input, abort.signal).finally(() => {
          this.dialling.delete(input.callId);
          this.cancels.delete(input.callId);
        });
        this.dialling.set(input.callId, dial);
      }
      if (ctx.cancellationSignal.aborted) onCancel();
      const result = await dial;
      // A voicemail message the cancel cut is still reported: the workflow writes what the machine heard.
      if (ctx.cancellationSignal.aborted && !(result.outcome === 'ended' && result.voicemail)) throw ctx.cancellationSignal.reason instanceof CancelledFailure ? ctx.cancellationSignal.reason : new CancelledFailure('dial cancelled');
      return result;
    } finally {
      clearInterval(heartbeat);
      ctx.cancellationSignal.removeEventListener('abort', onCancel);
    }
  }

  /** One dial, from the RTP port to the answer or the end; its result is remembered for retries. */
  private async dial(input: DialPhoneCallInput, cancelled: AbortSignal): Promise<DialPhoneCallResult> {
    const result = await this.dialOnce(input, cancelled);
    this.settled.set(input.callId, result);
    // Keep only recent outcomes: enough for a retry on its way.
    if (this.settled.size > 1000) this.settled.delete(this.settled.keys().next().value as string);
    return result;
  }

  private async dialOnce(input: DialPhoneCallInput, cancelled: AbortSignal): Promise<DialPhoneCallResult> {
    const { callId } = input;
    const log = this.options.logger.child({ callId, to: input.to });
    // The port first: a dial that cannot have media fails before it is claimed (and may be retried).
    const rtp = await this.options.openRtp();
    let handedOver = false;
    try {
      const claim = await this.claim(callId);
      if (claim) return claim;
      if (cancelled.aborted) return { outcome: 'ended', endReason: 'cancelled' };

      const ring = new AbortController();
      let why: 'cancel' | 'ring_timeout' | undefined;
      const onCancelled = () => {
        why ??= 'cancel';
        ring.abort();
      };
      cancelled.addEventListener('abort', onCancelled);
      const ringTimer = setTimeout(() => {
        why ??= 'ring_timeout';
        ring.abort();
      }, input.ringTimeoutMs);
      let ringingReport: Promise<unknown> | undefined;
      let answer: OutboundInviteResult;
      try {
        log.info('dialling through the SIP trunk');
        this.invited.add(callId);
        if (this.invited.size > 10_000) this.invited.delete(this.invited.values().next().value as string);
        answer = await this.options.trunk.invite({
          callId: sipCallIdOf(callId),
          fromNumber: input.from,
          toNumber: input.to,
          sdp: g711Offer({ address: this.options.publicAddress, port: rtp.localPort, sessionId: Date.now() }),
          signal: ring.signal,
          onProgress: (status) => {
            if ((status === 180 || status === 183) && !ringingReport) {
              // It names this edge's queue: cancel-call comes there at once (cancelDial).
              ringingReport = this.options.reporter
                .report(callId, { type: 'ringing', event_id: `media-edge-ringing-${callId}`, media_task_queue: this.options.taskQueue })
                .then(({ endedAs }) => this.cancelledByService(callId, endedAs));
            }
          },
        });
      } finally {
        clearTimeout(ringTimer);
        cancelled.removeEventListener('abort', onCancelled);
      }

      if (answer.kind === 'cancelled') {
        log.info({ why }, 'dial cancelled (CANCEL sent)');
        return why === 'ring_timeout' ? { outcome: 'ended', endReason: RING_TIMEOUT_END.endReason } : { outcome: 'ended', endReason: 'cancelled' };
      }
      if (answer.kind === 'failed') {
        // A 487 we did not ask for (or one that raced our CANCEL) ends the call as our abort said.
        if (answer.status === 487 && why === 'ring_timeout') return { outcome: 'ended', endReason: RING_TIMEOUT_END.endReason };
        if (answer.status === 487 && why === 'cancel') return { outcome: 'ended', endReason: 'cancelled' };
        const end = sipDialEnd(answer.status, answer.reason);
        log.info({ status: answer.status, reason: answer.reason, endReason: end.endReason }, 'dial refused');
        return { outcome: 'ended', endReason: end.endReason, ...(end.note ? { note: end.note } : {}) };
      }

      // Answered (and ACKed). An answer that crossed our CANCEL or the ring timeout is hung up at once.
      const dialog = answer.dialog;
      if (why) {
        log.info({ why }, 'answered after the dial was given up: BYE');
        await dialog.bye().catch(() => undefined);
        return why === 'ring_timeout' ? { outcome: 'ended', endReason: RING_TIMEOUT_END.endReason } : { outcome: 'ended', endReason: 'cancelled' };
      }
      const remote = parseG711Answer(answer.sdp);
      if ('error' in remote) {
        await dialog.bye().catch(() => undefined);
        return { outcome: 'ended', endReason: 'trunk_error', note: `The callee's answer had no usable G.711 audio (${remote.error}); the edge hung up.` };
      }
      rtp.setRemote(remote);
      // Hears the callee from the answer on, before anything is said.
      const screener = input.screen ? new CallScreener(rtp.channel, this.options.screening) : undefined;
      await Promise.race([ringingReport, new Promise((resolve) => setTimeout(resolve, RINGING_REPORT_WAIT_MS))]);
      const call = this.holdCall(callId, rtp, dialog, remote.payloadType === 8 ? 'PCMA' : 'PCMU', log);
      handedOver = true;
      log.info({ codec: remote.payloadType === 8 ? 'PCMA' : 'PCMU' }, 'callee answered');
      if (screener) {
        const end = await this.screen(input, call, screener, cancelled, log);
        if (end) return end;
      }
      return { outcome: 'answered', mediaTaskQueue: this.options.taskQueue };
    } finally {
      if (!handedOver) rtp.close();
    }
  }

  /**
   * Claims the dial; undefined when this request may dial, else how the call ends without a
   * dial of ours. Throws (the activity is retried) when the service cannot be reached.
   */
  private async claim(callId: string): Promise<DialEnd | undefined> {
    const claim = await this.options.reporter.claimDial(callId, { claimId: this.claimId, mediaTaskQueue: this.options.taskQueue });
    if (claim.kind === 'unreachable') throw ApplicationFailure.retryable(`the service did not answer the dial claim: ${claim.detail}`, 'DialClaimUnreachable');
    if (claim.kind === 'claimed') {
      // A repeat of our own claim whose first answer was lost is still the one dial.
      if (claim.first || !this.invited.has(callId)) return undefined;
      return { outcome: 'ended', endReason: 'media_edge_lost', note: 'The dial was retried on the media edge that had claimed it, which no longer knew of the call: it was not dialled again.' };
    }
    if (claim.status === 404) throw ApplicationFailure.nonRetryable(`call ${callId}: ${claim.message}`, NOT_FOUND_FAILURE);
    if (claim.status === 410) return { outcome: 'ended', endReason: 'cancelled' };
    if (claim.heldBy) {
      return {
        outcome: 'ended',
        endReason: 'media_edge_lost',
        note: `The dial was retried after the media edge that dialled the call (${claim.heldBy}) stopped answering: the call was not dialled again.`,
      };
    }
    throw ApplicationFailure.nonRetryable(`the service refused the dial claim: ${claim.status} ${claim.message}`, 'DialClaimRefused');
  }

  /** The answered call, held by this edge: the far end's BYE and lost RTP end it; the agent's hang-up sends BYE. */
  private holdCall(callId: string, rtp: RtpSession, dialog: SipDialog, codec: string, log: Logger): PhoneCall {
    // The same call as an inbound one (phoneCall.ts, shared with inboundPhoneCalls.ts).
    const call = establishedPhoneCall(callId, rtp, dialog, codec, log);
    this.options.onCall(call);
    return call;
  }

  /**
   * The screening of an answered call: undefined for a person (the script runs), else how the
   * dial ends. A machine hears the message through the call's conversation engine (so the
   * recording has it), then BYE. cancel-call meanwhile hangs up: cancelled.
   */
  private async screen(input: DialPhoneCallInput, call: PhoneCall, screener: CallScreener, cancelled: AbortSignal, log: Logger): Promise<DialEnd | undefined> {
    const say: SayLine = async (text, signal) => {
      const live = this.options.calls.get(input.callId);
      if (!live) throw new Error('the call is no longer held by this edge');
      const { playedMs } = await live.conversation.speak(text, { bargeIn: false, signal: signal ?? new AbortController().signal });
      return { playedMs };
    };
    let screening: CallScreening;
    try {
      screening = await screener.finish({ say, ...(input.voicemailMessage ? { voicemailMessage: input.voicemailMessage } : {}), signal: cancelled });
    } catch (err) {
      await call.hangUp();
      if (err instanceof ScreeningCancelled) {
        log.info({ messagePlayedMs: err.said?.playedMs }, 'cancel-call during the screening: BYE');
        return endOfCancelledScreening(err);
      }
      if (cancelled.aborted) return { outcome: 'ended', endReason: 'cancelled' };
      // The message could not be said (the speech engines failed): the machine's call still ends voicemail.
      log.warn({ err }, 'the voicemail message failed');
      const why = err instanceof Error ? err.message : String(err);
      return { outcome: 'ended', endReason: 'voicemail', note: `An answering machine took the call; the voicemail message could not be said (${why}).` };
    } finally {
      screener.stop();
    }
    log.info({ outcome: screening.outcome, detection: screening.detection, cue: screening.message?.cue }, 'answer screened');
    const end = endOfScreening(screening);
    if (end?.endReason === 'voicemail') await call.hangUp();
    return end;
  }
}

/** The end of a call whose channel closed during the screening, before a machine was heard. */
const CLOSED_BEFORE_VERDICT: Record<ChannelCloseReason, DialEnd> = {
  remote_hangup: { outcome: 'ended', endReason: 'User Hangup' },
  media_lost: { outcome: 'ended', endReason: 'connection_lost', note: "The callee's audio stopped while the answer was screened for an answering machine." },
  local_hangup: { outcome: 'ended', endReason: 'media_edge_lost', note: 'The media edge hung up while the answer was screened for an answering machine (the service did not take the call, or the edge was shutting down).' },
};

/**
 * How a screened call's dial ends: undefined for a person (or no verdict), the script runs; a
 * machine → voicemail with the detection (and the message, when any of it was said), even when
 * the machine hung up during the message; the channel closed before a verdict → the close's end.
 */
export function endOfScreening(screening: CallScreening): DialEnd | undefined {
  const { outcome, detection, message } = screening;
  if (outcome === 'human') return undefined;
  if (detection?.verdict === 'machine') {
    const said = message && message.playedMs > 0 ? message : undefined;
    const heard = heardOf(detection);
    const left = said
      ? ` The voicemail message was said ${said.startedAtMs} ms after the answer (${CUE_WORDS[said.cue]})${outcome === 'channel_closed' ? ', and the machine hung up before its end' : ''}.`
      : outcome === 'channel_closed'
        ? ' The machine hung up before the message.'
        : ' The script has no voicemail message: the agent hung up.';
    return {
      outcome: 'ended',
      endReason: 'voicemail',
      note: `An answering machine took the call (${heard}; decided ${detection.decidedAtMs} ms after the answer).${left}`,
      voicemail: { detection, ...(said ? { message: said } : {}) },
    };
  }
  return CLOSED_BEFORE_VERDICT[screening.closeReason ?? 'remote_hangup'];
}

/**
 * How a dial ends when cancel-call stopped its screening: cancelled (docs/telephony.md,
 * "Voicemail detection"). A message the machine heard part of is still the call's last line:
 * its turn and a note of the detection and the cut go with the dial for the workflow to write.
 */
export function endOfCancelledScreening(cancelled: ScreeningCancelled): DialEnd {
  const { detection, said: message } = cancelled;
  if (!detection || detection.verdict !== 'machine' || !message || message.playedMs <= 0) return { outcome: 'ended', endReason: 'cancelled' };
  return {
    outcome: 'ended',
    endReason: 'cancelled',
    note:
      `An answering machine took the call (${heardOf(detection)}; decided ${detection.decidedAtMs} ms after the answer). ` +
      `The voicemail message began ${message.startedAtMs} ms after the answer (${CUE_WORDS[message.cue]}); cancel-call cut it ${message.playedMs} ms in, and the agent hung up.`,
    voicemail: { detection, message },
  };
}

function heardOf(detection: NonNullable<CallScreening['detection']>): string {
  return [
    `reason ${detection.reason}`,
    `${detection.greetingMs} ms of greeting`,
    `${detection.words} word${detection.words === 1 ? '' : 's'}`,
    detection.beepAt !== undefined ? `a beep at ${detection.beepAt} ms` : 'no beep before the verdict',
  ].join(', ');
}

const CUE_WORDS: Record<string, string> = {
  beep: 'after the beep',
  greeting_end: 'after the greeting ended',
  max_wait: 'at the longest wait for a beep',
};
