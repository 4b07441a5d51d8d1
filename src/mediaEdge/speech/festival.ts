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
 * renders one sentence ahead, so an honest call has one or two. (The queue, the cap and
 * what is kept are shared with Piper: sentenceRendering.ts.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { resample } from '../audio/resample.js';
import { readWav, toMono } from '../audio/wav.js';
import { hasExited, stopProcess } from './engineProcess.js';
import type { SpeechSynthesizer, SynthesisOptions } from './interfaces.js';
import { CallTurns, RenderedSentences, speakSentences, SynthesisQueueFullError, type SentencePauses, type SentenceStats } from './sentenceRendering.js';
import { speakableChunks } from './speakableText.js';

export { RENDER_CACHE_SECONDS, SynthesisQueueFullError } from './sentenceRendering.js';

export const FESTIVAL_DEFAULT_VOICE = 'kal_diphone';
/**
 * Silence kept before the first sound of a line (a cut right at it clicks) and after the
 * last; Festival's own pause between sentences is kept, but not its longer silence at the end.
 */
const PAUSES: SentencePauses = { leadInMs: 30, betweenMs: 250, tailMs: 150 };
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
  /** Sentences rendered by Festival, those served from what was kept, and lines refused because their call's queue was full. */
  readonly stats: SentenceStats = { rendered: 0, fromCache: 0, refused: 0 };
  /** Sentences waiting for the process, by call; one at a time is sent to it. */
  private readonly turns: CallTurns;
  private readonly rendered = new RenderedSentences(this.stats);

  constructor(options: FestivalOptions = {}) {
    this.binary = options.binary ?? 'festival';
    this.voice = options.voice ?? FESTIVAL_DEFAULT_VOICE;
    if (!/^[a-z0-9_]+$/i.test(this.voice)) throw new Error(`festival voice must be a plain name such as kal_diphone, got ${this.voice}`);
    const maxQueuedPerCall = options.maxQueuedPerCall ?? FESTIVAL_DEFAULT_MAX_QUEUED_PER_CALL;
    this.turns = new CallTurns(maxQueuedPerCall, () => {
      this.stats.refused++;
      return new SynthesisQueueFullError(maxQueuedPerCall);
    });
  }

  async warmUp(): Promise<void> {
    await this.ready();
  }

  synthesize(text: string, options: SynthesisOptions = {}): AsyncIterable<PcmFrame> {
    // Without a call, the line queues as a call of its own.
    const call = options.call ?? {};
    return speakSentences(speakableChunks(text), (sentence) => this.rendered.get(sentence, () => this.renderWithFestival(sentence, call)), PAUSES, options.signal);
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

  /** Queues the sentence behind its call's others; Festival renders it when the call's turn comes (the file is read outside the turn). */
  private async renderWithFestival(sentence: string, call: unknown): Promise<Int16Array> {
    const file = path.join(this.dir, `line-${++this.renderings}.wav`);
    const command = `(utt.save.wave (utt.synth (Utterance Text ${schemeString(sentence)})) ${schemeString(file)} 'riff)`;
    try {
      return await this.turns.run(
        call,
        async () => {
          this.stats.rendered++;
          await (await this.ready()).run(command);
        },
        async () => {
          const audio = readWav(await readFile(file));
          const mono = toMono(audio);
          return audio.sampleRate === SAMPLE_RATE ? mono : resample(mono, audio.sampleRate, SAMPLE_RATE);
        },
      );
    } finally {
      await unlink(file).catch(() => undefined);
    }
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
