/**
 * The calls whose media this edge instance holds right now. Activities find their call
 * here by id; a call that is not here (the edge restarted, the call ended) has no media.
 */
import type { AnswerHint, AskCallerResult, EdgeSystemNotes, SpeakToCallerResult } from '../../workflows/contracts.js';
import type { SentenceSource, SpokenSentences } from './conversation/engine.js';
import type { ChannelCloseReason, MediaChannel } from './media/channel.js';
import type { SipDialog } from './sip/trunk/sipTrunkAgent.js';
import { liveCallSets } from '../metrics/edgeMetrics.js';

/** What the activities need of a call's conversation engine. */
export interface CallConversation {
  speak(text: string, opts: { bargeIn: boolean; signal: AbortSignal }): Promise<SpeakToCallerResult>;
  ask(prompt: string, hint: AnswerHint, opts: { noSpeechTimeoutMs: number; signal: AbortSignal }): Promise<AskCallerResult>;
  /**
   * The caller's next utterance, without a prompt (a bridged transfer transcribes the caller with
   * it). `converseTurn`: the caller's turn in a model conversation, heard with the converse
   * hangover (ENDPOINTER_CONVERSE_END_SILENCE_MS) and the recogniser's low-latency decoding.
   * `noSpeechTimerAfter`: listening begins while the agent speaks; `timeoutMs` counts once it settles.
   * `onPause`: what was recognised so far, each time the caller pauses inside the answer.
   */
  listen?(opts: { timeoutMs: number; signal: AbortSignal; converseTurn?: boolean; noSpeechTimerAfter?: Promise<unknown>; onPause?: (textSoFar: string) => void }): Promise<AskCallerResult & { speechEndedAt?: number }>;
  /** Speaks sentences as they are written (a converse step's model answer); absent: the call cannot converse. */
  speakSentences?(source: SentenceSource, opts: { signal: AbortSignal; playing?: (said: () => string) => void }): Promise<SpokenSentences & EdgeSystemNotes>;
}

export interface LiveCall {
  callId: string;
  channel: MediaChannel;
  conversation: CallConversation;
  /** The agent ends the call (BYE); resolves once sent. Idempotent. */
  hangUp(): Promise<void>;
  /**
   * Set once a transfer has handed the caller to a person (callTransfer.ts): the channel's end is
   * then the transfer's to report (completed / transferred), not the caller's hang-up.
   */
  handedOver?: boolean;
  /** A phone call's SIP dialog (a transfer by REFER uses it); absent on a browser call. */
  sipDialog?: SipDialog;
}

export class LiveCalls {
  private readonly calls = new Map<string, LiveCall>();
  /** Why each recently ended call ended, so a late activity can say it precisely. */
  private readonly endings = new Map<string, ChannelCloseReason>();

  constructor() {
    liveCallSets.add(this);
  }

  add(call: LiveCall): void {
    this.calls.set(call.callId, call);
    this.endings.delete(call.callId);
    void call.channel.closed.then((reason) => {
      this.calls.delete(call.callId);
      this.endings.set(call.callId, reason);
      // Keep only recent endings: enough for activities that were already on their way.
      if (this.endings.size > 1000) this.endings.delete(this.endings.keys().next().value as string);
    });
  }

  get(callId: string): LiveCall | undefined {
    return this.calls.get(callId);
  }

  /** Why the call is no longer here, when it ended on this edge recently. */
  endingOf(callId: string): ChannelCloseReason | undefined {
    return this.endings.get(callId);
  }

  get size(): number {
    return this.calls.size;
  }

  all(): LiveCall[] {
    return [...this.calls.values()];
  }
}
