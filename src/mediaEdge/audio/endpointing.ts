/**
 * End-of-utterance detection on the caller's audio: an energy voice-activity detector over
 * an adaptive noise floor. A frame is loud when its level stands SPEECH_MARGIN_DB above
 * the noise floor (and above MIN_SPEECH_DBFS); speech starts after SPEECH_START_MS of loud
 * frames in a row and ends after END_OF_UTTERANCE_SILENCE_MS without one (a lower,
 * hysteresis threshold keeps weak word endings inside the utterance).
 *
 * The noise floor is the quietest frame of the last NOISE_WINDOW_MS (minimum statistics):
 * speech does not raise it, since speech has quiet gaps between words, the first frame of
 * a noisy line sets it at once, and louder background noise lifts it within the window.
 *
 * Durations are counted in audio (frame lengths), not wall time, so the result does not
 * depend on how evenly frames arrive; the times it reports are the callers' timestamps.
 * The no-speech timeout is the caller's business: this only reports what it hears.
 *
 * The hangover adapts to what was heard: when the listener says the answer so far is
 * already complete (`answerComplete`, e.g. the recogniser's partial text is "yes" to a
 * yes/no question), COMPLETE_ANSWER_SILENCE_MS of quiet ends it instead.
 *
 * SpeechEndpointer is what the conversation engine needs of an endpointer; this energy one
 * decides at once, the voice-activity one (voiceEndpointing.ts) asynchronously.
 */
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { dbfs, SILENCE_DBFS } from './level.js';

/** Loud audio this long, without a quiet frame, starts speech: long enough to skip clicks and most coughs, short for a prompt barge-in. */
export const SPEECH_START_MS = 100;
/**
 * Quiet this long ends the utterance. The hangover is the largest part of turn latency
 * (speech end → the agent's next audio, targets p50 ≤ 800 ms, p95 ≤ 1.5 s); 500 ms
 * still bridges the pauses between words and between digits said one by one.
 */
export const END_OF_UTTERANCE_SILENCE_MS = 500;
/**
 * Quiet this long ends an utterance that is already a complete answer ("yes" to a yes/no
 * question, as many digits as the question asks for): long enough to bridge the gap
 * inside a word ("six" has a stop before its last sound), short for a quick turn.
 */
export const COMPLETE_ANSWER_SILENCE_MS = 240;
/**
 * Quiet this long inside an utterance is a pause: reported once (`speech_pause`) so a listener
 * can act on the words so far before the hangover decides whether the caller has finished (a
 * converse turn asks the model then, docs/agents.md "Latency"). Longer than the gaps between
 * words, well inside every hangover.
 */
export const PAUSE_MS = 150;
/** An utterance is cut here even if the caller keeps talking (or the noise never stops). */
export const MAX_UTTERANCE_MS = 15_000;
/** Nothing quieter than this is speech, however quiet the line. */
export const MIN_SPEECH_DBFS = -48;
/** Speech stands this far above the noise floor. */
export const SPEECH_MARGIN_DB = 10;
/** Once speaking, frames down to this much below the start threshold still count as speech. */
export const HYSTERESIS_DB = 4;
/** The noise floor is the quietest frame heard in this much audio. */
export const NOISE_WINDOW_MS = 2_000;

export interface EndpointerSettings {
  speechStartMs: number;
  endSilenceMs: number;
  completeAnswerSilenceMs: number;
  pauseMs: number;
  maxUtteranceMs: number;
  minSpeechDbfs: number;
  marginDb: number;
  hysteresisDb: number;
  noiseWindowMs: number;
}

export const DEFAULT_ENDPOINTER_SETTINGS: EndpointerSettings = {
  speechStartMs: SPEECH_START_MS,
  endSilenceMs: END_OF_UTTERANCE_SILENCE_MS,
  completeAnswerSilenceMs: COMPLETE_ANSWER_SILENCE_MS,
  pauseMs: PAUSE_MS,
  maxUtteranceMs: MAX_UTTERANCE_MS,
  minSpeechDbfs: MIN_SPEECH_DBFS,
  marginDb: SPEECH_MARGIN_DB,
  hysteresisDb: HYSTERESIS_DB,
  noiseWindowMs: NOISE_WINDOW_MS,
};

export type EndpointEvent =
  /** `at`: when the first loud frame began. */
  | { type: 'speech_start'; at: number }
  /** The caller has been quiet `pauseMs` inside an utterance, which may go on: `at` when the last speech frame ended, `detectedAt` the frame that decided it. Once per pause. */
  | { type: 'speech_pause'; at: number; detectedAt: number }
  /** `at`: when the last speech frame ended (the real end of speech); `detectedAt`: the frame that decided it. */
  | { type: 'speech_end'; at: number; detectedAt: number; reason: 'silence' | 'max_length' };

