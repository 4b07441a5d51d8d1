/**
 * The offline free-form recogniser (STT_PROVIDER=whisper): Whisper tiny.en run by
 * faster-whisper in warm Python worker processes (whisper_worker.py, in the speech venv
 * the bootstrap installs). A worker loads the model once (a few seconds) and then answers
 * one utterance at a time, so the edge keeps a small pool (WHISPER_WORKERS) started with
 * the edge, never a process per utterance.
 *
 * A session buffers the caller's audio (Whisper reads whole utterances, it has no partial
 * results) and sends it when the utterance ends. Utterances wait in one queue, in order,
 * for the next free worker; at most WHISPER_MAX_QUEUED wait beyond those being recognised,
 * and an utterance over that bound is answered busy with no text at once (the conversation
 * engine hears it as nothing heard; the workflow asks again). A worker that dies fails the
 * utterance it held and is started again; while no worker can start, queued utterances
 * fail rather than wait. A failed utterance is answered busy too, not with an error: an
 * error would end the call (the edge's activity fails and the call ends as dropout), where
 * busy loses one answer and the step asks again. The pool's `stats` count the failures and
 * keep the last one.
 *
 * Framing of the pipe: whisper_worker.py's docstring and docs/speech.md, "Whisper".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { int16ToLittleEndian } from '../audio/wav.js';
import { stopProcess } from './engineProcess.js';
import { grammarFor } from './grammar.js';
import { recognitionQueues } from '../../metrics/edgeMetrics.js';
import type { AnswerHint, RecognitionSession, SpeechRecognizer, Transcript } from './interfaces.js';

export const WHISPER_WORKER_SCRIPT = fileURLToPath(new URL('./whisper_worker.py', import.meta.url));
/** Worker processes (WHISPER_WORKERS): each holds the model (~370 MB) and uses about one core while it recognises. */
export const WHISPER_DEFAULT_WORKERS = 1;
/** Utterances waiting for a worker beyond those being recognised (WHISPER_MAX_QUEUED). */
export const WHISPER_DEFAULT_MAX_QUEUED = 8;
/** CPU threads of each worker's model (WHISPER_THREADS). */
export const WHISPER_DEFAULT_THREADS = 1;
/** Whisper reads 30 s windows: audio past this is not sent (an utterance is far shorter). */
const MAX_UTTERANCE_SAMPLES = 30 * SAMPLE_RATE;
/** Restarting a worker that keeps failing waits this long, doubling up to the maximum. */
const RESTART_FIRST_DELAY_MS = 250;
const RESTART_MAX_DELAY_MS = 10_000;
/** The model loads in about a second on a quiet machine; a worker not ready by then is stuck. */
const READY_TIMEOUT_MS = 120_000;

/** How the hint becomes Whisper's initial prompt. */
export type WhisperPromptMode = 'grammar' | 'phrases' | 'none';
/**
 * WHISPER_PROMPT's default: the phrases only. The grammar's word list as a prompt made
 * telephone-band yes/no and dates worse ("no" written "know", or nothing), where the
 * phrases win every name (docs/speech.md, "Recommendation per expect and band").
 */
export const WHISPER_DEFAULT_PROMPT: WhisperPromptMode = 'phrases';

export interface WhisperOptions {
  /** The speech venv's python. */
  python: string;
  script?: string;
  workers?: number;
  maxQueued?: number;
  threads?: number;
  /**
   * `grammar`: the hint's phrases, and for constrained answers (yes_no, digits, number,
   * date) the words of the grammar pocketsphinx would use; `phrases` (default): the hint's
   * phrases only; `none`: no prompt.
   */
  prompt?: WhisperPromptMode;
  /** Extra arguments for the worker (tests: --model). */
  workerArgs?: string[];
}

/** A worker failed: the utterance it held, or one that found no worker able to start. */
export class WhisperWorkerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WhisperWorkerError';
  }
}

/** The initial prompt for a hint, or undefined. */
export function whisperPrompt(hint: AnswerHint | undefined, mode: WhisperPromptMode): string | undefined {
  if (!hint || mode === 'none') return undefined;
  const phrases = (hint.phrases ?? []).map((p) => p.trim()).filter(Boolean);
  const constrained = hint.expect === 'yes_no' || hint.expect === 'digits' || hint.expect === 'number' || hint.expect === 'date';
  const words = mode === 'grammar' && constrained ? (grammarFor({ expect: hint.expect })?.words ?? []) : [];
  const prompt = [...phrases, ...words].join(', ');
  // Whisper keeps the last ~220 tokens of a prompt; the phrases come first and are kept whole.
  return prompt ? prompt.slice(0, 800) : undefined;
}

