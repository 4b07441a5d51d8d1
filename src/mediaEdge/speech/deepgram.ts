/**
 * Deepgram live recognition (STT_PROVIDER=deepgram): one WebSocket to /v1/listen per
 * utterance, opened when the session starts (while the prompt plays), the caller's audio
 * sent as it comes as raw linear16 at 16 kHz mono, and a CloseStream when the edge's
 * endpointer says the utterance ended; Deepgram then sends its last final Results and a
 * Metadata message and closes. The answer is the finals joined. docs/speech.md, "Deepgram".
 *
 * Keywords from the ask step's hint ride in the query: `keyterm` (one per phrase) for
 * nova-3, `keywords` (one per word) for older models. A refused handshake (401 on a bad key,
 * with Deepgram's dg-error header), a close before the answer, or no answer in time makes
 * finish() reject with a CloudSpeechError; the fallback engine (fallbackEngines.ts) then
 * retries once and hands the call to the offline recogniser.
 */
import type WebSocket from 'ws';
import { int16ToLittleEndian } from '../audio/wav.js';
import type { PcmFrame } from '../media/channel.js';
import { SAMPLE_RATE } from '../media/channel.js';
import { phraseWords } from './grammar.js';
import type { AnswerHint, RecognitionSession, SpeechRecognizer, Transcript } from './interfaces.js';
import { CloudSpeechError, openVendorSocket, vendorUrl } from './vendorSocket.js';

export const DEEPGRAM_DEFAULT_BASE_URL = 'wss://api.deepgram.com';
export const DEEPGRAM_DEFAULT_MODEL = 'nova-3';
/** Deepgram's own end-of-speech silence (speech_final); the edge's endpointer ends the turn, this only shapes its finals. */
export const DEEPGRAM_ENDPOINTING_MS = 300;
/**
 * Deepgram closes a stream that gets no audio for about 10 s (NET-0001), and a session opens
 * as the prompt starts: a KeepAlive goes out whenever no audio has for this long.
 */
export const DEEPGRAM_KEEPALIVE_MS = 4_000;
/** Deepgram's keyterm budget is counted in tokens; a few dozen phrases is plenty for one answer. */
export const DEEPGRAM_MAX_KEYTERMS = 50;
/** And a bound on their length, so a long phrase list cannot make the URL huge (about 500 tokens is Deepgram's own limit). */
export const DEEPGRAM_MAX_KEYTERM_CHARS = 1_000;

/** The first terms that fit both bounds. */
function boundedTerms(terms: string[]): string[] {
  const kept: string[] = [];
  let chars = 0;
  for (const term of terms) {
    if (kept.length >= DEEPGRAM_MAX_KEYTERMS || chars + term.length > DEEPGRAM_MAX_KEYTERM_CHARS) break;
    kept.push(term);
    chars += term.length;
  }
  return kept;
}

/** The wire format: what /v1/listen sends back (the fields the adapter reads). */
export interface DeepgramResults {
  type: 'Results';
  channel: { alternatives: { transcript: string; confidence?: number }[] };
  is_final?: boolean;
  speech_final?: boolean;
  from_finalize?: boolean;
  start?: number;
  duration?: number;
}
export interface DeepgramMetadata {
  type: 'Metadata';
  request_id: string;
}
export type DeepgramMessage = DeepgramResults | DeepgramMetadata | { type: 'SpeechStarted' | 'UtteranceEnd' };
/** The control messages the adapter sends. */
export type DeepgramControl = { type: 'CloseStream' } | { type: 'Finalize' } | { type: 'KeepAlive' };

export interface DeepgramOptions {
  apiKey: string;
  /** ws(s):// origin (and path prefix) of the API; default Deepgram's. */
  baseUrl?: string;
  model?: string;
  connectTimeoutMs: number;
  /** From the end of the utterance (CloseStream) to Deepgram's answer. */
  answerTimeoutMs: number;
  /** Silence on the stream after which a KeepAlive is sent (default DEEPGRAM_KEEPALIVE_MS). */
  keepAliveMs?: number;
}

