/**
 * A transfer step on the media edge (docs/scripts.md "Transfer", docs/telephony.md "Transfer to
 * a person"): the edge's side of the `transferCaller` activity, on the edge that holds the call.
 *
 *   refer  ── REFER (RFC 3515) in the caller's dialog ── 2xx, then a NOTIFY whose sipfrag is 2xx
 *             (or the caller's BYE, or no final NOTIFY within the wait) → transferred: BYE
 *          └─ a non-2xx answer, or a NOTIFY with a final failure → the bridge below
 *   bridge ── its own RTP port, INVITE to the person (E.164 through the trunk, a SIP URI at its
 *             host) ── answered → the announcement to the person → the two legs joined (each
 *             leg's 16 kHz frames queued on the other, so each side hears the other through
 *             the edge, G.711 at 8 kHz on the wire) until either hangs up → BYE to the other
 *          └─ busy, no answer within the ring time, failed, or the person hangs up during the
 *             announcement → not answered: the script goes on at on_failure
 *
 * While joined, the caller's hang-up is not the caller's end of the call (`handedOver`): the
 * activity's answer ends it completed / transferred. The recording goes on (the caller's leg
 * carries the person's voice out), and both legs are transcribed: the caller's lines as the
 * user's, the person's as the agent's.
 */
import type { Logger } from '../logging/logger.js';
import type { BridgedTurn, TransferCallerInput, TransferCallerResult } from '../../workflows/transferContracts.js';
import type { ConversationEngine } from './conversation/engine.js';
import type { LiveCall } from './liveCalls.js';
import type { ChannelCloseReason, MediaChannel } from './media/channel.js';
import { establishedPhoneCall, g711Codec } from './phoneCall.js';
import { g711Offer, parseG711Answer } from './rtp/g711Sdp.js';
import type { RtpSession } from './rtp/rtpSession.js';
import type { OutboundInvite, OutboundInviteResult, SipDialog } from './sip/trunk/sipTrunkAgent.js';

/** How long the person's phone rings before the transfer gives up (CANCEL), unless the step says (ring_timeout_seconds). */
export const TRANSFER_RING_TIMEOUT_MS = 30_000;
/**
 * After a 2xx to REFER, how long the edge waits for the NOTIFY that says how the transfer went.
 * Not a step option: it is the far end's protocol timing, not the person's (docs/scripts.md, "Transfer").
 */
export const REFER_NOTIFY_WAIT_MS = 32_000;
/** How long each leg's listener waits for speech before it listens again (it is restarted until the bridge ends). */
const BRIDGE_LISTEN_MS = 60_000;

/** The caller's media ended before the person was joined: the call ends as the caller's channel says. */
export class CallerLeftError extends Error {
  constructor(readonly reason: ChannelCloseReason) {
    super(`the caller's media ended before the transfer (${reason})`);
    this.name = 'CallerLeftError';
  }
}

export interface CallTransferOptions {
  /** The SIP trunk's user agent; without one a bridge cannot dial (the transfer is not answered). */
  trunk?: { invite(request: OutboundInvite): Promise<OutboundInviteResult> };
  /** A fresh RTP session for the person's leg. */
  openRtp?(): Promise<RtpSession>;
  /** The address the person's side sends RTP to (SDP c=). */
  publicAddress?: string;
  /** A conversation engine over the person's leg (telephone band): says the announcement, hears the person. */
  engineFor(channel: MediaChannel, log: Logger): ConversationEngine;
  ringTimeoutMs?: number;
  referNotifyWaitMs?: number;
  logger: Logger;
}

/** A call the transfer works on: the edge's live call, with the dialog of a phone call. */
export type TransferableCall = LiveCall & { sipDialog?: SipDialog };

/** How the caller's channel ended, once it has. */
interface CallerState {
  ended?: ChannelCloseReason;
}

const delay = (ms: number) => new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ms).unref());
const abortedBy = (signal: AbortSignal) =>
  new Promise<'aborted'>((resolve) => (signal.aborted ? resolve('aborted') : signal.addEventListener('abort', () => resolve('aborted'), { once: true })));

/** The user part of a SIP URI (for From/To display), or the number itself. */
const userOf = (to: string): string => (/^sips?:/i.test(to) ? (to.replace(/^sips?:/i, '').split(/[@;]/)[0] ?? to) : to);

export class CallTransfers {
  /**
   * Transfers under way, by call and step. The activity is never retried (workflows/mediaConversation.ts),
   * so the person is dialled once per transfer step; a second delivery of the same task joins the first.
   */
  private readonly underWay = new Map<string, Promise<TransferCallerResult>>();

  constructor(private readonly options: CallTransferOptions) {}

  /** The trunk the bridge dials through (the edge starts its trunk agent after its worker). */
  useTrunk(trunk: Required<Pick<CallTransferOptions, 'trunk' | 'openRtp' | 'publicAddress'>>): void {
    Object.assign(this.options, trunk);
  }

