/**
 * Answering-machine detection (docs/telephony.md, "Voicemail detection"): after an outbound
 * call is answered, the first seconds of the callee's audio say whether a person or a
 * machine picked up. The heuristic is the one Asterisk's AMD documents (its parameters, not
 * its code): a person says something short ("Hello?") and waits; a machine either stays
 * silent a long time before its greeting, or talks on: a long greeting, many words. A beep
 * (a steady tone) is a machine whatever came before.
 *
 * Pure over the channel's 20 ms frames of 16 kHz PCM: time is counted in audio, so the
 * verdict does not depend on how evenly frames arrive. Speech and silence are told apart by
 * energy (level.ts) against a fixed threshold raised above a noisy line's floor, the same
 * minimum-statistics floor as the endpointer's (endpointing.ts): word gaps of 50 ms are
 * finer than any voice-activity endpointer's decisions, so the endpointers themselves are
 * not used.
 *
 * After the verdict the detector keeps listening (the voicemail drop waits for the beep or
 * for the end of the greeting): `beepAt`, `beepEndedAt` and `silenceMs` follow the audio.
 */
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { dbfs, SILENCE_DBFS } from '../audio/level.js';

export interface AnsweringMachineSettings {
  /** Silence this long before any voice: a machine (people say something at once; machines often wait). Asterisk's initial_silence. */
  initialSilenceMs: number;
  /** Voice this long in the greeting: a machine (a person's "Hello, who's calling?" is shorter). Asterisk's greeting. */
  greetingMs: number;
  /** Silence this long after some voice: a person (they said hello and wait for an answer). Asterisk's after_greeting_silence. */
  afterGreetingSilenceMs: number;
  /** No verdict after this much audio: unknown (treated as a person). Asterisk's total_analysis_time. */
  totalAnalysisMs: number;
  /** Voice this long counts as a word (shorter bursts are clicks). Asterisk's min_word_length. */
  minWordMs: number;
  /** Silence this long ends a word. Asterisk's between_words_silence. */
  betweenWordsSilenceMs: number;
  /** This many words: a machine. Asterisk's maximum_number_of_words. */
  maxWords: number;
  /** One word (voice without a gap) this long: a machine. Asterisk's maximum_word_length. */
  maxWordMs: number;
  /** Nothing quieter is voice. Asterisk's silence_threshold (256 of 32767 in mean magnitude is about -42 dBFS). */
  silenceThresholdDbfs: number;
  /** Voice stands this far above the line's noise floor (a noisy line raises the threshold). */
  noiseMarginDb: number;
  /** A steady tone this long is a beep. */
  beepMinMs: number;
  /** The band a beep's tone lies in. */
  beepMinHz: number;
  beepMaxHz: number;
  /** Share of a frame's energy at one frequency for the frame to be tone (1 for a pure tone). */
  beepPurity: number;
}

export const DEFAULT_ANSWERING_MACHINE_SETTINGS: AnsweringMachineSettings = {
  initialSilenceMs: 2500,
  greetingMs: 1800,
  afterGreetingSilenceMs: 1000,
  totalAnalysisMs: 5000,
  minWordMs: 100,
  betweenWordsSilenceMs: 50,
  maxWords: 5,
  maxWordMs: 5000,
  silenceThresholdDbfs: -42,
  noiseMarginDb: 10,
  beepMinMs: 160,
  beepMinHz: 400,
  beepMaxHz: 2000,
  beepPurity: 0.7,
};

export type AnsweringMachineVerdict = 'human' | 'machine' | 'unknown';

/** Why the verdict is what it is (Asterisk's AMDCAUSE, in words). */
export type AnsweringMachineReason =
  | 'initial_silence'
  | 'long_greeting'
  | 'max_words'
  | 'long_word'
  | 'beep'
  | 'after_greeting_silence'
  | 'too_long';

export interface AnsweringMachineResult {
  verdict: AnsweringMachineVerdict;
  reason: AnsweringMachineReason;
  /** Voice heard in the greeting until the verdict, ms. */
  greetingMs: number;
  /** Words counted until the verdict. */
  words: number;
  /** Audio heard when the verdict was reached, ms from the answer. */
  decidedAtMs: number;
  /** When the beep began, ms from the answer, when one was heard before the verdict. */
  beepAt?: number;
}

