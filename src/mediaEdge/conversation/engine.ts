/**
 * The conversation engine: the agent speaking and listening on one call, the same for
 * every transport (it only knows the MediaChannel). Caller audio runs through the
 * endpointer all the time (so the noise floor is known before a question is asked);
 * `speak` streams synthesised frames into the channel and stops when the caller barges
 * in; `listen` hands the caller's utterance, from just before its detected start to its
 * end, to a recognition session; `ask` does both, the recogniser already starting while
 * the prompt plays.
 *
 * The endpointer is the energy one or the voice-activity one (ENDPOINTER); the latter
 * decides asynchronously, so inbound frames then queue and are taken strictly in order.
 * While an answer is heard, the recogniser's partial text tells the endpointer when the
 * answer is already complete (answerCompleteness.ts), which shortens the hangover. Voice
 * far below the agent's own level while the agent speaks is its echo (echoGate.ts): it
 * neither barges in nor becomes an answer.
 *
 * An ask also takes keypad digits when the channel carries them (a phone call) and the
 * ask's `input` allows (digitEntry.ts): the first key stops the prompt, and the digits up to
 * `#` or a pause of `digitTimeoutMs` are the answer, marked `keyed`. `input: "dtmf"` neither
 * recognises nor barges in on speech; `input: "speech"` ignores keys.
 *
 * No Temporal here: activities wrap these calls. One speak and one listen at a time.
 */
import { context, type Context } from '@opentelemetry/api';
import { FRAME_MS, type ChannelCloseReason, type MediaChannel, type PcmFrame } from '../media/channel.js';
import { Endpointer, type EndpointerSettings, type EndpointEvent, type SpeechEndpointer } from '../audio/endpointing.js';
import { dbfs } from '../audio/level.js';
import type { AnswerHint, SpeechRecognizer, SpeechSynthesizer } from '../speech/interfaces.js';
import { impliedDigitCount, isCompleteAnswer } from './answerCompleteness.js';
import { DEFAULT_DIGIT_TIMEOUT_MS, DigitEntry } from './digitEntry.js';
import { ECHO_MARGIN_DB, EchoGate } from './echoGate.js';
import { abortReason, PendingAnswer, type ListenResult } from './pendingAnswer.js';
import { recordTurnSpans } from './turnSpans.js';
import { turnLatency } from '../../metrics/edgeMetrics.js';

export type { ListenResult } from './pendingAnswer.js';

/** Caller audio kept from before the detected start of speech, beyond the start detection itself: soft onsets fall under the threshold. */
export const PREROLL_MS = 200;

export interface SpeakResult {
  /** True when the caller's speech (barge-in) or an abort cut the playback short. */
  interrupted: boolean;
  /** Agent audio that actually left, in ms. */
  playedMs: number;
  /** When the first frame left (engine clock, ms); undefined when none did. */
  firstFrameAt?: number;
}

/** One turn: the caller stopped speaking, then the agent's next audio started (each part a span: turnSpans.ts). */
export interface TurnLatency {
  speechEndedAt: number;
  /** The endpointer decided the speech had ended. */
  endDetectedAt: number;
  recognisedAt: number;
  /** The reply was asked of the engine (the call workflow's step was done). */
  replyRequestedAt: number;
  firstFrameAt: number;
  /** speech end → first frame of the agent's next audio */
  turnMs: number;
}

export interface ConversationEngineOptions {
  channel: MediaChannel;
  synthesizer: SpeechSynthesizer;
  recognizer: SpeechRecognizer;
  endpointing?: Partial<EndpointerSettings>;
  /** This call's endpointer (the voice-activity one); when absent, an energy endpointer with `endpointing`. */
  endpointer?: SpeechEndpointer;
  /** The voice-activity endpointer failed (its model threw): the call goes on with an energy endpointer. */
  onEndpointerError?: (err: Error) => void;
  /** Voice this many dB below the agent's level while it speaks is echo (default ECHO_MARGIN_DB); null hears all voice as the caller. */
  echoMarginDb?: number | null;
  /** The clock of every time reported, in ms (default: epoch ms with sub-ms precision, monotonic). */
  now?: () => number;
  /** A keyed answer ends this long after its last key (default 3 s; `#` ends it at once). */
  digitTimeoutMs?: number;
}

