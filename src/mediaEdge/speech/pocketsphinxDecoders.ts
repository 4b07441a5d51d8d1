/**
 * Warm pocketsphinx decoders for free speech (the general language model): each is a
 * pocketsphinx_worker.py process holding one decoder built from pocketsphinx_continuous's
 * arguments, used for one utterance after another. A new pocketsphinx_continuous per
 * utterance loads the general model every time: half a CPU-second, as much as decoding the
 * answer itself, and the largest waste of a converse call (docs/benchmarks.md, "Where a
 * converse call's CPU goes"). Grammars (yes/no, digits, dates) load in 20 ms and stay one
 * process per utterance (pocketsphinx.ts).
 *
 * A decoder serves one utterance at a time; when its session is done it goes back to the
 * pool, which keeps up to `maxIdle` of them per edge (POCKETSPHINX_WARM_DECODERS, each about
 * 100 MB) and stops the rest. When a session takes the last idle decoder of its arguments, a
 * spare is started in the background (while there is room for it among the idle ones), so the
 * next call's answer finds one loaded rather than waiting for the model, which takes seconds on
 * a loaded machine. One session at a time waits for a starting spare; others start their own
 * at once, so calls arriving together load in parallel rather than one after another. Each utterance starts from the model's cepstral mean, as a new
 * process would (the worker puts it back), so what one caller's line taught the decoder does
 * not colour the next caller's answer. A decoder that dies fails the utterance it held and
 * is not reused.
 *
 * Framing of the pipe: pocketsphinx_worker.py's docstring.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasExited, stopProcess } from './engineProcess.js';

export const POCKETSPHINX_WORKER_SCRIPT = fileURLToPath(new URL('./pocketsphinx_worker.py', import.meta.url));
/** Idle warm decoders an edge keeps (POCKETSPHINX_WARM_DECODERS): a free answer per call at once on ten calls leaves a few spare. */
export const POCKETSPHINX_DEFAULT_WARM_DECODERS = 8;

/**
 * Audio goes to the worker in 100 ms batches, not a pipe write (and a Python read) per 20 ms
 * frame: a per-frame write was 2 % of the edge's CPU in bench/converse.ts. The end of the
 * utterance sends what is left first, so the text waits for no batch.
 */
const BATCH_BYTES = 3_200;
const AUDIO = 0x41; // 'A'
const END = 0x45; // 'E'
const PARTIAL = 0x50; // 'P'
const ABANDON = 0x58; // 'X'

/** One worker process and its decoder. */
export class WarmDecoder {
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  /** Answers awaited, in the order their requests were written. */
  private readonly waiting: { resolve: (line: string) => void; reject: (err: Error) => void }[] = [];
  private stdout = '';
  private stderr = '';
  private failure: Error | undefined;
  /** Audio not yet sent (less than a batch). */
  private batch: Buffer[] = [];
  private batchBytes = 0;