/** The minimum level of the last NOISE_WINDOW_MS: the line's noise floor. */
const NOISE_WINDOW_MS = 2000;

/**
 * A steady tone in the channel's frames: each frame's frequency is estimated from its zero
 * crossings and confirmed by a Goertzel filter at that frequency holding most of the
 * frame's energy; frames in a row at the same frequency for `beepMinMs` are a beep.
 * Speech fails it: voiced sounds spread their energy over many harmonics and their pitch moves.
 */
export class BeepDetector {
  /** When the current beep began (ms of audio), once confirmed. */
  beepAt: number | undefined;
  /** When the confirmed beep ended. */
  beepEndedAt: number | undefined;
  private runMs = 0;
  private runStartedAt = 0;
  private runHz = 0;
  private heardMs = 0;

  constructor(private readonly settings: Pick<AnsweringMachineSettings, 'beepMinMs' | 'beepMinHz' | 'beepMaxHz' | 'beepPurity' | 'silenceThresholdDbfs'>) {}

  /** Takes the next frame; returns the beep's start when this frame confirms one. */
  push(frame: PcmFrame): number | undefined {
    const durationMs = (frame.length * 1000) / SAMPLE_RATE;
    const startedAt = this.heardMs;
    this.heardMs += durationMs;
    const hz = this.toneHz(frame);
    const steady = hz !== undefined && this.runMs > 0 && Math.abs(hz - this.runHz) <= this.runHz * 0.04;
    if (hz === undefined) {
      if (this.beepAt !== undefined && this.beepEndedAt === undefined) this.beepEndedAt = startedAt;
      this.runMs = 0;
      return undefined;
    }
    if (!steady) {
      this.runMs = 0;
      this.runStartedAt = startedAt;
      this.runHz = hz;
    }
    this.runMs += durationMs;
    if (this.runMs >= this.settings.beepMinMs && (this.beepAt === undefined || this.beepEndedAt !== undefined)) {
      this.beepAt = this.runStartedAt;
      this.beepEndedAt = undefined;
      return this.beepAt;
    }
    return undefined;
  }

  /** The frame's frequency when it is a tone in the beep band, else undefined. */
  private toneHz(frame: PcmFrame): number | undefined {
    if (dbfs(frame) < this.settings.silenceThresholdDbfs) return undefined;
    let crossings = 0;
    for (let i = 1; i < frame.length; i++) if (frame[i - 1] < 0 !== frame[i] < 0) crossings++;
    const estimate = (crossings * SAMPLE_RATE) / (2 * (frame.length - 1));
    if (estimate < this.settings.beepMinHz * 0.9 || estimate > this.settings.beepMaxHz * 1.1) return undefined;
    // The crossing count is within one crossing of the truth: search that neighbourhood.
    const step = SAMPLE_RATE / (2 * frame.length);
    let best = { hz: estimate, purity: 0 };
    for (let hz = estimate - step; hz <= estimate + step + 1e-9; hz += step / 2) {
      const purity = toneShare(frame, hz);
      if (purity > best.purity) best = { hz, purity };
    }
    if (best.purity < this.settings.beepPurity || best.hz < this.settings.beepMinHz || best.hz > this.settings.beepMaxHz) return undefined;
    return best.hz;
  }
}

/** The share of the frame's energy at `hz` (Goertzel; 1 for a pure tone at that frequency). */
function toneShare(frame: PcmFrame, hz: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * hz) / SAMPLE_RATE);
  let s1 = 0;
  let s2 = 0;
  let energy = 0;
  for (let i = 0; i < frame.length; i++) {
    const s = frame[i] + coefficient * s1 - s2;
    s2 = s1;
    s1 = s;
    energy += frame[i] * frame[i];
  }
  if (energy === 0) return 0;
  const power = s1 * s1 + s2 * s2 - coefficient * s1 * s2;
  return (2 * power) / (frame.length * energy);
}

export class AnsweringMachineDetector {
  readonly settings: AnsweringMachineSettings;
  /** The verdict, once reached. */
  result: AnsweringMachineResult | undefined;
  private readonly beeps: BeepDetector;
  /** Audio heard since the answer, ms. */
  heardMs = 0;
  /** Silence in a row up to now, ms (from the answer while no voice has come). */
  silenceMs = 0;
  /** Some voice (a word) has been heard. */
  heardVoice = false;
  /** When the last voice frame ended, ms. */
  lastVoiceAt: number | undefined;
  private voiceMs = 0;
  private wordMs = 0;
  private inWord = false;
  private words = 0;
  private readonly quietest: { at: number; level: number }[] = [];