/**
 * Whisper's text as the recognisers write it: lower case, words and numbers, no sentence
 * punctuation. Punctuation inside a number or word stays ("555-1234", "1,200", "3.5",
 * "3:30", "4/3/1985", "twenty-one", "o'clock").
 */
export function normaliseWhisperText(text: string): string {
  const lowered = text.toLowerCase().replace(/’/g, "'");
  const alphanumeric = /[\p{L}\d]/u;
  return lowered
    .replace(/[^\p{L}\d\s]/gu, (mark: string, at: number) => {
      const before = lowered[at - 1] ?? '';
      const after = lowered[at + 1] ?? '';
      if (/\d/.test(before) && /\d/.test(after) && ',.:/-'.includes(mark)) return mark;
      if (alphanumeric.test(before) && alphanumeric.test(after) && "'-".includes(mark)) return mark;
      return ' ';
    })
    .split(/\s+/)
    .filter(Boolean)
    .join(' ');
}

interface Job {
  pcm: Buffer;
  prompt: string | undefined;
  resolve: (text: string) => void;
  reject: (err: Error) => void;
  /** The session gave up on it: its answer is dropped. */
  dropped: boolean;
}

/** One worker process and the utterance it is recognising. */
class WhisperWorker {
  readonly child: ChildProcess;
  ready = false;
  job: Job | undefined;
  private nextId = 1;
  private stdout = '';
  private stderr = '';
  readonly readyOrFailed: Promise<void>;

  constructor(
    python: string,
    args: string[],
    private readonly onAnswer: (worker: WhisperWorker) => void,
    private readonly onRecognised: (ms: number, cpuMs: number) => void,
    onExit: (worker: WhisperWorker, reason: string) => void,
  ) {
    // spawns: python
    this.child = spawn(python, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, HF_HUB_OFFLINE: '1', PYTHONUNBUFFERED: '1' } });
    this.child.stdin!.on('error', () => undefined); // a dead worker is reported by its exit
    let markReady!: () => void;
    let failStart!: (err: Error) => void;
    this.readyOrFailed = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    void this.readyOrFailed.catch(() => undefined);
    const timer = setTimeout(() => {
      failStart(new WhisperWorkerError(`whisper worker was not ready after ${READY_TIMEOUT_MS / 1000} s`));
      this.child.kill('SIGKILL');
    }, READY_TIMEOUT_MS);
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => {
      this.stdout += chunk;
      let newline: number;
      while ((newline = this.stdout.indexOf('\n')) >= 0) {
        const line = this.stdout.slice(0, newline);
        this.stdout = this.stdout.slice(newline + 1);
        this.answer(line, () => {
          clearTimeout(timer);
          markReady();
        });
      }
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => (this.stderr = (this.stderr + chunk).slice(-4000)));
    this.child.once('error', (err) => {
      clearTimeout(timer);
      failStart(new WhisperWorkerError(`whisper worker could not start: ${err.message}`));
    });
    this.child.once('close', (code, signal) => {
      clearTimeout(timer);
      const reason = `whisper worker exited (${signal ?? `code ${code}`})${this.lastError()}`;
      failStart(new WhisperWorkerError(reason));
      onExit(this, reason);
    });
  }

  /** Sends an utterance; the worker must be ready and idle. */
  send(job: Job): void {
    this.job = job;
    const header = Buffer.from(JSON.stringify({ id: this.nextId++, prompt: job.prompt ?? null, pcm_bytes: job.pcm.length }), 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32LE(header.length, 0);
    this.child.stdin!.write(Buffer.concat([length, header, job.pcm]));
  }

  private answer(line: string, onReady: () => void): void {
    let message: { ready?: boolean; text?: string; error?: string; ms?: number; cpu_ms?: number };
    try {
      message = JSON.parse(line) as typeof message;
    } catch {
      this.stderr = `${this.stderr}\n${line}`.slice(-4000); // not an answer: kept for the error message
      return;
    }
    if (message.ready) {
      this.ready = true;
      onReady();
      return;
    }
    const job = this.job;
    this.job = undefined;
    if (job) {
      if (typeof message.error === 'string') job.reject(new WhisperWorkerError(`whisper worker failed the utterance: ${message.error}`));
      else {
        this.onRecognised(message.ms ?? 0, message.cpu_ms ?? 0);
        job.resolve(typeof message.text === 'string' ? message.text : '');
      }
    }
    this.onAnswer(this);
  }

  private lastError(): string {
    const lines = this.stderr.trim().split('\n').filter(Boolean);
    return lines.length ? `: ${lines.slice(-3).join(' | ')}` : '';
  }
}

