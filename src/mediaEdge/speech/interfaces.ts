/**
 * The two speech stages of the media edge, behind interfaces so engines can be swapped
 * (offline ones from Debian packages today, cloud ones later; docs/media-edge.md, "Speech
 * engines"). Both speak the channel's format: 20 ms frames of 16 kHz mono 16-bit PCM.
 */
import type { PcmFrame } from '../media/channel.js';

export interface SynthesisOptions {
  signal?: AbortSignal;
  /**
   * The call the line is for (any value that stands for it: its conversation engine). An
   * engine shared by the edge's calls queues each call's lines apart and lets the calls take
   * turns; without it the line counts as a call of its own.
   */
  call?: object | string;
}

/** Text → agent audio. */
export interface SpeechSynthesizer {
  readonly name: string;
  /**
   * The audio of `text` as 20 ms frames, streamed: the first frames come as soon as the
   * engine has them, before the whole text is synthesised. Aborting `signal` ends the
   * iteration early (without an error); so does breaking out of the loop.
   */
  synthesize(text: string, options?: SynthesisOptions): AsyncIterable<PcmFrame>;
  /** Loads what the first synthesis would otherwise wait for (a voice, a connection). */
  warmUp(): Promise<void>;
  /** Stops the engine's processes or connections; the synthesizer is unusable afterwards. */
  close(): Promise<void>;
}

/**
 * What kind of answer is expected: the ask step's `expect`. `text` is the same as `free`,
 * `number` takes digit sequences and spoken numbers.
 */
export type AnswerExpectation = 'yes_no' | 'digits' | 'number' | 'date' | 'name' | 'free' | 'text';

/** How the recogniser should hear an answer: the kind, and the phrases it is likely to be. */
export interface AnswerHint {
  expect: AnswerExpectation;
  phrases?: readonly string[];
  /** How the caller may answer: spoken, keyed on the keypad, or either (default). The conversation engine's concern, not a recogniser's. */
  input?: AnswerInput;
  /**
   * `low`: the answer waits on nothing but the text (a caller's turn in a model conversation),
   * so an engine that can answer sooner at some cost in accuracy does (pocketsphinx: one pruned
   * decoding pass, docs/speech.md); others ignore it.
   */
  latency?: 'low';
}

/** An ask step's `input`: which of speech and keypad digits answer it. */
export type AnswerInput = 'dtmf' | 'speech' | 'both';

export interface Transcript {
  /** Lower-case words as recognised, "" when nothing was. */
  text: string;
  /** True when no recogniser was free in time, so the utterance was not heard at all (text is ""). */
  busy?: boolean;
}

/** One utterance being recognised: audio in, text out. */
export interface RecognitionSession {
  /** The next frame of the caller's audio (in order, from just before the speech began). */
  write(frame: PcmFrame): void;
  /** Text recognised so far, when the engine can tell before the end. */
  onPartial(listener: (text: string) => void): () => void;
  /**
   * Asks for the text so far now (the caller has paused); true when it will come to the
   * `onPartial` listeners (unless nothing was recognised yet), false when the engine cannot
   * tell now. Engines whose partial text streams unasked need not have it.
   */
  requestPartial?(): boolean;
  /** No more audio: resolves with the final text. */
  finish(): Promise<Transcript>;
  /** Drops the utterance and frees what the session holds; finish() then rejects. Idempotent. */
  abort(): void;
}

/** Caller audio → text. */
export interface SpeechRecognizer {
  readonly name: string;
  /**
   * Opens a session at once, so the engine can get ready (load its model) while the
   * prompt still plays; audio written before it is ready is buffered.
   */
  start(options?: { hint?: AnswerHint; signal?: AbortSignal }): RecognitionSession;
  /** Loads what the first session would otherwise wait for (dictionaries, models). */
  warmUp(): Promise<void>;
  /** Aborts open sessions and frees the engine; unusable afterwards. */
  close(): Promise<void>;
}