/** Sentences as they are written: the next one, or undefined once there are no more. */
export interface SentenceSource {
  next(): Promise<string | undefined>;
}

export interface SpokenSentences extends SpeakResult {
  /** What the caller heard (docs/agents.md, "Barge-in"). */
  said: string;
}

/**
 * The words heard of sentences whose frames went out in order: every sentence whose frames all
 * played, and of the one a barge-in cut, its words in the share of its frames that played.
 */
export function saidOf(spans: ReadonlyArray<{ text: string; frames: number }>, playedFrames: number): string {
  const heard: string[] = [];
  let before = 0;
  for (const span of spans) {
    const played = Math.min(span.frames, playedFrames - before);
    before += span.frames;
    if (played <= 0) break;
    if (played >= span.frames) {
      heard.push(span.text);
      continue;
    }
    const words = span.text.split(/\s+/);
    const kept = Math.floor((words.length * played) / span.frames);
    if (kept > 0) heard.push(words.slice(0, kept).join(' '));
    break;
  }
  return heard.join(' ');
}

/** The call's media is gone: the channel closed while the engine spoke or listened. */
export class ChannelClosedError extends Error {
  constructor(readonly reason: ChannelCloseReason) {
    super(`The call's media channel closed (${reason})`);
    this.name = 'ChannelClosedError';
  }
}

export class ConversationEngine {
  private readonly channel: MediaChannel;
  private readonly synthesizer: SpeechSynthesizer;
  private readonly recognizer: SpeechRecognizer;
  private readonly now: () => number;
  /** This call's endpointer; an energy one after the voice-activity one failed. */
  endpointer: SpeechEndpointer;
  private readonly energySettings: Partial<EndpointerSettings> | undefined;
  private readonly onEndpointerError: ((err: Error) => void) | undefined;
  private readonly prerollFrames: number;
  private readonly recent: PcmFrame[] = [];
  /** The caller's current utterance so far, pre-roll included (empty outside speech). */
  private utterance: PcmFrame[] = [];
  /** In speech as far as the frames taken so far tell (an asynchronous endpointer may be deciding later ones). */
  private speaking = false;
  /** Inbound frames waiting for an asynchronous endpointer, with their arrival times; undefined while none is deciding. */
  private backlog: { frame: PcmFrame; at: number }[] | undefined;
  private readonly echoGate: EchoGate | undefined;
  /** The current utterance was taken for the agent's echo: not reported, unless the caller's voice rises out of it. */
  private echo = false;
  private readonly unsubscribeOutbound: () => void;
  private readonly speechListeners = new Set<(event: EndpointEvent) => void>();
  private readonly answers = new Set<PendingAnswer>();
  private readonly unsubscribeInbound: () => void;
  private closeReason: ChannelCloseReason | undefined;
  private readonly closeListeners = new Set<(reason: ChannelCloseReason) => void>();
  /** The last utterance heard, until the agent's next audio starts. */
  private lastUtterance: { speechEndedAt: number; endDetectedAt: number; recognisedAt: number; heardIn: Context; keyed?: boolean } | undefined;
  private readonly turns: TurnLatency[] = [];
  private readonly digitTimeoutMs: number;