/** The worker processes and the queue of utterances waiting for them. */
export class WhisperPool {
  private readonly workers: (WhisperWorker | undefined)[];
  private readonly queue: Job[] = [];
  private closed = false;
  private started = false;
  private readonly restartTimers = new Set<NodeJS.Timeout>();
  /** Consecutive start failures per worker slot (the restart delay grows with them). */
  private readonly failures: number[];
  private lastStartError: Error | undefined;
  /**
   * Utterances answered busy for a full queue, worker restarts, the most utterances waiting
   * at once; of the utterances recognised, their count, the workers' wall and CPU time in
   * total (ms); utterances a worker failed (it died on them, or none could start) and the last reason.
   */
  readonly stats = { refused: 0, restarts: 0, peakQueued: 0, recognised: 0, workerMs: 0, cpuMs: 0, failed: 0, lastFailure: '' };

  constructor(
    private readonly python: string,
    private readonly args: string[],
    size: number,
    readonly maxQueued: number,
  ) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`the whisper pool needs at least one worker, got ${size}`);
    if (!Number.isInteger(maxQueued) || maxQueued < 0) throw new Error(`maxQueued must be a whole number of at least 0, got ${maxQueued}`);
    this.failures = new Array<number>(size).fill(0);
    this.workers = new Array<WhisperWorker | undefined>(size).fill(undefined);
    recognitionQueues.add(this);
  }

  /** Starts the workers on first use (warm-up or the first utterance), not when the pool is made. */
  private start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    for (let slot = 0; slot < this.workers.length; slot++) this.workers[slot] = this.startWorker(slot);
  }

  /** The worker processes' ids (undefined while one restarts). */
  get pids(): (number | undefined)[] {
    return this.workers.map((w) => w?.child.pid);
  }

  /** Utterances waiting for a worker. */
  get queued(): number {
    return this.queue.length;
  }

  /** Resolves once every worker has loaded the model; rejects with the first that could not. */
  async ready(): Promise<void> {
    this.start();
    await Promise.all(this.workers.map((w) => w?.readyOrFailed));
  }

  /**
   * Recognises `pcm` (16 kHz s16le): the text, or undefined when the queue is full. Rejects
   * when the worker dies on it, or no worker can start.
   */
  recognise(pcm: Buffer, prompt: string | undefined, signal?: AbortSignal): Promise<string> | undefined {
    if (this.closed) return Promise.reject(new WhisperWorkerError('whisper recognizer is closed'));
    this.start();
    const free = this.workers.some((w) => w?.ready && !w.job);
    if (!free && this.queue.length >= this.maxQueued) {
      this.stats.refused++;
      return undefined;
    }
    return new Promise<string>((resolve, reject) => {
      const job: Job = { pcm, prompt, resolve, reject, dropped: false };
      signal?.addEventListener(
        'abort',
        () => {
          job.dropped = true;
          const at = this.queue.indexOf(job);
          if (at >= 0) this.queue.splice(at, 1);
          reject(new Error('recognition aborted'));
        },
        { once: true },
      );
      this.queue.push(job);
      this.stats.peakQueued = Math.max(this.stats.peakQueued, this.queue.length);
      this.dispatch();
      if (this.queue.includes(job) && !this.workers.some((w) => w && !w.ready && w.child.exitCode === null) && this.workers.every((w) => !w?.ready)) {
        // No worker is loading or loaded: a worker slot is waiting out its restart delay after failing to start.
        this.failQueued(this.lastStartError ?? new WhisperWorkerError('no whisper worker is running'));
      }
    });
  }

  /** Counts an utterance a worker failed. */
  noteFailure(err: Error): void {
    this.stats.failed++;
    this.stats.lastFailure = err.message;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.restartTimers) clearTimeout(timer);
    this.restartTimers.clear();
    this.failQueued(new WhisperWorkerError('whisper recognizer is closed'));
    await Promise.all(
      this.workers.map(async (w) => {
        if (!w) return;
        w.child.stdin!.end();
        await stopProcess(w.child, 2_000);
      }),
    );
  }

  private startWorker(slot: number): WhisperWorker {
    const worker = new WhisperWorker(
      this.python,
      this.args,
      () => this.dispatch(),
      (ms, cpuMs) => {
        this.stats.recognised++;
        this.stats.workerMs += ms;
        this.stats.cpuMs += cpuMs;
      },
      (w, reason) => this.workerExited(slot, w, reason),
    );
    worker.readyOrFailed.then(
      () => {
        this.failures[slot] = 0;
        this.dispatch();
      },
      (err: Error) => {
        this.lastStartError = err;
        this.failures[slot]++;
      },
    );
    return worker;
  }

  private workerExited(slot: number, worker: WhisperWorker, reason: string): void {
    if (this.workers[slot] !== worker) return;
    this.workers[slot] = undefined;
    const job = worker.job;
    worker.job = undefined;
    if (job && !job.dropped) job.reject(new WhisperWorkerError(reason));
    if (this.closed) return;
    if (!worker.ready) {
      this.lastStartError = new WhisperWorkerError(reason);
      // Nothing can serve the waiting utterances soon: fail them rather than keep callers waiting.
      if (this.workers.every((w) => !w?.ready)) this.failQueued(this.lastStartError);
    }
    const delay = worker.ready ? 0 : Math.min(RESTART_MAX_DELAY_MS, RESTART_FIRST_DELAY_MS * 2 ** Math.max(0, this.failures[slot] - 1));
    const timer = setTimeout(() => {
      this.restartTimers.delete(timer);
      if (this.closed) return;
      this.stats.restarts++;
      this.workers[slot] = this.startWorker(slot);
    }, delay);
    this.restartTimers.add(timer);
  }

  private dispatch(): void {
    for (const worker of this.workers) {
      if (this.queue.length === 0) return;
      if (!worker?.ready || worker.job) continue;
      worker.send(this.queue.shift()!);
    }
  }

  private failQueued(err: Error): void {
    for (const job of this.queue.splice(0)) job.reject(err);
  }
}