  constructor(
    readonly key: string,
    private readonly child: ChildProcess,
    private readonly logFile: string,
  ) {
    child.stdin!.on('error', () => undefined); // a dead worker: reported by its exit
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (this.stderr = (this.stderr + chunk).slice(-2000)));
    child.stdout!.setEncoding('utf8');
    let onReady!: { resolve: () => void; reject: (err: Error) => void };
    this.ready = new Promise<void>((resolve, reject) => (onReady = { resolve, reject }));
    this.ready.catch(() => undefined);
    this.waiting.push({ resolve: () => onReady.resolve(), reject: onReady.reject });
    child.stdout!.on('data', (chunk: string) => {
      this.stdout += chunk;
      let newline: number;
      while ((newline = this.stdout.indexOf('\n')) >= 0) {
        const line = this.stdout.slice(0, newline);
        this.stdout = this.stdout.slice(newline + 1);
        this.waiting.shift()?.resolve(line);
      }
    });
    this.exited = new Promise<void>((resolve) => {
      const fail = (why: Error) => {
        this.failure ??= why;
        for (const waiter of this.waiting.splice(0)) waiter.reject(this.failure);
        resolve();
      };
      child.once('error', fail);
      child.once('exit', (code, signal) => {
        void this.logTail().then((log) => fail(new Error(`the pocketsphinx worker exited (${signal ?? `code ${code}`}): ${(this.stderr || log).trim() || 'no output'}`)));
      });
    });
  }

  get alive(): boolean {
    return this.failure === undefined && !hasExited(this.child);
  }

  /** Audio of the utterance (16-bit little-endian samples); the first starts it. */
  write(samples: Buffer): void {
    this.batch.push(samples);
    this.batchBytes += samples.length;
    if (this.batchBytes >= BATCH_BYTES) this.flush();
  }

  /** The utterance has ended: its text ("" when nothing was recognised). */
  async finish(): Promise<string> {
    const line = await this.ask(END);
    if (line.startsWith('text')) return line.slice(5).trim();
    throw new Error(`pocketsphinx worker: ${line.replace(/^error /, '')}`);
  }

  /** The text of the utterance so far, the utterance going on (the audio written is sent first). */
  async partial(): Promise<string> {
    const line = await this.ask(PARTIAL);
    if (line.startsWith('partial')) return line.slice(8).trim();
    throw new Error(`pocketsphinx worker: ${line}`);
  }

  /** Drops the utterance; resolves once the decoder is free for the next. */
  async abandon(): Promise<void> {
    await this.ask(ABANDON);
  }

  async stop(): Promise<void> {
    this.child.stdin!.end();
    await stopProcess(this.child, 300);
    await this.exited;
    rmSync(this.logFile, { force: true });
  }

  private flush(): void {
    if (this.batchBytes === 0) return;
    const audio = this.batch.length === 1 ? this.batch[0] : Buffer.concat(this.batch, this.batchBytes);
    this.batch = [];
    this.batchBytes = 0;
    this.send(AUDIO, audio);
  }

  private ask(type: number): Promise<string> {
    // An abandoned utterance's audio is dropped unsent; an ended one's (or a partial's) goes first.
    if (type === ABANDON) {
      this.batch = [];
      this.batchBytes = 0;
    } else this.flush();
    if (!this.alive) return Promise.reject(this.failure ?? new Error('the pocketsphinx worker is not running'));
    return new Promise<string>((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.send(type, Buffer.alloc(0));
    });
  }

  private send(type: number, body: Buffer): void {
    if (!this.alive) return;
    const header = Buffer.allocUnsafe(5);
    header[0] = type;
    header.writeUInt32LE(body.length, 1);
    this.child.stdin!.write(body.length ? Buffer.concat([header, body]) : header);
  }

  private async logTail(): Promise<string> {
    const log = await readFile(this.logFile, 'utf8').catch(() => '');
    return log
      .split('\n')
      .filter((l) => /ERROR|FATAL/.test(l))
      .slice(-3)
      .join(' | ');
  }
}

export interface WarmDecodersOptions {
  /** The python3 that runs the worker. */
  python: string;
  script?: string;
  /** Idle decoders kept (default POCKETSPHINX_DEFAULT_WARM_DECODERS). */
  maxIdle?: number;
}

