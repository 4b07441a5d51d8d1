/**
 * The default agent voice: Festival with the kal_diphone voice (festvox-kallpc16k, 16 kHz).
 * One long-lived `festival --pipe` process per synthesizer: loading Festival and the voice
 * costs about 130 ms, which a `text2wave` per line would pay every time (240 ms to the first
 * sample); a loaded process renders a short sentence in 5 to 15 ms. Each sentence is
 * rendered on its own, so the first one plays while the next is being made.
 *
 * Festival writes each rendering to a WAV file in a private temp folder and then a marker
 * on stderr (unbuffered, unlike its stdout on a pipe); the marker says the file is complete.
 *
 * Rendered sentences are kept (up to RENDER_CACHE_SECONDS of audio, least recently used
 * out first): a script says the same questions on every call, and a kept sentence starts
 * playing without waiting for the one process every call of the edge shares.
 *
 * That one process is shared fairly: sentences wait here, not in its stdin, one queue per
 * call (the `call` a line is synthesised for), and the calls take turns one sentence at a
 * time, so a call's long prompts delay another call's line by at most one sentence per
 * call ahead of it. A call may have at most `maxQueuedPerCall` sentences waiting or being
 * rendered (FESTIVAL_MAX_QUEUED_PER_CALL); a line past that fails with
 * SynthesisQueueFullError. The conversation engine speaks one line at a time per call and
 * renders one sentence ahead, so an honest call has one or two.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { sliceFrames } from '../audio/frames.js';
import { resample } from '../audio/resample.js';
import { readWav, toMono } from '../audio/wav.js';
import { hasExited, stopProcess } from './engineProcess.js';
import type { SpeechSynthesizer, SynthesisOptions } from './interfaces.js';
import { RoundRobinQueue } from './roundRobinQueue.js';
import { hasWords, speakableChunks, trimEdgeSilence } from './speakableText.js';

export const FESTIVAL_DEFAULT_VOICE = 'kal_diphone';
/** Silence kept before the first sound of a line (a cut right at it clicks) and after the last. */
const LEAD_IN_MS = 30;
const TAIL_MS = 150;
/** Festival's own pause between sentences is kept, but not its longer silence at the end. */
const BETWEEN_SENTENCES_MS = 250;
/** Audio kept of rendered sentences: ten minutes is about 19 MB. */
export const RENDER_CACHE_SECONDS = 600;
/** Sentences one call may have waiting for or in Festival (FESTIVAL_MAX_QUEUED_PER_CALL). */
export const FESTIVAL_DEFAULT_MAX_QUEUED_PER_CALL = 8;

export interface FestivalOptions {
  /** The festival executable (default: festival on PATH). */
  binary?: string;
  /** A Festival voice name, loaded with (voice_<name>). */
  voice?: string;
  /** Sentences one call may have waiting for or in Festival; a line past it fails (default 8). */
  maxQueuedPerCall?: number;
}

/** The call already has as many sentences waiting for Festival as it may. */
export class SynthesisQueueFullError extends Error {
  constructor(readonly maxQueuedPerCall: number) {
    super(`this call already has ${maxQueuedPerCall} sentences waiting for festival (FESTIVAL_MAX_QUEUED_PER_CALL)`);
    this.name = 'SynthesisQueueFullError';
  }
}

/** A sentence waiting for its turn at the Festival process: the command that renders it to a file. */
interface RenderJob {
  command: string;
  /** Festival has written the file (reading it is left to the caller, outside the process's turn). */
  resolve: () => void;
  reject: (err: Error) => void;
}

/** A Scheme string literal. */
function schemeString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

interface Pending {
  id: number;
  lines: string[];
  resolve: (lines: string[]) => void;
  reject: (err: Error) => void;
}

/** One running festival process taking commands in order. */
class FestivalProcess {
  private nextId = 1;
  private readonly pending: Pending[] = [];
  private stderrBuffer = '';
  private readonly recentOutput: string[] = [];
  readonly exited: Promise<void>;