  transfer(call: TransferableCall, input: TransferCallerInput, signal: AbortSignal): Promise<TransferCallerResult> {
    const key = `${input.callId}\n${input.stepId}`;
    let running = this.underWay.get(key);
    if (!running) {
      running = this.run(call, input, signal).finally(() => this.underWay.delete(key));
      this.underWay.set(key, running);
    }
    return running;
  }

  private async run(call: TransferableCall, input: TransferCallerInput, signal: AbortSignal): Promise<TransferCallerResult> {
    const caller: CallerState = {};
    void call.channel.closed.then((reason) => (caller.ended = reason));
    const log = this.options.logger.child({ callId: input.callId, stepId: input.stepId, to: input.to });
    let referRefused: number | undefined;
    if (input.mode === 'refer' && call.sipDialog) {
      const refer = await this.refer(call, call.sipDialog, input.to, signal, log);
      if (refer.accepted) return { outcome: 'transferred', mode: 'refer' };
      referRefused = refer.status;
      log.info({ status: refer.status }, 'REFER refused: bridging instead');
    }
    return this.bridge(call, caller, input, signal, referRefused, log);
  }

  /** A blind transfer; accepted per the rule in the file's header. */
  private async refer(call: TransferableCall, dialog: SipDialog, to: string, signal: AbortSignal, log: Logger): Promise<{ accepted: true } | { accepted: false; status: number }> {
    let finalNotify!: (status: number) => void;
    const notified = new Promise<number>((resolve) => (finalNotify = resolve));
    // Subscribed before the REFER goes: the first NOTIFY may overtake the 202.
    const stop = dialog.onNotify?.((notify) => {
      const status = /^SIP\/2\.0\s+(\d{3})/.exec(notify.body.trim())?.[1];
      if (status && Number(status) >= 200) finalNotify(Number(status));
    });
    try {
      log.info('transfer: REFER');
      const answer = await dialog.refer(to);
      if (!answer.accepted) return { accepted: false, status: answer.status };
      // From here the caller's end is the transfer's, not a hang-up.
      call.handedOver = true;
      const settled = await Promise.race([
        notified,
        call.channel.closed.then(() => 'bye' as const),
        delay(this.options.referNotifyWaitMs ?? REFER_NOTIFY_WAIT_MS),
        abortedBy(signal),
      ]);
      if (typeof settled === 'number' && (settled < 200 || settled >= 300)) {
        call.handedOver = false;
        return { accepted: false, status: settled };
      }
      log.info({ settled }, 'transfer: REFER accepted; the edge leaves the call');
      await call.hangUp();
      return { accepted: true };
    } finally {
      stop?.();
    }
  }

  private async bridge(call: TransferableCall, caller: CallerState, input: TransferCallerInput, signal: AbortSignal, referRefused: number | undefined, log: Logger): Promise<TransferCallerResult> {
    const { trunk, openRtp, publicAddress } = this.options;
    if (!trunk || !openRtp || !publicAddress) return { outcome: 'not_answered', reason: 'this media edge has no SIP trunk to dial the person through' };
    const rtp = await openRtp();
    let rtpOwned = false;
    try {
      // 1. Dial the person; the caller's hang-up, the workflow's cancellation or the ring time CANCEL it.
      const ring = new AbortController();
      let why: 'caller' | 'ring_timeout' | 'cancelled' | undefined;
      const giveUp = (reason: typeof why) => {
        why ??= reason;
        ring.abort();
      };
      // The step's own ring time first; else the edge's (tests shorten it); else 30 s.
      const ringTimeoutMs = input.ringTimeoutMs ?? this.options.ringTimeoutMs ?? TRANSFER_RING_TIMEOUT_MS;
      const ringTimer = setTimeout(() => giveUp('ring_timeout'), ringTimeoutMs);
      void call.channel.closed.then(() => giveUp('caller'));
      const onAbort = () => giveUp('cancelled');
      signal.addEventListener('abort', onAbort, { once: true });
      let answer: OutboundInviteResult;
      try {
        log.info('transfer: dialling the person');
        const sipUri = /^sips?:/i.test(input.to);
        answer = await trunk.invite({
          callId: `transfer-${input.stepId}-${input.callId}@voice-agent`,
          fromNumber: input.from ?? 'anonymous',
          toNumber: userOf(input.to),
          ...(sipUri ? { toUri: input.to } : {}),
          sdp: g711Offer({ address: publicAddress, port: rtp.localPort, sessionId: Date.now() }),
          signal: ring.signal,
        });
      } finally {
        clearTimeout(ringTimer);
        signal.removeEventListener('abort', onAbort);
      }
      if (answer.kind === 'answered' && why) {
        await answer.dialog.bye().catch(() => undefined);
      }
      if (why === 'caller') throw new CallerLeftError(caller.ended ?? 'remote_hangup');
      if (why === 'cancelled') throw signal.reason instanceof Error ? signal.reason : new Error('transfer cancelled');
      if (answer.kind === 'cancelled' || why === 'ring_timeout') return { outcome: 'not_answered', reason: `the person did not answer within ${Math.round(ringTimeoutMs / 1000)} s`, status: 408 };
      if (answer.kind === 'failed') {
        const reason = answer.status === 0 ? `the person could not be dialled (${answer.reason})` : `the person's phone answered ${answer.reason}`;
        return { outcome: 'not_answered', reason, status: answer.status || undefined };
      }
      const remote = parseG711Answer(answer.sdp);
      if ('error' in remote) {
        await answer.dialog.bye().catch(() => undefined);
        return { outcome: 'not_answered', reason: `the person's phone answered without usable G.711 audio (${remote.error})` };
      }
      rtp.setRemote(remote);
      const person = establishedPhoneCall(`${input.callId}/transfer`, rtp, answer.dialog, g711Codec(remote.payloadType), log);
      rtpOwned = true;
      return await this.join(call, caller, person, input, signal, referRefused, log);
    } finally {
      if (!rtpOwned) rtp.close();
    }
  }