/** The pool: idle decoders by their arguments; the processes a session holds are counted by the recogniser's slots. */
export class WarmDecoders {
  private readonly idle: WarmDecoder[] = [];
  private readonly busy = new Set<WarmDecoder>();
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'pocketsphinx-decoders-'));
  private readonly maxIdle: number;
  private closed = false;
  /**
   * Spares being started, by their arguments (one at a time per key): the decoder, and its start
   * settling (kept idle or stopped). close() stops the decoder rather than wait for it: one that
   * never says ready must not hold the edge's shutdown.
   */
  private readonly starting = new Map<string, { decoder: WarmDecoder; settled: Promise<void> }>();
  /** Keys whose starting spare a session already waits for: the next session starts its own rather than queue behind it. */
  private readonly claimed = new Set<string>();
  /** Decoders started and utterances served by a decoder that was already warm. */
  readonly stats = { started: 0, reused: 0 };

  constructor(private readonly options: WarmDecodersOptions) {
    this.maxIdle = options.maxIdle ?? POCKETSPHINX_DEFAULT_WARM_DECODERS;
    if (!Number.isInteger(this.maxIdle) || this.maxIdle < 0) throw new Error(`maxIdle must be a whole number of at least 0, got ${this.maxIdle}`);
  }

  /** Decoders idle now. */
  get idleCount(): number {
    return this.idle.length;
  }

  /** Decoders a session holds now (starting ones included). */
  get busyCount(): number {
    return this.busy.size;
  }

  /** A decoder built with `args` (pocketsphinx_continuous's, without -infile and -logfn), warm if one is idle or a spare is nearly so. */
  async acquire(args: readonly string[]): Promise<WarmDecoder> {
    const key = JSON.stringify(args);
    for (;;) {
      if (this.closed) throw new Error('pocketsphinx decoders are closed');
      const warm = this.takeIdle(key);
      if (warm) {
        this.busy.add(warm);
        this.stats.reused++;
        this.keepSpare(args, key);
        return warm;
      }
      const spare = this.starting.get(key)?.settled;
      if (!spare || this.claimed.has(key)) break;
      this.claimed.add(key);
      try {
        await spare;
      } finally {
        this.claimed.delete(key);
      }
    }
    const decoder = this.start(args, key);
    this.busy.add(decoder);
    try {
      await decoder.ready;
    } catch (err) {
      this.busy.delete(decoder);
      await decoder.stop();
      throw err;
    }
    this.keepSpare(args, key);
    return decoder;
  }

  /** A session is done with `decoder` (its utterance finished or abandoned): kept warm, or stopped. */
  release(decoder: WarmDecoder): void {
    this.busy.delete(decoder);
    if (!this.closed && decoder.alive && this.idle.length < this.maxIdle) this.keepIdle(decoder);
    else void decoder.stop();
  }

  /** An idle decoder that dies leaves the pool as soon as its exit is seen. */
  private keepIdle(decoder: WarmDecoder): void {
    this.idle.push(decoder);
    void decoder.exited.then(() => {
      const at = this.idle.indexOf(decoder);
      if (at >= 0) this.idle.splice(at, 1);
    });
  }

  private takeIdle(key: string): WarmDecoder | undefined {
    for (let at = this.idle.length - 1; at >= 0; at--) {
      const decoder = this.idle[at];
      if (decoder.key !== key) continue;
      this.idle.splice(at, 1);
      if (decoder.alive) return decoder;
      void decoder.stop();
    }
    return undefined;
  }

  private start(args: readonly string[], key: string): WarmDecoder {
    const logFile = path.join(this.dir, `decoder-${++this.stats.started}.log`);
    // spawns: python3
    const child = spawn(this.options.python, [this.options.script ?? POCKETSPHINX_WORKER_SCRIPT, ...args, '-logfn', logFile], { stdio: ['pipe', 'pipe', 'pipe'] });
    return new WarmDecoder(key, child, logFile);
  }

  /** No idle decoder of `key` is left: one is started in the background, if the idle ones have room for it. */
  private keepSpare(args: readonly string[], key: string): void {
    if (this.closed || this.starting.has(key) || this.idle.some((d) => d.key === key)) return;
    if (this.idle.length + this.starting.size >= this.maxIdle) return;
    const spare = this.start(args, key);
    const settled = (async () => {
      try {
        await spare.ready;
        if (!this.closed && this.idle.length < this.maxIdle) this.keepIdle(spare);
        else await spare.stop();
      } catch {
        // A spare that cannot start is no one's failure: the session that needs a decoder starts its own and says why.
        await spare.stop();
      } finally {
        this.starting.delete(key);
      }
    })();
    this.starting.set(key, { decoder: spare, settled });
  }

  async close(): Promise<void> {
    this.closed = true;
    const spares = [...this.starting.values()];
    await Promise.all(spares.map(({ decoder }) => decoder.stop()));
    await Promise.all(spares.map(({ settled }) => settled));
    const all = [...this.idle.splice(0), ...this.busy];
    this.busy.clear();
    await Promise.all(all.map((d) => d.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
