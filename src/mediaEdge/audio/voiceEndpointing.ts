/**
 * End-of-utterance detection on voice activity (Silero VAD) instead of energy: the
 * channel's 20 ms frames are gathered into the model's 32 ms windows, each window gets a
 * speech probability, and a window is voice at or above `threshold`. Speech starts after
 * `speechStartMs` of voice windows in a row and ends after a hangover of windows below
 * `negThreshold` (between the two the utterance goes on: hysteresis, as Silero's own
 * segmenter does). Noise at speech level, a line's hiss or hum, is not voice, so it
 * neither starts a turn nor cuts the agent off; the energy endpointer hears it as speech.
 *
 * The hangover adapts as in the energy endpointer: `completeAnswerSilenceMs` once the
 * listener marks the answer complete, `endSilenceMs` otherwise. Durations are counted in
 * audio (windows), never wall time; reported times come from the frames' `at` stamps.
 *
 * `push` is asynchronous (the model runs in onnxruntime): a frame that completes a window
 * resolves after the model has run, the others at once. Pushes must not overlap.
 */
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { COMPLETE_ANSWER_SILENCE_MS, END_OF_UTTERANCE_SILENCE_MS, MAX_UTTERANCE_MS, PAUSE_MS, pauseOf, type EndpointEvent, type SpeechEndpointer } from './endpointing.js';
import { VAD_WINDOW_SAMPLES, type SileroVadClassifier } from './sileroVad.js';

const WINDOW_MS = (VAD_WINDOW_SAMPLES * 1000) / SAMPLE_RATE; // 32

export interface VoiceEndpointerSettings {
  /** A window at or above this speech probability is voice. */
  threshold: number;
  /** While speaking, a window below this probability is quiet (between the two, speech goes on). */
  negThreshold: number;
  /** Voice this long in a row starts speech (whole windows: rounded up to 32 ms steps). */
  speechStartMs: number;
  /** Quiet that ends an utterance of free speech. */
  endSilenceMs: number;
  /** Quiet that ends an utterance already marked a complete answer. */
  completeAnswerSilenceMs: number;
  /** Quiet inside an utterance reported once as a pause (whole windows: the first window at or past it). */
  pauseMs: number;
  maxUtteranceMs: number;
}

/**
 * Silero's own defaults for the thresholds (0.5, and 0.15 below it). Three windows (96 ms) to
 * start, about the energy endpointer's 100 ms: a click or a cough rarely scores three in a row.
 */
export const DEFAULT_VOICE_ENDPOINTER_SETTINGS: VoiceEndpointerSettings = {
  threshold: 0.5,
  negThreshold: 0.35,
  speechStartMs: 96,
  endSilenceMs: END_OF_UTTERANCE_SILENCE_MS,
  completeAnswerSilenceMs: COMPLETE_ANSWER_SILENCE_MS,
  pauseMs: PAUSE_MS,
  maxUtteranceMs: MAX_UTTERANCE_MS,
};

/** Something that scores 512-sample windows in order (the Silero classifier; tests may pass their own). */
export interface VoiceActivityClassifier {
  speechProbability(window: Int16Array): Promise<number>;
}

export class VoiceEndpointer implements SpeechEndpointer {
  readonly settings: VoiceEndpointerSettings;
  answerComplete = false;
  turnEndSilenceMs: number | undefined;
  /** Every probability computed, when `keepProbabilities` (for tests and benchmarks). */
  readonly probabilities: number[] | undefined;
  private readonly window = new Int16Array(VAD_WINDOW_SAMPLES);
  private filled = 0;
  private speaking = false;
  /** Voice in a row while not speaking, and when that run began. */
  private voiceMs = 0;
  private voiceSince = 0;
  private utteranceMs = 0;
  private quietMs = 0;
  private lastVoiceAt = 0;

  constructor(
    private readonly classifier: VoiceActivityClassifier,
    settings: Partial<VoiceEndpointerSettings> = {},
    options: { keepProbabilities?: boolean } = {},
  ) {
    this.settings = { ...DEFAULT_VOICE_ENDPOINTER_SETTINGS, ...settings };
    this.probabilities = options.keepProbabilities ? [] : undefined;
  }

  get inSpeech(): boolean {
    return this.speaking;
  }

  get speechStartMs(): number {
    return this.settings.speechStartMs;
  }

  async push(frame: PcmFrame, at: number): Promise<EndpointEvent | undefined> {
    // A frame completes at most one window (320 < 512), so it decides at most one event.
    const take = Math.min(frame.length, VAD_WINDOW_SAMPLES - this.filled);
    this.window.set(frame.subarray(0, take), this.filled);
    this.filled += take;
    if (this.filled < VAD_WINDOW_SAMPLES) return undefined;
    // The window ended `rest` samples before this frame did.
    const rest = frame.length - take;
    const windowEndedAt = at - (rest * 1000) / SAMPLE_RATE;
    const probability = await this.classifier.speechProbability(this.window);
    this.probabilities?.push(probability);
    this.window.set(frame.subarray(take), 0);
    this.filled = rest;
    return this.decide(probability, windowEndedAt);
  }

  private decide(probability: number, at: number): EndpointEvent | undefined {
    const { settings } = this;
    if (!this.speaking) {
      if (probability < settings.threshold) {
        this.voiceMs = 0;
        return undefined;
      }
      if (this.voiceMs === 0) this.voiceSince = at - WINDOW_MS;
      this.voiceMs += WINDOW_MS;
      if (this.voiceMs < settings.speechStartMs) return undefined;
      this.speaking = true;
      this.utteranceMs = this.voiceMs;
      this.voiceMs = 0;
      this.quietMs = 0;
      this.lastVoiceAt = at;
      this.answerComplete = false;
      return { type: 'speech_start', at: this.voiceSince };
    }

    this.utteranceMs += WINDOW_MS;
    const quietBefore = this.quietMs;
    if (probability >= settings.negThreshold) {
      this.quietMs = 0;
      this.lastVoiceAt = at;
    } else {
      this.quietMs += WINDOW_MS;
    }
    const hangoverMs = this.answerComplete ? settings.completeAnswerSilenceMs : (this.turnEndSilenceMs ?? settings.endSilenceMs);
    if (this.quietMs >= hangoverMs) return this.end(at, 'silence', this.lastVoiceAt);
    if (this.utteranceMs >= settings.maxUtteranceMs) return this.end(at, 'max_length', at);
    return pauseOf(quietBefore, this.quietMs, settings.pauseMs, this.lastVoiceAt, at);
  }

  private end(at: number, reason: 'silence' | 'max_length', speechEndedAt: number): EndpointEvent {
    this.speaking = false;
    this.quietMs = 0;
    this.utteranceMs = 0;
    this.answerComplete = false;
    return { type: 'speech_end', at: speechEndedAt, detectedAt: at, reason };
  }
}