  constructor(settings: Partial<AnsweringMachineSettings> = {}) {
    this.settings = { ...DEFAULT_ANSWERING_MACHINE_SETTINGS, ...settings };
    this.beeps = new BeepDetector(this.settings);
  }

  /** When the beep began, if one was heard (before or after the verdict). */
  get beepAt(): number | undefined {
    return this.beeps.beepAt;
  }

  /** When the beep ended, once it has. */
  get beepEndedAt(): number | undefined {
    return this.beeps.beepEndedAt;
  }

  /** Takes the next frame; returns the verdict on the frame that reaches it (once), undefined otherwise. */
  push(frame: PcmFrame): AnsweringMachineResult | undefined {
    const s = this.settings;
    const durationMs = (frame.length * 1000) / SAMPLE_RATE;
    const level = dbfs(frame);
    this.heardMs += durationMs;
    const floor = this.trackFloor(level);
    const voice = level >= Math.max(s.silenceThresholdDbfs, floor + s.noiseMarginDb);
    const beepAt = this.beeps.push(frame);
    if (voice) {
      this.silenceMs = 0;
      this.lastVoiceAt = this.heardMs;
      this.wordMs += durationMs;
      if (this.heardVoice) this.voiceMs += durationMs;
      if (!this.inWord && this.wordMs >= s.minWordMs) {
        this.inWord = true;
        this.words++;
        if (!this.heardVoice) {
          this.heardVoice = true;
          this.voiceMs = this.wordMs;
        }
      }
    } else {
      this.silenceMs += durationMs;
      if (this.silenceMs >= s.betweenWordsSilenceMs) {
        this.inWord = false;
        this.wordMs = 0;
      }
    }
    if (this.result) return undefined;

    if (beepAt !== undefined) return this.decide('machine', 'beep');
    if (!this.heardVoice && this.silenceMs >= s.initialSilenceMs) return this.decide('machine', 'initial_silence');
    if (this.heardVoice && this.voiceMs >= s.greetingMs) return this.decide('machine', 'long_greeting');
    if (this.words >= s.maxWords) return this.decide('machine', 'max_words');
    if (this.inWord && this.wordMs >= s.maxWordMs) return this.decide('machine', 'long_word');
    if (this.heardVoice && this.silenceMs >= s.afterGreetingSilenceMs) return this.decide('human', 'after_greeting_silence');
    if (this.heardMs >= s.totalAnalysisMs) return this.decide('unknown', 'too_long');
    return undefined;
  }

  private decide(verdict: AnsweringMachineVerdict, reason: AnsweringMachineReason): AnsweringMachineResult {
    const beepAt = this.beeps.beepAt;
    this.result = {
      verdict,
      reason,
      greetingMs: Math.round(this.heardVoice ? this.voiceMs : 0),
      words: this.words,
      decidedAtMs: Math.round(this.heardMs),
      ...(beepAt !== undefined ? { beepAt: Math.round(beepAt) } : {}),
    };
    return this.result;
  }

  /** Sliding-window minimum of the frame levels: the line's noise floor. */
  private trackFloor(level: number): number {
    const q = this.quietest;
    while (q.length > 0 && q[q.length - 1].level >= level) q.pop();
    q.push({ at: this.heardMs, level });
    while (q[0].at <= this.heardMs - NOISE_WINDOW_MS) q.shift();
    return q[0]?.level ?? SILENCE_DBFS;
  }
}

/** The verdict on a whole recording (tests, benchmarks): frames pushed until one decides, else unknown at the end. */
export function detectAnsweringMachine(frames: Iterable<PcmFrame>, settings: Partial<AnsweringMachineSettings> = {}): AnsweringMachineResult {
  const detector = new AnsweringMachineDetector(settings);
  for (const frame of frames) {
    const result = detector.push(frame);
    if (result) return result;
  }
  return {
    verdict: 'unknown',
    reason: 'too_long',
    greetingMs: 0,
    words: 0,
    decidedAtMs: Math.round(detector.heardMs),
    ...(detector.beepAt !== undefined ? { beepAt: Math.round(detector.beepAt) } : {}),
  };
}
