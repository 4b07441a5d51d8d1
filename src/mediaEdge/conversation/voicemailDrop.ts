/**
 * Screening an answered outbound call for a machine, and leaving the script's voicemail
 * message on one (docs/telephony.md, "Voicemail detection").
 *
 * The answering-machine detector hears the callee's first seconds. A person (or no verdict)
 * → `human`: the script runs as usual. A machine → the call ends as status `voicemail`
 * (end_reason `voicemail`); with a message, the agent first waits for the beep (and its
 * end), or for the greeting to end (a long silence), or at most `maxGreetingWaitMs`, then
 * says the message. The channel's recorder, started at the answer, hears the message like
 * any line.
 *
 * How an outbound phone call uses it (src/mediaEdge/phoneDialer.ts, in the dial activity):
 *   1. at the answer, before anything is said: `new CallScreener(call.channel)` for an
 *      outbound call only (an inbound caller is never screened);
 *   2. `screener.finish({ say, voicemailMessage })`, `say` being the call's conversation engine
 *      (LiveCall.conversation.speak, so the recording has the message), the message the script's
 *      `voicemail_message` filled by `voicemailMessageOf` (src/telephony/sipTrunk.ts, with the dial);
 *   3. `human` → the script runs; a machine (`voicemail`, `voicemail_left`, or `channel_closed`
 *      after a machine's verdict) → BYE, the message (when said) becomes the agent's transcript
 *      turn, a System Note gives the detection, and the call ends status `voicemail`, end_reason
 *      `voicemail`; `channel_closed` before a verdict → the call's usual end for the close reason
 *      (hang-up, dropout). `screenAnsweredCall` does 1 and 2 at once when the message is known at the answer.
 */
import { FRAME_MS, type ChannelCloseReason, type MediaChannel, type PcmFrame } from '../media/channel.js';
import type { SpeechSynthesizer } from '../speech/interfaces.js';
import { AnsweringMachineDetector, DEFAULT_ANSWERING_MACHINE_SETTINGS, type AnsweringMachineResult, type AnsweringMachineSettings } from './answeringMachineDetector.js';

export interface VoicemailDropSettings extends AnsweringMachineSettings {
  /** Silence this long after the machine's voice ends its greeting (longer than the pauses between its sentences). */
  endOfGreetingSilenceMs: number;
  /** The message is said by this long after the answer, whatever the machine still plays. */
  maxGreetingWaitMs: number;
  /** Quiet after the beep before the message starts: the machine is recording by then. */
  afterBeepMs: number;
}

export const DEFAULT_VOICEMAIL_DROP_SETTINGS: VoicemailDropSettings = {
  ...DEFAULT_ANSWERING_MACHINE_SETTINGS,
  endOfGreetingSilenceMs: 1500,
  maxGreetingWaitMs: 30_000,
  afterBeepMs: 200,
};

/** What the message waited for. */
export type MessageCue = 'beep' | 'greeting_end' | 'max_wait';

export interface VoicemailMessageSaid {
  text: string;
  /** Agent audio that left, ms. */
  playedMs: number;
  /** When it started, ms of the callee's audio since the answer. */
  startedAtMs: number;
  cue: MessageCue;
}

export type ScreeningOutcome =
  /** A person (or no verdict: a person is the safer guess): run the script. */
  | 'human'
  /** A machine; the message was said (`message`). */
  | 'voicemail_left'
  /** A machine, and the script has no voicemail message. */
  | 'voicemail'
  /** The channel closed before a verdict or during the message (the callee hung up, the media was lost). */
  | 'channel_closed';

export interface CallScreening {
  outcome: ScreeningOutcome;
  /** The detector's verdict; undefined when the channel closed before one. */
  detection?: AnsweringMachineResult;
  message?: VoicemailMessageSaid;
  /** Why the channel closed, for `channel_closed`. */
  closeReason?: ChannelCloseReason;
}

export interface ScreenAnsweredCallOptions {
  channel: MediaChannel;
  synthesizer: SpeechSynthesizer;
  /** The script's voicemail_message, its templates already filled; none → a machine just ends the call. */
  voicemailMessage?: string;
  settings?: Partial<VoicemailDropSettings>;
  /** Aborting stops listening or speaking at once; the screening then rejects with ScreeningCancelled. */
  signal?: AbortSignal;
}

/** Says a line on the call to its end (e.g. the call's conversation engine); the ms of audio that left. */
export type SayLine = (text: string, signal: AbortSignal | undefined) => Promise<{ playedMs: number }>;

class ChannelClosed {
  constructor(readonly reason: ChannelCloseReason) {}
}

/**
 * The screening was aborted (cancel-call): what it had found by then. A message under way was
 * cut at once (`said.playedMs` is the audio that had left); none had started when `said` is
 * undefined.
 */
export class ScreeningCancelled extends Error {
  constructor(
    readonly reason: unknown,
    readonly detection: AnsweringMachineResult | undefined,
    readonly said: VoicemailMessageSaid | undefined,
  ) {
    super(said ? `the screening was cancelled ${said.playedMs} ms into the voicemail message` : 'the screening was cancelled before any message');
    this.name = 'ScreeningCancelled';
  }
}

/**
 * Detection that starts hearing the call at once (construct it at the answer, so the
 * callee's first word is heard even if what to do next is known only later, e.g. when the
 * call workflow asks with the script's message); `finish` waits for the verdict and does
 * the drop. `stop` when done with it.
 */