export class WhisperRecognizer implements SpeechRecognizer {
  readonly name = 'whisper';
  readonly pool: WhisperPool;
  private readonly promptMode: WhisperPromptMode;
  private readonly sessions = new Set<WhisperSession>();
  private closed = false;

  constructor(options: WhisperOptions) {
    const threads = options.threads ?? WHISPER_DEFAULT_THREADS;
    const args = [options.script ?? WHISPER_WORKER_SCRIPT, '--threads', String(threads), ...(options.workerArgs ?? [])];
    this.pool = new WhisperPool(options.python, args, options.workers ?? WHISPER_DEFAULT_WORKERS, options.maxQueued ?? WHISPER_DEFAULT_MAX_QUEUED);
    this.promptMode = options.prompt ?? WHISPER_DEFAULT_PROMPT;
  }

  /** Waits until every worker has loaded the model; rejects naming why one could not. */
  async warmUp(): Promise<void> {
    await this.pool.ready();
  }

  start(options: { hint?: AnswerHint; signal?: AbortSignal } = {}): RecognitionSession {
    if (this.closed) throw new Error('whisper recognizer is closed');
    const session = new WhisperSession(this.pool, whisperPrompt(options.hint, this.promptMode), () => this.sessions.delete(session));
    this.sessions.add(session);
    if (options.signal) {
      if (options.signal.aborted) session.abort();
      else options.signal.addEventListener('abort', () => session.abort(), { once: true });
    }
    return session;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const session of this.sessions) session.abort();
    await this.pool.close();
  }
}

class WhisperSession implements RecognitionSession {
  private chunks: Buffer[] = [];
  private samples = 0;
  private result: Promise<Transcript> | undefined;
  private readonly aborter = new AbortController();

  constructor(
    private readonly pool: WhisperPool,
    private readonly prompt: string | undefined,
    private readonly onDone: () => void,
  ) {}

  write(frame: PcmFrame): void {
    if (this.result || this.aborter.signal.aborted || this.samples >= MAX_UTTERANCE_SAMPLES) return;
    const room = MAX_UTTERANCE_SAMPLES - this.samples;
    const kept = frame.length > room ? frame.subarray(0, room) : frame;
    this.chunks.push(int16ToLittleEndian(kept));
    this.samples += kept.length;
  }

  /** Whisper has no partial results. */
  onPartial(): () => void {
    return () => undefined;
  }

  finish(): Promise<Transcript> {
    this.result ??= this.recognise();
    return this.result;
  }

  abort(): void {
    if (this.aborter.signal.aborted) return;
    this.aborter.abort();
    this.chunks = [];
    if (!this.result) {
      this.result = Promise.reject(new Error('recognition aborted'));
      void this.result.catch(() => undefined);
      this.onDone();
    }
  }

  private async recognise(): Promise<Transcript> {
    if (this.aborter.signal.aborted) throw new Error('recognition aborted');
    const pcm = Buffer.concat(this.chunks);
    this.chunks = [];
    try {
      const pending = this.pool.recognise(pcm, this.prompt, this.aborter.signal);
      if (!pending) return { text: '', busy: true };
      try {
        return { text: normaliseWhisperText(await pending) };
      } catch (err) {
        if (!(err instanceof WhisperWorkerError)) throw err; // aborted
        this.pool.noteFailure(err);
        return { text: '', busy: true };
      }
    } finally {
      this.onDone();
    }
  }
}
