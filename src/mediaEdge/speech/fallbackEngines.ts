/**
 * A cloud engine (or Piper) with the offline one behind it, per call. When the cloud engine fails an
 * utterance or a line (refused, unreachable, closed mid-stream, no answer in time: its
 * adapter bounds every wait), the same work is tried once more on it; when that fails too,
 * the offline engine does the work, and does all of the call's work from then on (a call
 * does not keep paying a dead engine's timeouts). The switch is reported once per call and
 * stage (`onFailover`), which the edge turns into a System Note on the call.
 *
 * An utterance is replayed from the start into the retry and the offline engine (its frames
 * are kept until it is answered). A line that fails after some of its audio was played is
 * said again from its start: the engines cannot say where the other one stopped.
 */
import type { PcmFrame } from '../media/channel.js';
import type { AnswerHint, RecognitionSession, SpeechRecognizer, SpeechSynthesizer, SynthesisOptions, Transcript } from './interfaces.js';
import { speechEngineErrors } from '../../metrics/edgeMetrics.js';

/** One call's switch from a failed engine to the offline one. */
export interface EngineFailover {
  stage: 'recognition' | 'synthesis';
  /** The engine that failed twice (e.g. deepgram). */
  failed: string;
  /** The engine that took over for the rest of the call (e.g. pocketsphinx). */
  fallback: string;
  /** What the second failure said. */
  error: string;
}

export type FailoverListener = (failover: EngineFailover) => void;

export interface FallbackSynthesizerOptions {
  /**
   * Times a failed line is asked for again from the first engine before the offline one
   * takes over (default 1). Piper tries each failed sentence once more itself, so behind it
   * this is 0: still one retry in all.
   */
  retries?: number;
  /** Whether an error is the engine failing (default: every error); others fail the line as they are. */
  isEngineFailure?: (err: unknown) => boolean;
}

/** The text of the System Note for a failover. */
export function failoverNote(failover: EngineFailover): string {
  const what = failover.stage === 'recognition' ? 'speech recognition' : 'speech synthesis';
  return `The ${what} engine ${failover.failed} failed twice (${failover.error}); ${failover.fallback} took over for the rest of the call.`;
}

export class FallbackRecognizer implements SpeechRecognizer {
  readonly name: string;
  private failedOver = false;

  constructor(
    private readonly primary: SpeechRecognizer,
    private readonly offline: SpeechRecognizer,
    private readonly onFailover: FailoverListener,
  ) {
    this.name = primary.name;
  }

  /** The engine that hears the call's utterances now. */
  get current(): SpeechRecognizer {
    return this.failedOver ? this.offline : this.primary;
  }

  start(options: { hint?: AnswerHint; signal?: AbortSignal } = {}): RecognitionSession {
    if (this.failedOver) return this.offline.start(options);
    return new FallbackSession(this, options);
  }

  /** The shared engines are the edge's to warm up and close. */
  async warmUp(): Promise<void> {}
  async close(): Promise<void> {}

  /** @internal A session's attempt on the cloud engine, or on the offline one once failed over. */
  open(options: { hint?: AnswerHint; signal?: AbortSignal }, engine: 'primary' | 'offline'): RecognitionSession {
    return (engine === 'primary' && !this.failedOver ? this.primary : this.offline).start(options);
  }

  /** @internal */
  get hasFailedOver(): boolean {
    return this.failedOver;
  }

  /** @internal */
  failOver(err: unknown): void {
    if (this.failedOver) return;
    this.failedOver = true;
    speechEngineErrors.inc({ stage: 'recognition', engine: this.primary.name });
    this.onFailover({ stage: 'recognition', failed: this.primary.name, fallback: this.offline.name, error: (err as Error)?.message ?? String(err) });
  }
}

class FallbackSession implements RecognitionSession {
  private readonly frames: PcmFrame[] = [];
  private readonly partialListeners = new Set<(text: string) => void>();
  private current: RecognitionSession;
  private unsubscribe: () => void;
  private aborted = false;

  constructor(
    private readonly owner: FallbackRecognizer,
    private readonly options: { hint?: AnswerHint; signal?: AbortSignal },
  ) {
    this.current = owner.open(options, 'primary');
    this.unsubscribe = this.forwardPartials(this.current);
  }

  write(frame: PcmFrame): void {
    this.frames.push(frame);
    this.current.write(frame);
  }

  onPartial(listener: (text: string) => void): () => void {
    this.partialListeners.add(listener);
    return () => this.partialListeners.delete(listener);
  }

  requestPartial(): boolean {
    return this.current.requestPartial?.() ?? false;
  }

  async finish(): Promise<Transcript> {
    let failure: unknown;
    try {
      return await this.current.finish();
    } catch (err) {
      if (this.aborted) throw err;
      failure = err;
    }
    // Once more on the cloud engine, unless another utterance of the call already gave up on it.
    if (!this.owner.hasFailedOver) {
      try {
        return await this.replayOn('primary');
      } catch (err) {
        if (this.aborted) throw err;
        failure = err;
      }
      this.owner.failOver(failure);
    }
    return this.replayOn('offline');
  }

  abort(): void {
    this.aborted = true;
    this.frames.length = 0;
    this.unsubscribe();
    this.current.abort();
  }

  /** A new session on `engine`, given the utterance so far, finished. */
  private replayOn(engine: 'primary' | 'offline'): Promise<Transcript> {
    this.unsubscribe();
    this.current.abort();
    this.current = this.owner.open(this.options, engine);
    this.unsubscribe = this.forwardPartials(this.current);
    for (const frame of this.frames) this.current.write(frame);
    return this.current.finish();
  }

  private forwardPartials(session: RecognitionSession): () => void {
    return session.onPartial((text) => {
      for (const listener of this.partialListeners) listener(text);
    });
  }
}

export class FallbackSynthesizer implements SpeechSynthesizer {
  readonly name: string;
  private failedOver = false;

  private readonly attempts: number;
  private readonly isEngineFailure: (err: unknown) => boolean;

  constructor(
    private readonly primary: SpeechSynthesizer,
    private readonly offline: SpeechSynthesizer,
    private readonly onFailover: FailoverListener,
    options: FallbackSynthesizerOptions = {},
  ) {
    this.name = primary.name;
    this.attempts = 1 + (options.retries ?? 1);
    this.isEngineFailure = options.isEngineFailure ?? (() => true);
  }

  /** The engine that speaks the call's lines now. */
  get current(): SpeechSynthesizer {
    return this.failedOver ? this.offline : this.primary;
  }

  async *synthesize(text: string, options: SynthesisOptions = {}): AsyncIterable<PcmFrame> {
    if (!this.failedOver) {
      let failure: unknown;
      for (let attempt = 1; attempt <= this.attempts; attempt++) {
        try {
          yield* this.primary.synthesize(text, options);
          return;
        } catch (err) {
          if (options.signal?.aborted) return;
          if (!this.isEngineFailure(err)) throw err;
          failure = err;
        }
        if (this.failedOver) break; // another line of the call gave up meanwhile
      }
      if (!this.failedOver) {
        this.failedOver = true;
        speechEngineErrors.inc({ stage: 'synthesis', engine: this.primary.name });
        this.onFailover({ stage: 'synthesis', failed: this.primary.name, fallback: this.offline.name, error: (failure as Error)?.message ?? String(failure) });
      }
    }
    yield* this.offline.synthesize(text, options);
  }

  /** The shared engines are the edge's to warm up and close. */
  async warmUp(): Promise<void> {}
  async close(): Promise<void> {}
}
