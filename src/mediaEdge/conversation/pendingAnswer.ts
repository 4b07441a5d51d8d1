/**
 * One answer the engine is waiting for: a recognition session opened ahead of the
 * caller's speech, fed the utterance the endpointer delimits, and the no-speech timer.
 * Speech that recognises as nothing (a cough, a door) does not count: a fresh session
 * waits for the next utterance, until the timer runs out.
 */
import type { EndpointEvent } from '../audio/endpointing.js';
import type { PcmFrame } from '../media/channel.js';
import type { AnswerHint, RecognitionSession, SpeechRecognizer } from '../speech/interfaces.js';

export type ListenResult =
  | {
      kind: 'utterance';
      text: string;
      /** When the caller's speech ended (engine clock, ms). */
      speechEndedAt: number;
      /** When the text was known. */
      recognisedAt: number;
      /** recognisedAt − speechEndedAt: the endpointing hangover plus the recogniser's finalisation. */
      recognitionMs: number;
      /** The answer was keyed on the keypad (`text` is the digits), not spoken. */
      keyed?: true;
    }
  | { kind: 'silence' };

export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

export interface PendingAnswerOptions {
  recognizer: SpeechRecognizer;
  hint: AnswerHint | undefined;
  now: () => number;
  signal: AbortSignal | undefined;
  /** The utterance so far, when the caller is already speaking. */
  speechSoFar: readonly PcmFrame[] | undefined;
  /** `endDetectedAt`: when the endpointer decided the speech had ended (its hangover after `speechEndedAt`). */
  onUtterance: (heard: { speechEndedAt: number; endDetectedAt: number; recognisedAt: number }) => void;
  /** The recogniser's text so far, while the caller speaks (recognisers that can tell before the end). */
  onPartial?: (text: string) => void;
  /**
   * The caller paused (the endpointer's `speech_pause`) and this is what the recogniser made
   * of the answer so far; the caller may yet go on. Once per pause, when the recogniser can tell.
   */
  onPause?: (textSoFar: string) => void;
  onDone: () => void;
}

export class PendingAnswer {
  readonly result: Promise<ListenResult>;
  private session: RecognitionSession;
  private state: 'waiting' | 'hearing' | 'recognising' | 'done' = 'waiting';
  private deadline: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private resolve!: (result: ListenResult) => void;
  private reject!: (err: Error) => void;
  private readonly onAbort = () => this.cancel(abortReason(this.options.signal!));
  /** The recogniser's latest text of the utterance being heard. */
  private partial = '';
  /** A pause asked the recogniser for its text so far: the next partial text answers it. */
  private pauseAsked = false;

  constructor(private readonly options: PendingAnswerOptions) {
    this.result = new Promise<ListenResult>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.result.catch(() => undefined); // the caller may have stopped waiting (its prompt failed)
    this.session = this.openSession();
    options.signal?.addEventListener('abort', this.onAbort);
    if (options.speechSoFar) this.startHearing(options.speechSoFar);
  }

  /** Starts counting the no-speech timeout (from now). */
  startNoSpeechTimer(timeoutMs: number): void {
    if (this.state === 'done') return;
    this.deadline = this.options.now() + timeoutMs;
    if (this.state === 'waiting') this.arm(timeoutMs);
  }

  /** A frame of the utterance in progress. */
  write(frame: PcmFrame): void {
    if (this.state === 'hearing') this.session.write(frame);
  }

  onSpeech(event: EndpointEvent, utterance: readonly PcmFrame[]): void {
    if (event.type === 'speech_start' && this.state === 'waiting') this.startHearing(utterance);
    else if (event.type === 'speech_pause' && this.state === 'hearing') this.paused();
    else if (event.type === 'speech_end' && this.state === 'hearing') {
      this.state = 'recognising';
      void this.recognise(event.at, event.detectedAt);
    }
  }

  cancel(err: Error): void {
    if (this.state === 'done') return;
    this.session.abort();
    this.settle();
    this.reject(err);
  }

  private openSession(): RecognitionSession {
    const session = this.options.recognizer.start({ hint: this.options.hint });
    const { onPartial, onPause } = this.options;
    if (onPartial || onPause) {
      session.onPartial((text) => {
        if (this.state !== 'hearing' || this.session !== session) return;
        this.partial = text;
        onPartial?.(text);
        if (!this.pauseAsked) return;
        this.pauseAsked = false;
        onPause?.(text);
      });
    }
    return session;
  }

  /** The caller paused: the text so far to `onPause`, asked of the recogniser if it can tell now, else its latest partial text. */
  private paused(): void {
    const { onPause } = this.options;
    if (!onPause) return;
    this.pauseAsked = true;
    if (this.session.requestPartial?.()) return;
    this.pauseAsked = false;
    if (this.partial) onPause(this.partial);
  }

  private startHearing(utterance: readonly PcmFrame[]): void {
    this.state = 'hearing';
    this.partial = '';
    this.pauseAsked = false;
    clearTimeout(this.timer);
    for (const frame of utterance) this.session.write(frame);
  }

  private async recognise(speechEndedAt: number, endDetectedAt: number): Promise<void> {
    let text: string;
    try {
      text = (await this.session.finish()).text.trim();
    } catch (err) {
      if (this.state !== 'done') {
        this.settle();
        this.reject(err as Error);
      }
      return;
    }
    if (this.state === 'done') return;
    if (text) {
      const recognisedAt = this.options.now();
      this.settle();
      this.options.onUtterance({ speechEndedAt, endDetectedAt, recognisedAt });
      this.resolve({ kind: 'utterance', text, speechEndedAt, recognisedAt, recognitionMs: recognisedAt - speechEndedAt });
      return;
    }
    // Nothing recognised: a noise. Listen again for what time is left.
    this.session = this.openSession();
    this.state = 'waiting';
    if (this.deadline !== undefined) this.arm(this.deadline - this.options.now());
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.state !== 'waiting') return;
      this.session.abort();
      this.settle();
      this.resolve({ kind: 'silence' });
    }, Math.max(0, ms));
  }

  private settle(): void {
    this.state = 'done';
    clearTimeout(this.timer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.options.onDone();
  }
}