/** What the conversation engine needs of an endpointer. */
export interface SpeechEndpointer {
  /** Audio heard before speech is declared (the engine keeps at least this much before the start). */
  readonly speechStartMs: number;
  /** Takes the next 20 ms frame, `at` being when it arrived; frames are pushed in order, one push settled before the next. */
  push(frame: PcmFrame, at: number): EndpointEvent | undefined | Promise<EndpointEvent | undefined>;
  /** Set while speaking when what was heard is already a complete answer: the short hangover applies. Cleared when speech starts or ends. */
  answerComplete: boolean;
  /** The hangover of speech not yet complete while one listener waits (a converse turn's shorter one); undefined: the configured one. */
  turnEndSilenceMs: number | undefined;
}

export class Endpointer implements SpeechEndpointer {
  readonly settings: EndpointerSettings;
  answerComplete = false;
  turnEndSilenceMs: number | undefined;
  /** Audio heard so far, ms: the clock of the noise window. */
  private heardMs = 0;
  /** Frame levels that may still become the window's minimum: ascending levels, oldest first. */
  private readonly quietest: { at: number; level: number }[] = [];
  /** The floor when speech started: while speaking it may fall, never rise. */
  private floorAtSpeechStart = SILENCE_DBFS;
  private speaking = false;
  /** Loud audio in a row while not speaking, and when that run began. */
  private loudMs = 0;
  private loudSince = 0;
  private utteranceMs = 0;
  private quietMs = 0;
  private lastSpeechAt = 0;

  constructor(settings: Partial<EndpointerSettings> = {}) {
    this.settings = { ...DEFAULT_ENDPOINTER_SETTINGS, ...settings };
  }

  get inSpeech(): boolean {
    return this.speaking;
  }

  get speechStartMs(): number {
    return this.settings.speechStartMs;
  }

  /** The quietest level of the recent audio (SILENCE_DBFS before any). */
  get noiseFloorDbfs(): number {
    const windowMin = this.quietest[0]?.level ?? SILENCE_DBFS;
    return this.speaking ? Math.min(windowMin, this.floorAtSpeechStart) : windowMin;
  }

  /** The level a frame must reach to start speech now. */
  get startThresholdDbfs(): number {
    return Math.max(this.noiseFloorDbfs + this.settings.marginDb, this.settings.minSpeechDbfs);
  }

  /**
   * Takes the next frame, `at` being when it ended (arrived); returns what it decided.
   * One frame decides at most one event.
   */
  push(frame: PcmFrame, at: number): EndpointEvent | undefined {
    const durationMs = (frame.length * 1000) / SAMPLE_RATE;
    const level = dbfs(frame);
    this.trackFloor(level, durationMs);
    const start = this.startThresholdDbfs;
    const keep = start - this.settings.hysteresisDb;

    if (!this.speaking) {
      if (level >= start) {
        if (this.loudMs === 0) this.loudSince = at - durationMs;
        this.loudMs += durationMs;
        if (this.loudMs >= this.settings.speechStartMs) {
          this.floorAtSpeechStart = this.noiseFloorDbfs;
          this.speaking = true;
          this.utteranceMs = this.loudMs;
          this.quietMs = 0;
          this.lastSpeechAt = at;
          this.loudMs = 0;
          this.answerComplete = false;
          return { type: 'speech_start', at: this.loudSince };
        }
        return undefined;
      }
      this.loudMs = 0;
      return undefined;
    }

    this.utteranceMs += durationMs;
    const quietBefore = this.quietMs;
    if (level >= keep) {
      this.quietMs = 0;
      this.lastSpeechAt = at;
    } else {
      this.quietMs += durationMs;
    }
    const hangoverMs = this.answerComplete ? this.settings.completeAnswerSilenceMs : (this.turnEndSilenceMs ?? this.settings.endSilenceMs);
    if (this.quietMs >= hangoverMs) return this.end(at, 'silence', this.lastSpeechAt);
    if (this.utteranceMs >= this.settings.maxUtteranceMs) return this.end(at, 'max_length', at);
    return pauseOf(quietBefore, this.quietMs, this.settings.pauseMs, this.lastSpeechAt, at);
  }

  private end(at: number, reason: 'silence' | 'max_length', speechEndedAt: number): EndpointEvent {
    this.speaking = false;
    this.loudMs = 0;
    this.quietMs = 0;
    this.utteranceMs = 0;
    this.answerComplete = false;
    return { type: 'speech_end', at: speechEndedAt, detectedAt: at, reason };
  }

  /** Sliding-window minimum of the frame levels (a monotonic queue). */
  private trackFloor(level: number, durationMs: number): void {
    this.heardMs += durationMs;
    while (this.quietest.length > 0 && this.quietest[this.quietest.length - 1].level >= level) this.quietest.pop();
    this.quietest.push({ at: this.heardMs, level });
    while (this.quietest[0].at <= this.heardMs - this.settings.noiseWindowMs) this.quietest.shift();
  }
}

/** The pause event when this frame's quiet (`quietMs`, `quietBefore` before it) first reaches `pauseMs`. */
export function pauseOf(quietBefore: number, quietMs: number, pauseMs: number, speechEndedAt: number, at: number): EndpointEvent | undefined {
  return quietBefore < pauseMs && quietMs >= pauseMs ? { type: 'speech_pause', at: speechEndedAt, detectedAt: at } : undefined;
}