  constructor(options: ConversationEngineOptions) {
    this.channel = options.channel;
    this.synthesizer = options.synthesizer;
    this.recognizer = options.recognizer;
    this.now = options.now ?? (() => performance.timeOrigin + performance.now());
    this.endpointer = options.endpointer ?? new Endpointer(options.endpointing);
    this.energySettings = options.endpointing;
    this.onEndpointerError = options.onEndpointerError;
    this.digitTimeoutMs = options.digitTimeoutMs ?? DEFAULT_DIGIT_TIMEOUT_MS;
    this.prerollFrames = Math.ceil((this.endpointer.speechStartMs + PREROLL_MS) / FRAME_MS);
    this.unsubscribeInbound = this.channel.onInbound((frame) => this.hear(frame));
    const echoMarginDb = options.echoMarginDb === undefined ? ECHO_MARGIN_DB : options.echoMarginDb;
    this.echoGate = echoMarginDb === null ? undefined : new EchoGate(echoMarginDb);
    const gate = this.echoGate;
    this.unsubscribeOutbound = gate ? this.channel.onOutbound((frame) => gate.agentFrame(dbfs(frame), this.now())) : () => undefined;
    void this.channel.closed.then((reason) => this.closeWith(reason));
  }

  /** Speech end → the agent's next audio, for every turn so far (for benchmarks). */
  get turnLatencies(): readonly TurnLatency[] {
    return this.turns;
  }

  /**
   * Plays `text`. Resolves when the audio has been played, or as soon as the caller starts
   * speaking when `bargeIn` (the rest is dropped from the channel). Aborting `signal`
   * stops the playback and rejects.
   */
  async speak(text: string, options: { bargeIn?: boolean; bargeInOnDigit?: boolean; signal?: AbortSignal } = {}): Promise<SpeakResult> {
    const sentences = [text];
    const { interrupted, playedMs, firstFrameAt } = await this.play({ next: async () => sentences.shift() }, options);
    return { interrupted, playedMs, firstFrameAt };
  }

  /**
   * Speaks sentences as they come (a model's answer, streamed: docs/agents.md), each handed to
   * the synthesiser as soon as `source` gives it, so the first plays while later ones are still
   * being written. The caller's speech stops it (barge-in); `said` is what was heard: the
   * sentences played, and the one cut by the barge-in up to its share of words played.
   */
  async speakSentences(source: SentenceSource, options: { signal?: AbortSignal; playing?: (said: () => string) => void } = {}): Promise<SpokenSentences> {
    return this.play(source, { bargeIn: true, signal: options.signal, playing: options.playing });
  }

  /** `speak` and `speakSentences`: each sentence synthesised onto the channel as `source` gives it. */
  /** `playing` gets, at the start, what the caller has heard so far: the words of the frames played until it is called (a call's end cuts the line short). */
  private async play(source: SentenceSource, options: { bargeIn?: boolean; bargeInOnDigit?: boolean; signal?: AbortSignal; playing?: (said: () => string) => void }): Promise<SpokenSentences> {
    const { bargeIn = false, bargeInOnDigit = false, signal } = options;
    this.assertOpen();
    if (signal?.aborted) throw abortReason(signal);
    const requestedAt = this.now();
    // The caller's context (the activity's span): the turn this line answers links to it.
    const repliedIn = context.active();
    const stop = new AbortController();
    let interrupted = false;
    let playedFrames = 0;
    let firstFrameAt: number | undefined;
    let stopped!: () => void;
    const stopping = new Promise<undefined>((resolve) => (stopped = () => resolve(undefined)));
    const halt = () => {
      if (stop.signal.aborted) return;
      interrupted = true;
      stop.abort();
      this.channel.clear();
      stopped();
    };
    // Each sentence and the frames it put on the channel, in order: the frames played map onto them.
    const spans: { text: string; frames: number }[] = [];
    options.playing?.(() => saidOf(spans, playedFrames));
    const unsubscribeOutbound = this.channel.onOutbound(() => {
      playedFrames++;
      if (firstFrameAt === undefined) {
        firstFrameAt = this.now();
        this.recordTurn(firstFrameAt, requestedAt, repliedIn);
      }
    });
    const unsubscribeSpeech = bargeIn ? this.onSpeech((event) => event.type === 'speech_start' && halt()) : () => undefined;
    const unsubscribeDigit = bargeInOnDigit && this.channel.onDigit ? this.channel.onDigit(() => halt()) : () => undefined;
    const unsubscribeClose = this.onClose(() => halt());
    signal?.addEventListener('abort', halt);
    try {
      for (;;) {
        // A barge-in while the next sentence is still being written stops the wait too.
        const sentence = await Promise.race([source.next(), stopping]);
        if (sentence === undefined || stop.signal.aborted) break;
        const span = { text: sentence, frames: 0 };
        spans.push(span);
        // This engine stands for the call: its lines queue apart from other calls' at a shared engine.
        for await (const frame of this.synthesizer.synthesize(sentence, { signal: stop.signal, call: this })) {
          if (stop.signal.aborted) break;
          this.channel.enqueue(frame);
          span.frames++;
        }
        if (stop.signal.aborted) break;
      }
      if (!stop.signal.aborted) await Promise.race([this.channel.drained(), stopping]);
      if (signal?.aborted) throw abortReason(signal);
      this.assertOpen();
      return { interrupted, playedMs: playedFrames * FRAME_MS, firstFrameAt, said: saidOf(spans, playedFrames) };
    } finally {
      signal?.removeEventListener('abort', halt);
      unsubscribeOutbound();
      unsubscribeSpeech();
      unsubscribeDigit();
      unsubscribeClose();
    }
  }