  constructor(readonly child: ChildProcess) {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => this.onStderr(chunk));
    child.stdout!.resume(); // its stdout says nothing we need
    child.stdin!.on('error', () => undefined); // a dead process: reported through 'exit'
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        const why = new Error(`festival exited (${signal ?? `code ${code}`}): ${this.recentOutput.slice(-5).join(' | ') || 'no output'}`);
        for (const waiter of this.pending.splice(0)) waiter.reject(why);
        resolve();
      });
      child.once('error', (err) => {
        for (const waiter of this.pending.splice(0)) waiter.reject(err);
        resolve();
      });
    });
  }

  get alive(): boolean {
    return !hasExited(this.child) && this.child.pid !== undefined;
  }

  /** Runs Scheme commands; resolves with what they printed on stderr, rejects on a Festival error. */
  run(commands: string): Promise<string[]> {
    const id = this.nextId++;
    return new Promise<string[]>((resolve, reject) => {
      if (!this.alive) {
        reject(new Error('festival is not running'));
        return;
      }
      this.pending.push({ id, lines: [], resolve, reject });
      this.child.stdin!.write(`${commands}\n(format stderr "@@done ${id}\\n")\n`);
    });
  }

  private onStderr(chunk: string): void {
    this.stderrBuffer += chunk;
    let newline: number;
    while ((newline = this.stderrBuffer.indexOf('\n')) >= 0) {
      const line = this.stderrBuffer.slice(0, newline).trim();
      this.stderrBuffer = this.stderrBuffer.slice(newline + 1);
      if (!line) continue;
      const done = /^@@done (\d+)$/.exec(line);
      if (!done) {
        this.recentOutput.push(line);
        if (this.recentOutput.length > 20) this.recentOutput.shift();
        this.pending[0]?.lines.push(line);
        continue;
      }
      const waiter = this.pending.shift();
      if (!waiter) continue;
      const failure = waiter.lines.find((l) => /SIOD ERROR|^Error|error:/i.test(l));
      if (failure) waiter.reject(new Error(`festival: ${failure}`));
      else waiter.resolve(waiter.lines);
    }
  }
}