export class CallScreener {
  readonly settings: VoicemailDropSettings;
  private readonly detector: AnsweringMachineDetector;
  private detection: AnsweringMachineResult | undefined;
  private closed: ChannelCloseReason | undefined;
  private wake: (() => void) | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly channel: MediaChannel,
    settings: Partial<VoicemailDropSettings> = {},
  ) {
    this.settings = { ...DEFAULT_VOICEMAIL_DROP_SETTINGS, ...settings };
    this.detector = new AnsweringMachineDetector(this.settings);
    this.unsubscribe = channel.onInbound((frame: PcmFrame) => {
      this.detection = this.detector.push(frame) ?? this.detection;
      this.wake?.();
    });
    void channel.closed.then((reason) => {
      this.closed = reason;
      this.wake?.();
    });
  }

  /** Stops hearing the call. */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /**
   * The verdict, then on a machine the message (when there is one) after the beep or the
   * greeting. Aborting `signal` rejects with ScreeningCancelled at once: before the message,
   * none is said; during it, the rest is dropped.
   */
  async finish(options: ({ synthesizer: SpeechSynthesizer } | { say: SayLine }) & { voicemailMessage?: string; signal?: AbortSignal }): Promise<CallScreening> {
    const { signal } = options;
    const message = options.voicemailMessage?.trim();
    const { detector, settings } = this;
    if (signal?.aborted) throw new ScreeningCancelled(signal.reason, this.detection, undefined);
    const onAbort = () => this.wake?.();
    signal?.addEventListener('abort', onAbort);
    // The message under way: when it began, and the agent audio that has left since.
    let started: { startedAtMs: number; cue: MessageCue; frames: number } | undefined;
    let unsubscribeOutbound: (() => void) | undefined;
    try {
      await this.until(() => this.detection !== undefined, signal);
      const verdict = this.detection!;
      if (verdict.verdict !== 'machine') return { outcome: 'human', detection: verdict };
      if (!message) return { outcome: 'voicemail', detection: verdict };

      let cue: MessageCue = 'max_wait';
      await this.until(() => {
        if (detector.beepEndedAt !== undefined && detector.heardMs - detector.beepEndedAt >= settings.afterBeepMs) cue = 'beep';
        else if (detector.beepAt === undefined && detector.heardVoice && detector.silenceMs >= settings.endOfGreetingSilenceMs) cue = 'greeting_end';
        else if (detector.heardMs < settings.maxGreetingWaitMs) return false;
        return true;
      }, signal);
      const startedAtMs = Math.round(detector.heardMs);
      this.stop();
      const current = { startedAtMs, cue, frames: 0 };
      started = current;
      unsubscribeOutbound = this.channel.onOutbound(() => current.frames++);
      const { playedMs, closeReason } =
        'say' in options ? await sayWith(options.say, message, signal, () => this.closed) : await play(this.channel, options.synthesizer, message, signal, () => this.closed);
      const said = { text: message, playedMs, startedAtMs, cue };
      // The machine hung up mid-message: what left is still the call's last line.
      if (closeReason) return { outcome: 'channel_closed', detection: verdict, message: said, closeReason };
      return { outcome: 'voicemail_left', detection: verdict, message: said };
    } catch (err) {
      if (signal?.aborted) {
        const cut = started && message ? { text: message, playedMs: started.frames * FRAME_MS, startedAtMs: started.startedAtMs, cue: started.cue } : undefined;
        throw new ScreeningCancelled(signal.reason, this.detection, cut);
      }
      if (err instanceof ChannelClosed) return { outcome: 'channel_closed', ...(this.detection ? { detection: this.detection } : {}), closeReason: err.reason };
      throw err;
    } finally {
      unsubscribeOutbound?.();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Resolves once `done` holds after a frame (or now); rejects when the channel closes or `signal` aborts. */
  private until(done: () => boolean, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const check = () => {
        if (signal?.aborted) reject(signal.reason);
        else if (this.closed) reject(new ChannelClosed(this.closed));
        else if (done()) resolve();
        else return;
        this.wake = undefined;
      };
      this.wake = check;
      check();
    });
  }
}

/**
 * Runs detection on the channel's inbound audio, then the voicemail drop on a machine.
 * Call it once the call is answered and before anything is said on it; hang up afterwards
 * unless the outcome is `human`.
 */
export async function screenAnsweredCall(options: ScreenAnsweredCallOptions): Promise<CallScreening> {
  options.signal?.throwIfAborted();
  const screener = new CallScreener(options.channel, options.settings);
  try {
    return await screener.finish(options);
  } finally {
    screener.stop();
  }
}

/** Says `text` through `say`; a channel that closed meanwhile is reported, whatever `say` did (its failure included). */
async function sayWith(say: SayLine, text: string, signal: AbortSignal | undefined, closed: () => ChannelCloseReason | undefined): Promise<{ playedMs: number; closeReason?: ChannelCloseReason }> {
  try {
    const { playedMs } = await say(text, signal);
    const closeReason = closed();
    return { playedMs, ...(closeReason ? { closeReason } : {}) };
  } catch (err) {
    const closeReason = closed();
    if (!closeReason || signal?.aborted) throw err;
    return { playedMs: 0, closeReason };
  }
}

/** Says `text` on the channel to its end (or the channel's close); the ms of audio that left. */
async function play(
  channel: MediaChannel,
  synthesizer: SpeechSynthesizer,
  text: string,
  signal: AbortSignal | undefined,
  closed: () => ChannelCloseReason | undefined,
): Promise<{ playedMs: number; closeReason?: ChannelCloseReason }> {
  let played = 0;
  const unsubscribe = channel.onOutbound(() => played++);
  try {
    for await (const frame of synthesizer.synthesize(text, { signal, call: channel })) {
      if (closed()) break;
      channel.enqueue(frame);
    }
    await Promise.race([channel.drained(), channel.closed]);
    signal?.throwIfAborted();
    const closeReason = closed();
    return { playedMs: played * FRAME_MS, ...(closeReason ? { closeReason } : {}) };
  } finally {
    unsubscribe();
  }
}
