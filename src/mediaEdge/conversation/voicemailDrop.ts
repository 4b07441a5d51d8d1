/**
 * Screening an answered outbound call for a machine, and leaving the script's voicemail
 * message on one (docs/telephony.md, "Voicemail detection").
 *
 * `screenAnsweredCall` is what the edge runs on an outbound phone call right after the
 * answer, before the script's first line: the answering-machine detector hears the callee's
 * first seconds. A person (or no verdict) → `human`: the script runs as usual. A machine →
 * the call ends as status `voicemail` (end_reason `voicemail`); with a message, the agent
 * first waits for the beep (and its end), or for the greeting to end (a long silence), or
 * at most `maxGreetingWaitMs`, then says the message. The caller of this function hangs up
 * afterwards and reports what happened: the `ended` event with reason `voicemail`, and the
 * message as the agent's transcript turn. The channel's recorder, started at the answer,
 * hears the message like any line.
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
  /** Aborting stops listening or speaking; the screening then rejects with the signal's reason. */
  signal?: AbortSignal;
}

class ChannelClosed {
  constructor(readonly reason: ChannelCloseReason) {}
}

/**
 * Runs detection on the channel's inbound audio, then the voicemail drop on a machine.
 * Call it once the call is answered and before anything is said on it; hang up afterwards
 * unless the outcome is `human`.
 */
export async function screenAnsweredCall(options: ScreenAnsweredCallOptions): Promise<CallScreening> {
  const { channel, synthesizer, signal } = options;
  const settings: VoicemailDropSettings = { ...DEFAULT_VOICEMAIL_DROP_SETTINGS, ...options.settings };
  const detector = new AnsweringMachineDetector(settings);
  const message = options.voicemailMessage?.trim();
  signal?.throwIfAborted();

  let closed: ChannelCloseReason | undefined;
  let wake: (() => void) | undefined;
  /** Frames heard, each fed to the detector; `until` checks after each one. */
  const until = (done: () => boolean): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (signal?.aborted) reject(signal.reason);
        else if (closed) reject(new ChannelClosed(closed));
        else if (done()) resolve();
        else return;
        wake = undefined;
      };
      wake = check;
      check();
    });
  let detection: AnsweringMachineResult | undefined;
  const unsubscribe = channel.onInbound((frame: PcmFrame) => {
    detection = detector.push(frame) ?? detection;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener('abort', onAbort);
  void channel.closed.then((reason) => {
    closed = reason;
    wake?.();
  });

  try {
    await until(() => detection !== undefined);
    const verdict = detection!;
    if (verdict.verdict !== 'machine') return { outcome: 'human', detection: verdict };
    if (!message) return { outcome: 'voicemail', detection: verdict };

    let cue: MessageCue = 'max_wait';
    await until(() => {
      if (detector.beepEndedAt !== undefined && detector.heardMs - detector.beepEndedAt >= settings.afterBeepMs) cue = 'beep';
      else if (detector.beepAt === undefined && detector.heardVoice && detector.silenceMs >= settings.endOfGreetingSilenceMs) cue = 'greeting_end';
      else if (detector.heardMs < settings.maxGreetingWaitMs) return false;
      return true;
    });
    const startedAtMs = Math.round(detector.heardMs);
    unsubscribe();
    const { playedMs, closeReason } = await play(channel, synthesizer, message, signal, () => closed);
    const said = { text: message, playedMs, startedAtMs, cue };
    // The machine hung up mid-message: what left is still the call's last line.
    if (closeReason) return { outcome: 'channel_closed', detection: verdict, message: said, closeReason };
    return { outcome: 'voicemail_left', detection: verdict, message: said };
  } catch (err) {
    if (err instanceof ChannelClosed) return { outcome: 'channel_closed', ...(detection ? { detection } : {}), closeReason: err.reason };
    throw err;
  } finally {
    unsubscribe();
    signal?.removeEventListener('abort', onAbort);
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