export class FestivalSynthesizer implements SpeechSynthesizer {
  readonly name = 'festival';
  private readonly binary: string;
  private readonly voice: string;
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'festival-'));
  private process: Promise<FestivalProcess> | undefined;
  private renderings = 0;
  private closed = false;
  private readonly maxQueuedPerCall: number;
  /** Sentences waiting for the process, by call; one at a time is sent to it. */
  private readonly waiting = new RoundRobinQueue<unknown, RenderJob>();
  private sending = false;
  /** Sentences each call has waiting or in Festival (absent: none). */
  private readonly outstanding = new Map<unknown, number>();
  /** Sentence → its samples (or the rendering under way: length 0 until done), oldest use first. */
  private readonly rendered = new Map<string, { audio: Promise<Int16Array>; length: number }>();
  private renderedSamples = 0;
  /** Sentences rendered by Festival, those served from what was kept, and lines refused because their call's queue was full. */
  readonly stats = { rendered: 0, fromCache: 0, refused: 0 };

  constructor(options: FestivalOptions = {}) {
    this.binary = options.binary ?? 'festival';
    this.voice = options.voice ?? FESTIVAL_DEFAULT_VOICE;
    if (!/^[a-z0-9_]+$/i.test(this.voice)) throw new Error(`festival voice must be a plain name such as kal_diphone, got ${this.voice}`);
    this.maxQueuedPerCall = options.maxQueuedPerCall ?? FESTIVAL_DEFAULT_MAX_QUEUED_PER_CALL;
    if (!Number.isInteger(this.maxQueuedPerCall) || this.maxQueuedPerCall < 1) throw new Error(`maxQueuedPerCall must be a positive whole number, got ${this.maxQueuedPerCall}`);
  }

  async warmUp(): Promise<void> {
    await this.ready();
  }

  async *synthesize(text: string, options: SynthesisOptions = {}): AsyncIterable<PcmFrame> {
    const { signal } = options;
    // Without a call, the line queues as a call of its own.
    const call = options.call ?? {};
    const chunks = speakableChunks(text);
    // Render the next sentence while this one is being played out.
    const render = (i: number) => {
      const rendering = this.render(chunks[i], call);
      rendering.catch(() => undefined); // awaited below, unless the caller stops first
      return rendering;
    };
    let next = chunks.length > 0 ? render(0) : undefined;
    for (let i = 0; i < chunks.length; i++) {
      if (signal?.aborted) return;
      const samples = await next!;
      next = i + 1 < chunks.length ? render(i + 1) : undefined;
      if (signal?.aborted) return;
      const last = i === chunks.length - 1;
      const trimmed = trimEdgeSilence(samples, i === 0 ? LEAD_IN_MS : BETWEEN_SENTENCES_MS, last ? TAIL_MS : BETWEEN_SENTENCES_MS);
      for (const frame of sliceFrames(trimmed)) {
        if (signal?.aborted) return;
        yield frame;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const running = await this.process?.catch(() => undefined);
    this.process = undefined;
    if (running) {
      running.child.stdin!.end();
      await stopProcess(running.child, 500);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The 16 kHz mono samples of one sentence: kept ones at once, others from Festival (and then kept). */
  private render(sentence: string, call: unknown): Promise<Int16Array> {
    if (!hasWords(sentence)) return Promise.resolve(new Int16Array(0));
    const kept = this.rendered.get(sentence);
    if (kept) {
      this.stats.fromCache++;
      this.rendered.delete(sentence);
      this.rendered.set(sentence, kept);
      return kept.audio;
    }
    const entry = { audio: this.renderWithFestival(sentence, call), length: 0 };
    this.rendered.set(sentence, entry);
    void entry.audio.then(
      (samples) => {
        if (this.rendered.get(sentence) !== entry) return;
        entry.length = samples.length;
        this.renderedSamples += samples.length;
        for (const [oldest, old] of this.rendered) {
          if (this.renderedSamples <= RENDER_CACHE_SECONDS * SAMPLE_RATE || oldest === sentence) break;
          this.rendered.delete(oldest);
          this.renderedSamples -= old.length;
        }
      },
      () => {
        if (this.rendered.get(sentence) === entry) this.rendered.delete(sentence);
      },
    );
    return entry.audio;
  }

  /** Queues the sentence behind its call's others; Festival renders it when the call's turn comes. */
  private async renderWithFestival(sentence: string, call: unknown): Promise<Int16Array> {
    const queued = this.outstanding.get(call) ?? 0;
    if (queued >= this.maxQueuedPerCall) {
      this.stats.refused++;
      throw new SynthesisQueueFullError(this.maxQueuedPerCall);
    }
    this.outstanding.set(call, queued + 1);
    this.stats.rendered++;
    const file = path.join(this.dir, `line-${++this.renderings}.wav`);
    try {
      await new Promise<void>((resolve, reject) => {
        this.waiting.push(call, { command: `(utt.save.wave (utt.synth (Utterance Text ${schemeString(sentence)})) ${schemeString(file)} 'riff)`, resolve, reject });
        this.sendNext();
      });
      const audio = readWav(await readFile(file));
      const mono = toMono(audio);
      return audio.sampleRate === SAMPLE_RATE ? mono : resample(mono, audio.sampleRate, SAMPLE_RATE);
    } finally {
      const left = this.outstanding.get(call)! - 1;
      if (left > 0) this.outstanding.set(call, left);
      else this.outstanding.delete(call);
      await unlink(file).catch(() => undefined);
    }
  }

  /** Gives the process the next sentence in turn, once it is free: one command at a time, so the order is decided here. */
  private sendNext(): void {
    if (this.sending) return;
    const job = this.waiting.take();
    if (!job) return;
    this.sending = true;
    void this.ready()
      .then((festival) => festival.run(job.command))
      .then(() => job.resolve(), job.reject)
      .finally(() => {
        this.sending = false;
        this.sendNext();
      });
  }

  /** The running process, started (or restarted after a crash) with the voice loaded. */
  private ready(): Promise<FestivalProcess> {
    if (this.closed) return Promise.reject(new Error('festival synthesizer is closed'));
    if (!this.process) {
      const starting = this.start();
      this.process = starting;
      const forget = () => {
        if (this.process === starting) this.process = undefined;
      };
      void starting.then((festival) => festival.exited.then(forget), forget);
    }
    return this.process;
  }

  private async start(): Promise<FestivalProcess> {
    // spawns: festival
    const child = spawn(this.binary, ['--pipe'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const festival = new FestivalProcess(child);
    try {
      await festival.run(`(voice_${this.voice})`);
    } catch (err) {
      await stopProcess(child, 200);
      throw new Error(`festival could not load the voice ${this.voice}: ${(err as Error).message}`);
    }
    if (this.closed) {
      await stopProcess(child, 200);
      throw new Error('festival synthesizer is closed');
    }
    return festival;
  }
}