  /** The person answered: the announcement, then the legs joined until either side hangs up. */
  private async join(
    call: TransferableCall,
    caller: CallerState,
    person: ReturnType<typeof establishedPhoneCall>,
    input: TransferCallerInput,
    signal: AbortSignal,
    referRefused: number | undefined,
    log: Logger,
  ): Promise<TransferCallerResult> {
    const engine = this.options.engineFor(person.channel, log);
    const listening = new AbortController();
    const unjoin: Array<() => void> = [];
    try {
      if (input.announcement) {
        log.info('transfer: the announcement to the person');
        const said = await Promise.race([
          engine.speak(input.announcement, { signal }).then(() => 'said' as const, () => 'person_left' as const),
          call.channel.closed.then(() => 'caller_left' as const),
        ]);
        if (said === 'caller_left') {
          await person.hangUp();
          throw new CallerLeftError(caller.ended ?? 'remote_hangup');
        }
        if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('transfer cancelled');
        if (said === 'person_left') return { outcome: 'not_answered', reason: 'the person hung up during the announcement' };
      }
      if (caller.ended) {
        await person.hangUp();
        throw new CallerLeftError(caller.ended);
      }
      // Joined: from here either side's hang-up ends the transfer, not the call's script.
      call.handedOver = true;
      unjoin.push(
        call.channel.onInbound((frame) => person.channel.enqueue(frame)),
        person.channel.onInbound((frame) => call.channel.enqueue(frame)),
      );
      log.info('transfer: the legs are joined');
      const turns: Array<BridgedTurn & { at: number }> = [];
      const transcribe = async (role: BridgedTurn['role'], listen: (signal: AbortSignal) => Promise<{ kind: string; text?: string; speechEndedAt?: number }>) => {
        while (!listening.signal.aborted) {
          const heard = await listen(listening.signal).catch((err: unknown) => {
            if (!listening.signal.aborted) log.debug({ err, role }, 'transfer: a leg stopped being transcribed');
            return undefined;
          });
          if (!heard) return;
          log.debug({ role, kind: heard.kind, text: heard.text }, 'transfer: heard on a bridged leg');
          if (heard.kind === 'utterance' && heard.text?.trim()) turns.push({ role, text: heard.text.trim(), at: heard.speechEndedAt ?? Date.now() });
        }
      };
      const transcribing = Promise.all([
        call.conversation.listen ? transcribe('user', (s) => call.conversation.listen!({ timeoutMs: BRIDGE_LISTEN_MS, signal: s })) : undefined,
        transcribe('agent', (s) => engine.listen({ timeoutMs: BRIDGE_LISTEN_MS, signal: s })),
      ]);
      const ended = await Promise.race([call.channel.closed.then(() => 'caller' as const), person.channel.closed.then(() => 'person' as const), abortedBy(signal)]);
      log.info({ ended }, 'transfer: the bridge ended');
      listening.abort();
      if (ended === 'caller') await person.hangUp();
      else await call.hangUp();
      await transcribing;
      turns.sort((a, b) => a.at - b.at);
      if (ended === 'aborted') throw signal.reason instanceof Error ? signal.reason : new Error('transfer cancelled');
      return {
        outcome: 'transferred',
        mode: 'bridge',
        ...(referRefused !== undefined ? { referRefused } : {}),
        endedBy: ended,
        turns: turns.map(({ role, text }) => ({ role, text })),
      };
    } finally {
      listening.abort();
      for (const off of unjoin) off();
      engine.close();
      // A person whose leg is still up when the transfer stops (cancelled, the caller gone) is hung up.
      void person.hangUp();
    }
  }
}