  /**
   * Waits for the caller's next utterance and recognises it. `silence` when no speech
   * starts within `timeoutMs`; speech that started in time is heard to its end.
   * `endSilenceMs`: the quiet that ends this answer instead of the endpointer's own (a
   * converse turn's shorter hangover, docs/speech.md "Endpointing"). `noSpeechTimerAfter`: the
   * agent is still speaking (a converse turn's answer): the recogniser starts now, as for an
   * ask's prompt, and `timeoutMs` counts once this settles. `onPause`: the recogniser's text so
   * far each time the caller pauses inside the answer (PendingAnswerOptions.onPause).
   */
  async listen(options: { hint?: AnswerHint; timeoutMs: number; signal?: AbortSignal; endSilenceMs?: number; noSpeechTimerAfter?: Promise<unknown>; onPause?: (textSoFar: string) => void }): Promise<ListenResult> {
    const answer = this.expectAnswer(options.hint, options.signal, undefined, options.onPause);
    if (options.noSpeechTimerAfter) void options.noSpeechTimerAfter.then(() => answer.startNoSpeechTimer(options.timeoutMs), () => undefined);
    else answer.startNoSpeechTimer(options.timeoutMs);
    if (options.endSilenceMs === undefined) return answer.result;
    this.endpointer.turnEndSilenceMs = options.endSilenceMs;
    try {
      return await answer.result;
    } finally {
      this.endpointer.turnEndSilenceMs = undefined;
    }
  }

  /**
   * Speaks the prompt (the caller may barge in) while already listening, then waits for
   * the answer: `noSpeechTimeoutMs` counts from the end of the prompt.
   */
  async ask(prompt: string, hint: AnswerHint, options: { noSpeechTimeoutMs: number; signal?: AbortSignal }): Promise<ListenResult> {
    const input = hint.input ?? 'both';
    const onDigit = input !== 'speech' ? this.channel.onDigit?.bind(this.channel) : undefined;
    if (!onDigit) return this.askBySpeech(prompt, hint, options);
    this.assertOpen();
    if (options.signal?.aborted) throw abortReason(options.signal);
    // Speech is heard too unless the ask takes keys only; the first key ends listening to it.
    let spoken: PendingAnswer | undefined;
    const keyed = new DigitEntry({ onDigit }, { digitTimeoutMs: this.digitTimeoutMs, now: this.now, onFirstDigit: () => spoken?.cancel(new Error('answered on the keypad')) });
    spoken = input === 'both' ? this.expectAnswer(hint, options.signal, impliedDigitCount(prompt)) : undefined;
    const unsubscribeClose = this.onClose(() => keyed.cancel());
    try {
      try {
        await this.speak(prompt, { bargeIn: spoken !== undefined, bargeInOnDigit: true, signal: options.signal });
      } catch (err) {
        spoken?.cancel(err as Error);
        throw err;
      }
      if (spoken) spoken.startNoSpeechTimer(options.noSpeechTimeoutMs);
      else keyed.startNoInputTimer(options.noSpeechTimeoutMs);
      return await this.firstAnswer(spoken, keyed, options.signal);
    } finally {
      keyed.cancel();
      unsubscribeClose();
    }
  }