/** Words a kind of answer is made of, boosted when the model takes single keywords. */
const EXPECT_WORDS: Partial<Record<AnswerHint['expect'], string[]>> = {
  yes_no: ['yes', 'no'],
  digits: ['zero', 'oh', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'],
  date: ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'],
};

/** The /v1/listen query for a hint. */
export function deepgramQuery(model: string, hint: AnswerHint | undefined): URLSearchParams {
  const query = new URLSearchParams({
    model,
    encoding: 'linear16',
    sample_rate: String(SAMPLE_RATE),
    channels: '1',
    interim_results: 'true',
    endpointing: String(DEEPGRAM_ENDPOINTING_MS),
    punctuate: 'false',
    smart_format: 'false',
  });
  const phrases = (hint?.phrases ?? []).map((phrase) => phraseWords(phrase)).filter((words) => words.length > 0);
  if (model.startsWith('nova-3')) {
    // Keyterm prompting takes whole phrases.
    const terms = [...new Set([...phrases.map((words) => words.join(' ')), ...(hint ? (EXPECT_WORDS[hint.expect] ?? []) : [])])];
    for (const term of boundedTerms(terms)) query.append('keyterm', term);
  } else {
    // Keyword boosting takes single words.
    const words = [...new Set([...phrases.flat(), ...(hint ? (EXPECT_WORDS[hint.expect] ?? []) : [])])];
    for (const word of boundedTerms(words)) query.append('keywords', word);
  }
  return query;
}

/** A transcript as the edge's readers expect it: lower case, words and digits only. */
function normalise(transcript: string): string {
  return transcript
    .toLowerCase()
    .replace(/[^a-z0-9' -]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

export class DeepgramRecognizer implements SpeechRecognizer {
  readonly name = 'deepgram';
  private readonly sessions = new Set<DeepgramSession>();

  constructor(private readonly options: DeepgramOptions) {}

  start(options: { hint?: AnswerHint; signal?: AbortSignal } = {}): RecognitionSession {
    const session = new DeepgramSession(this.options, options.hint, () => this.sessions.delete(session));
    this.sessions.add(session);
    if (options.signal) {
      if (options.signal.aborted) session.abort();
      else options.signal.addEventListener('abort', () => session.abort(), { once: true });
    }
    return session;
  }

  /** Nothing to load: a connection is made per utterance (and a check at start-up would spend the account's time). */
  async warmUp(): Promise<void> {}

  async close(): Promise<void> {
    for (const session of this.sessions) session.abort();
  }
}

class DeepgramSession implements RecognitionSession {
  private readonly socket: WebSocket;
  private open = false;
  private readonly pending: Buffer[] = [];
  private readonly finals: string[] = [];
  private interim = '';
  private readonly partialListeners = new Set<(text: string) => void>();
  private failure: Error | undefined;
  private finishing = false;
  private done = false;
  private answerTimer: NodeJS.Timeout | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private lastSentAt = 0;
  private settle: { resolve: (t: Transcript) => void; reject: (e: Error) => void } | undefined;
  private readonly answer: Promise<Transcript>;

  constructor(
    private readonly options: DeepgramOptions,
    hint: AnswerHint | undefined,
    private readonly onEnd: () => void,
  ) {
    this.answer = new Promise<Transcript>((resolve, reject) => (this.settle = { resolve, reject }));
    this.answer.catch(() => undefined); // finish() hands it out; an unused session's failure is not unhandled
    const url = vendorUrl(options.baseUrl ?? DEEPGRAM_DEFAULT_BASE_URL, '/v1/listen', deepgramQuery(options.model ?? DEEPGRAM_DEFAULT_MODEL, hint));
    const { socket, opened } = openVendorSocket({
      vendor: 'Deepgram',
      url,
      headers: { Authorization: `Token ${options.apiKey}` },
      connectTimeoutMs: options.connectTimeoutMs,
      errorHeaders: ['dg-error'],
    });
    this.socket = socket;
    opened.then(
      () => {
        this.open = true;
        for (const bytes of this.pending.splice(0)) socket.send(bytes);
        this.lastSentAt = Date.now();
        if (this.finishing) this.closeStream();
        else this.keepStreamAlive();
      },
      (err: Error) => this.fail(err),
    );
    socket.on('message', (data, isBinary) => {
      if (!isBinary) this.receive(String(data));
    });
    socket.on('close', (code, reason) => {
      if (this.finishing && (code === 1000 || code === 1005)) this.succeed();
      else if (this.open) this.fail(new CloudSpeechError('Deepgram', `the stream closed before the answer (${code}${reason.length ? ` ${String(reason)}` : ''})`));
    });
  }

  write(frame: PcmFrame): void {
    if (this.done || this.finishing) return;
    const bytes = int16ToLittleEndian(frame);
    if (!this.open) {
      this.pending.push(bytes);
      return;
    }
    this.socket.send(bytes);
    this.lastSentAt = Date.now();
  }

  onPartial(listener: (text: string) => void): () => void {
    this.partialListeners.add(listener);
    return () => this.partialListeners.delete(listener);
  }

  finish(): Promise<Transcript> {
    if (!this.finishing && !this.done) {
      this.finishing = true;
      // Not open yet: CloseStream goes once it is (the connect timeout bounds the wait).
      if (this.open) this.closeStream();
    }
    return this.answer;
  }

  abort(): void {
    this.fail(new Error('recognition aborted'));
  }

  /** While the prompt plays and nobody speaks, the stream gets KeepAlives instead of audio. */
  private keepStreamAlive(): void {
    const every = this.options.keepAliveMs ?? DEEPGRAM_KEEPALIVE_MS;
    this.keepAlive = setInterval(() => {
      if (this.done || this.finishing || Date.now() - this.lastSentAt < every) return;
      this.send({ type: 'KeepAlive' });
      this.lastSentAt = Date.now();
    }, Math.max(10, Math.floor(every / 4)));
  }

  /** No more audio: Deepgram answers with its last finals, Metadata, and a close. */
  private closeStream(): void {
    clearInterval(this.keepAlive);
    this.send({ type: 'CloseStream' });
    this.answerTimer = setTimeout(
      () => this.fail(new CloudSpeechError('Deepgram', `no answer within ${this.options.answerTimeoutMs} ms of the end of speech`)),
      this.options.answerTimeoutMs,
    );
  }

  private send(message: DeepgramControl): void {
    this.socket.send(JSON.stringify(message));
  }

  private receive(text: string): void {
    let message: DeepgramMessage;
    try {
      message = JSON.parse(text) as DeepgramMessage;
    } catch {
      return;
    }
    if (message.type === 'Results') {
      const transcript = normalise(message.channel?.alternatives?.[0]?.transcript ?? '');
      if (message.is_final) {
        if (transcript) this.finals.push(transcript);
        this.interim = '';
      } else {
        this.interim = transcript;
      }
      const partial = [...this.finals, this.interim].filter(Boolean).join(' ');
      if (partial) for (const listener of this.partialListeners) listener(partial);
    } else if (message.type === 'Metadata' && this.finishing) {
      // Deepgram's last word after CloseStream: every final has come.
      this.succeed();
    }
  }

  private succeed(): void {
    if (this.done) return;
    this.end();
    this.settle!.resolve({ text: this.finals.join(' ') });
  }

  private fail(err: Error): void {
    if (this.done) return;
    this.failure = err;
    this.end();
    this.socket.terminate();
    this.settle!.reject(err);
  }

  private end(): void {
    this.done = true;
    clearTimeout(this.answerTimer);
    clearInterval(this.keepAlive);
    this.pending.length = 0;
    if (!this.failure && this.socket.readyState === this.socket.OPEN) this.socket.close(1000);
    this.onEnd();
  }
}