  /** The spoken answer or the keyed one, whichever the caller gives first; rejects when the call ends or `signal` aborts. */
  private async firstAnswer(spoken: PendingAnswer | undefined, keyed: DigitEntry, signal: AbortSignal | undefined): Promise<ListenResult> {
    const never = new Promise<never>(() => undefined);
    const heardIn = context.active();
    const fromKeys = keyed.result.then((entry): ListenResult => {
      if (entry.kind === 'silence') return entry;
      this.lastUtterance = { speechEndedAt: entry.endedAt, endDetectedAt: entry.endedAt, recognisedAt: entry.endedAt, heardIn, keyed: true };
      return { kind: 'utterance', text: entry.digits, speechEndedAt: entry.endedAt, recognisedAt: entry.endedAt, recognitionMs: 0, keyed: true };
    });
    // The first key cancels the spoken answer: its rejection then is no answer, the keys are.
    const fromSpeech = spoken ? spoken.result.catch((err: unknown) => (keyed.started ? never : Promise.reject(err as Error))) : never;
    let unsubscribeClose = () => undefined as unknown;
    let onAbort = () => undefined as unknown;
    const stopped = new Promise<never>((_, reject) => {
      unsubscribeClose = this.onClose((reason) => reject(new ChannelClosedError(reason)));
      onAbort = () => reject(abortReason(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([fromSpeech, fromKeys, stopped]);
    } finally {
      unsubscribeClose();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private async askBySpeech(prompt: string, hint: AnswerHint, options: { noSpeechTimeoutMs: number; signal?: AbortSignal }): Promise<ListenResult> {
    const answer = this.expectAnswer(hint, options.signal, impliedDigitCount(prompt));
    try {
      await this.speak(prompt, { bargeIn: true, signal: options.signal });
    } catch (err) {
      answer.cancel(err as Error);
      throw err;
    }
    answer.startNoSpeechTimer(options.noSpeechTimeoutMs);
    return answer.result;
  }

  /** Stops listening to the channel and drops pending answers (their calls reject). */
  close(): void {
    this.unsubscribeInbound();
    this.unsubscribeOutbound();
    for (const answer of this.answers) answer.cancel(new Error('conversation engine closed'));
  }

  /** `digits`: how many digits the question asks for, when it says. */
  private expectAnswer(hint: AnswerHint | undefined, signal: AbortSignal | undefined, digits: number | undefined, onPause?: (textSoFar: string) => void): PendingAnswer {
    this.assertOpen();
    if (signal?.aborted) throw abortReason(signal);
    // The caller's context (the ask activity's span): the parent of the turn this answer starts.
    const heardIn = context.active();
    const answer: PendingAnswer = new PendingAnswer({
      recognizer: this.recognizer,
      hint,
      now: this.now,
      signal,
      speechSoFar: this.speaking && !this.echo ? this.utterance : undefined,
      onPartial: (text) => {
        if (this.speaking && hint && isCompleteAnswer(hint.expect, text, digits)) this.endpointer.answerComplete = true;
      },
      onPause,
      onUtterance: (heard) => (this.lastUtterance = { ...heard, heardIn }),
      onDone: () => this.answers.delete(answer),
    });
    this.answers.add(answer);
    return answer;
  }

  /** One inbound frame: endpointing, the utterance buffer, and the listeners. */
  private hear(frame: PcmFrame): void {
    const at = this.now();
    if (this.backlog) {
      this.backlog.push({ frame, at });
      return;
    }
    const decided = this.endpointer.push(frame, at);
    if (!(decided instanceof Promise)) {
      this.take(frame, decided, at);
      return;
    }
    this.backlog = [];
    void this.drain(frame, at, decided);
  }

  /** Takes frames in order while an asynchronous endpointer decides them. */
  private async drain(frame: PcmFrame, at: number, decided: Promise<EndpointEvent | undefined>): Promise<void> {
    for (;;) {
      let event: EndpointEvent | undefined;
      try {
        event = await decided;
      } catch (err) {
        event = this.fallBackToEnergy(err as Error, at);
      }
      this.take(frame, event, at);
      const next = this.backlog?.shift();
      if (!next) break;
      ({ frame, at } = next);
      decided = Promise.resolve(this.endpointer.push(next.frame, next.at));
    }
    this.backlog = undefined;
  }

  /**
   * The voice-activity endpointer failed: energy endpointing for the rest of the call, so
   * the call never stops hearing the caller; an utterance under way ends here and is recognised.
   */
  private fallBackToEnergy(err: Error, at: number): EndpointEvent | undefined {
    const turnEndSilenceMs = this.endpointer.turnEndSilenceMs;
    this.endpointer = new Endpointer(this.energySettings);
    this.endpointer.turnEndSilenceMs = turnEndSilenceMs;
    this.onEndpointerError?.(err);
    return this.speaking ? { type: 'speech_end', at, detectedAt: at, reason: 'silence' } : undefined;
  }

  /** A frame whose endpointing is decided (`at`: when it arrived): the pre-roll, the utterance buffer, echo, and the listeners. */
  private take(frame: PcmFrame, event: EndpointEvent | undefined, at: number): void {
    this.recent.push(frame);
    if (this.recent.length > this.prerollFrames) this.recent.shift();
    if (event?.type === 'speech_start') {
      this.speaking = true;
      this.utterance = [...this.recent];
      // Judged on the loudest frame of the audio that started it.
      const startFrames = this.recent.slice(-Math.ceil(this.endpointer.speechStartMs / FRAME_MS) - 1);
      this.echo = this.echoGate?.isEcho(Math.max(...startFrames.map((f) => dbfs(f))), at) ?? false;
      if (this.echo) return;
    } else if (event?.type === 'speech_end') {
      this.speaking = false;
      if (this.echo) {
        this.echo = false;
        this.utterance = [];
        return;
      }
    } else if (this.speaking && this.echo) {
      // The caller talking over the agent's echo: their voice starts here.
      if (this.echoGate!.isEcho(dbfs(frame), at)) return;
      this.echo = false;
      this.utterance = [...this.recent];
      event = { type: 'speech_start', at: at - FRAME_MS };
    } else if (this.speaking) {
      this.utterance.push(frame);
      for (const answer of this.answers) answer.write(frame);
    }
    if (event) {
      for (const answer of this.answers) answer.onSpeech(event, this.utterance);
      for (const listener of this.speechListeners) listener(event);
    }
    if (event?.type === 'speech_end') this.utterance = [];
  }

  private onSpeech(listener: (event: EndpointEvent) => void): () => void {
    this.speechListeners.add(listener);
    return () => this.speechListeners.delete(listener);
  }

  private onClose(listener: (reason: ChannelCloseReason) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  private closeWith(reason: ChannelCloseReason): void {
    this.closeReason = reason;
    for (const listener of this.closeListeners) listener(reason);
    for (const answer of this.answers) answer.cancel(new ChannelClosedError(reason));
    this.unsubscribeInbound();
  }

  private assertOpen(): void {
    if (this.closeReason) throw new ChannelClosedError(this.closeReason);
  }

  private recordTurn(firstFrameAt: number, replyRequestedAt: number, repliedIn: Context): void {
    const heard = this.lastUtterance;
    if (!heard) return;
    this.lastUtterance = undefined;
    const { heardIn, keyed, ...instants } = heard;
    this.turns.push({ ...instants, replyRequestedAt, firstFrameAt, turnMs: firstFrameAt - heard.speechEndedAt });
    turnLatency.observe((firstFrameAt - heard.speechEndedAt) / 1000);
    recordTurnSpans({ ...instants, replyRequestedAt, firstFrameAt }, { heardIn, repliedIn, keyed });
  }
}
