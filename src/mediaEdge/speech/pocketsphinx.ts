/**
 * The default recogniser: pocketsphinx_continuous (Debian's 0.8+5prealpha) with the en-us
 * model, one process per utterance. The process is started when the session opens (for an
 * ask, while the prompt still plays), so loading the model (about 20 ms with a grammar and
 * its small dictionary, 230 ms with the general language model) is hidden; it reads raw
 * 16 kHz audio on stdin as it comes and decodes along, so when the endpointer says the
 * utterance ended only the last pass remains: closing stdin makes it print the text and exit.
 *
 * `-infile /dev/stdin` needs a real pipe (Node gives a child a socket, which cannot be
 * opened by path), so a `cat` in a `sh` pipeline stands between; both run in their own
 * process group, which is what gets signalled when a session is aborted.
 *
 * Free speech (the general language model, whose loading costs as much CPU as decoding the
 * answer) goes to a warm decoder instead when the recogniser has them (`warmDecoders`,
 * POCKETSPHINX_WARM_DECODERS; pocketsphinxDecoders.ts): the same decoder and arguments, kept
 * from one utterance to the next. Grammars stay one process per utterance.
 *
 * An edge runs at most `maxProcesses` of them at once (POCKETSPHINX_MAX_PROCESSES; the
 * process is held from the prompt to the end of the answer). A session over the cap waits
 * for one to exit, buffering the caller's audio; a session that already holds speech is
 * next in line. Once its utterance has ended it waits at most `maxWaitMs`
 * (POCKETSPHINX_MAX_WAIT_MS): then it gives up and its transcript is empty and `busy`, which
 * the conversation engine takes as nothing heard (the caller is asked again).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { PcmFrame } from '../media/channel.js';
import { int16ToLittleEndian } from '../audio/wav.js';
import { stopProcess } from './engineProcess.js';
import { grammarFor } from './grammar.js';
import type { AnswerHint, RecognitionSession, SpeechRecognizer, Transcript } from './interfaces.js';
import { ProcessSlots, type SlotRequest } from './processSlots.js';
import { POCKETSPHINX_DEFAULT_WARM_DECODERS, WarmDecoders, type WarmDecoder } from './pocketsphinxDecoders.js';
import { loadPronouncingDictionary, type PronouncingDictionary } from './pronouncingDictionary.js';

export const POCKETSPHINX_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';

/** The files of a pocketsphinx model folder laid out as Debian's pocketsphinx-en-us. */
export function pocketsphinxModelFiles(modelDir: string) {
  return {
    acousticModel: path.join(modelDir, 'en-us'),
    languageModel: path.join(modelDir, 'en-us.lm.bin'),
    dictionary: path.join(modelDir, 'cmudict-en-us.dict'),
  };
}

/**
 * Frames of silence pocketsphinx keeps after speech before it closes a segment on its own
 * (its default is 50, 0.5 s). Longer than the endpointer's hangover, so the endpointer
 * decides where the utterance ends and pocketsphinx rarely splits one in two.
 */
const VAD_POSTSPEECH_FRAMES = 100;

/**
 * The general model's decoding for a `latency: low` hint (a converse turn): the first pass
 * only (no flat-lexicon second pass and no lattice search over the whole utterance once it
 * has ended) and tighter pruning. Streamed at real time on this machine (load 6-8), six
 * Festival-spoken sentences came out 130-630 ms after the end of the audio instead of
 * 300-1140 ms, at 25-37 % less CPU, with a few more words wrong (docs/speech.md).
 */
const LOW_LATENCY_DECODING = ['-fwdflat', 'no', '-bestpath', 'no', '-maxhmmpf', '3000', '-maxwpf', '10', '-pl_window', '10', '-topn', '2'];

/** Recogniser processes one edge runs at once (POCKETSPHINX_MAX_PROCESSES): above the 25 concurrent calls this machine carries. */
export const POCKETSPHINX_DEFAULT_MAX_PROCESSES = 32;
/** How long an ended utterance waits for a recogniser (POCKETSPHINX_MAX_WAIT_MS). */
export const POCKETSPHINX_DEFAULT_MAX_WAIT_MS = 5_000;

export interface PocketsphinxOptions {
  binary?: string;
  modelDir?: string;
  /** Processes at once (default 32). */
  maxProcesses?: number;
  /** How long a session whose utterance has ended waits for a process before it answers busy (default 5 s). */
  maxWaitMs?: number;
  /** The python3 that runs warm decoders for free speech; without it, every utterance gets its own pocketsphinx_continuous. */
  python?: string;
  /** Idle warm decoders kept (default 8); 0: none kept, each free utterance starts a worker of its own. */
  warmDecoders?: number;
}

/** Arguments for one utterance: `free` (the general model) may go to a warm decoder. */
interface DecoderArguments {
  args: string[];
  free: boolean;
}

export class PocketsphinxRecognizer implements SpeechRecognizer {
  readonly name = 'pocketsphinx';
  private readonly binary: string;
  private readonly files: ReturnType<typeof pocketsphinxModelFiles>;
  private readonly sessions = new Set<PocketsphinxSession>();
  private closed = false;
  /** The cap on processes; its stats say the most at once and how many sessions waited or were refused. */
  readonly slots: ProcessSlots;
  private readonly maxWaitMs: number;
  /** The warm decoders of free speech, when the recogniser has a python to run them. */
  readonly decoders: WarmDecoders | undefined;

  constructor(options: PocketsphinxOptions = {}) {
    this.binary = options.binary ?? 'pocketsphinx_continuous';
    this.files = pocketsphinxModelFiles(options.modelDir ?? POCKETSPHINX_MODEL_DIR);
    this.slots = new ProcessSlots(options.maxProcesses ?? POCKETSPHINX_DEFAULT_MAX_PROCESSES);
    this.maxWaitMs = options.maxWaitMs ?? POCKETSPHINX_DEFAULT_MAX_WAIT_MS;
    if (!Number.isInteger(this.maxWaitMs) || this.maxWaitMs < 0) throw new Error(`maxWaitMs must be a whole number of at least 0, got ${this.maxWaitMs}`);
    this.decoders = options.python ? new WarmDecoders({ python: options.python, maxIdle: options.warmDecoders ?? POCKETSPHINX_DEFAULT_WARM_DECODERS }) : undefined;
  }

  async warmUp(): Promise<void> {
    await loadPronouncingDictionary(this.files.dictionary);
  }

  start(options: { hint?: AnswerHint; signal?: AbortSignal } = {}): RecognitionSession {
    if (this.closed) throw new Error('pocketsphinx recognizer is closed');
    const session = new PocketsphinxSession(
      (dictionary, dir) => this.arguments(options.hint ?? { expect: 'free' }, dictionary, dir),
      this.binary,
      loadPronouncingDictionary(this.files.dictionary),
      { slots: this.slots, maxWaitMs: this.maxWaitMs, decoders: this.decoders },
      () => this.sessions.delete(session),
    );
    this.sessions.add(session);
    if (options.signal) {
      if (options.signal.aborted) session.abort();
      else options.signal.addEventListener('abort', () => session.abort(), { once: true });
    }
    return session;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.sessions].map((s) => s.stop()));
    await this.decoders?.close();
  }

  /**
   * Decoder arguments for a hint: a grammar with a dictionary of its words, or the general
   * model (`free`; a warm decoder's arguments: no -infile, no -logfn, and no file of `dir()`).
   */
  private arguments(hint: AnswerHint, dictionary: PronouncingDictionary, dir: () => string): DecoderArguments {
    const common = ['-hmm', this.files.acousticModel, '-samprate', '16000', '-vad_postspeech', String(VAD_POSTSPEECH_FRAMES)];
    const grammar = grammarFor(hint, { knownWord: (w) => dictionary.has(w) });
    if (!grammar) return { args: [...common, '-lm', this.files.languageModel, '-dict', this.files.dictionary, ...(hint.latency === 'low' ? LOW_LATENCY_DECODING : [])], free: true };
    const grammarFile = path.join(dir(), `${grammar.name}.gram`);
    const dictionaryFile = path.join(dir(), 'words.dict');
    writeFileSync(grammarFile, grammar.jsgf);
    writeFileSync(dictionaryFile, dictionary.subset(grammar.words));
    return { args: [...common, '-jsgf', grammarFile, '-dict', dictionaryFile], free: false };
  }
}

class PocketsphinxSession implements RecognitionSession {
  /** The session's folder (grammar, dictionary, log), made when first needed: a warm decoder's session needs none. */
  private folder: string | undefined;
  private child: ChildProcess | undefined;
  /** The warm decoder this session holds, once granted. */
  private decoder: WarmDecoder | undefined;
  /** Settles when the utterance ends (finish) or is dropped (abort): what a warm decoder's session waits for. */
  private readonly over: Promise<'end' | 'abort'>;
  private settleOver!: (how: 'end' | 'abort') => void;
  /** Audio written before the process was started. */
  private backlog: Buffer[] = [];
  private ended = false;
  private aborted = false;
  /** The place in line for a process, until one is granted. */
  private slot: SlotRequest | undefined;
  private waitTimer: NodeJS.Timeout | undefined;
  private readonly lines: string[] = [];
  private readonly partialListeners = new Set<(text: string) => void>();
  private readonly result: Promise<Transcript>;

  constructor(
    buildArguments: (dictionary: PronouncingDictionary, dir: () => string) => DecoderArguments,
    private readonly binary: string,
    dictionary: Promise<PronouncingDictionary>,
    private readonly limits: { slots: ProcessSlots; maxWaitMs: number; decoders: WarmDecoders | undefined },
    private readonly onDone: () => void,
  ) {
    this.over = new Promise((resolve) => (this.settleOver = resolve));
    this.result = this.recognise(buildArguments, dictionary);
    // Settles even if nobody calls finish(): a session that is only aborted.
    void this.result.catch(() => undefined).finally(() => this.cleanUp());
  }

  write(frame: PcmFrame): void {
    if (this.ended || this.aborted) return;
    const bytes = int16ToLittleEndian(frame);
    if (this.decoder) this.decoder.write(bytes);
    else if (this.child) this.child.stdin!.write(bytes);
    else this.backlog.push(bytes);
  }

  onPartial(listener: (text: string) => void): () => void {
    this.partialListeners.add(listener);
    return () => this.partialListeners.delete(listener);
  }

  /** A warm decoder tells its text so far; a process per utterance only what it prints at its own pauses. */
  requestPartial(): boolean {
    const decoder = this.decoder;
    if (!decoder || this.ended || this.aborted) return false;
    void decoder.partial().then(
      (text) => {
        if (!text || this.decoder !== decoder || this.ended || this.aborted) return;
        for (const listener of this.partialListeners) listener(text);
      },
      () => undefined, // a decoder that died fails the utterance at finish()
    );
    return true;
  }

  finish(): Promise<Transcript> {
    if (!this.ended && !this.aborted) {
      this.ended = true;
      this.child?.stdin!.end();
      this.settleOver('end');
      if (this.slot) this.boundWait();
    }
    return this.result;
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    void this.stop();
  }

  /** Kills the process (if any) and waits for it. */
  async stop(): Promise<void> {
    this.aborted = true;
    this.settleOver('abort');
    this.slot?.cancel(new Error('recognition aborted'));
    if (this.child) await stopProcess(this.child, 300, { group: true });
    await this.result.catch(() => undefined);
  }

  private get dir(): string {
    this.folder ??= mkdtempSync(path.join(os.tmpdir(), 'pocketsphinx-'));
    return this.folder;
  }

  /** Waits for a process slot, then recognises; an ended utterance that waited too long is answered busy. */
  private async recognise(buildArguments: (dictionary: PronouncingDictionary, dir: () => string) => DecoderArguments, dictionary: Promise<PronouncingDictionary>): Promise<Transcript> {
    const { args, free } = buildArguments(await dictionary, () => this.dir);
    if (this.aborted) throw new Error('recognition aborted');
    // Speech already written (or ended) makes this session the next in line.
    this.slot = this.limits.slots.request(() => this.backlog.length > 0 || this.ended);
    if (this.ended) this.boundWait();
    let granted: boolean;
    try {
      granted = await this.slot.granted;
    } finally {
      clearTimeout(this.waitTimer);
      this.slot = undefined;
    }
    if (!granted) {
      this.backlog = [];
      return { text: '', busy: true };
    }
    try {
      const decoders = this.limits.decoders;
      return await (free && decoders ? this.runWarm(decoders, args) : this.run([...args, '-infile', '/dev/stdin', '-logfn', path.join(this.dir, 'log')]));
    } finally {
      this.limits.slots.release();
    }
  }

  /** The utterance has ended while the session waits for a process: it waits MAX_WAIT_MS more at most. */
  private boundWait(): void {
    const slot = this.slot;
    if (!slot || this.waitTimer) return;
    this.waitTimer = setTimeout(() => slot.refuse(), this.limits.maxWaitMs);
  }

  /** The utterance on a warm decoder: the audio so far, then the rest as it comes; the decoder goes back to the pool when it is done. */
  private async runWarm(decoders: WarmDecoders, args: string[]): Promise<Transcript> {
    if (this.aborted) throw new Error('recognition aborted');
    const decoder = await decoders.acquire(args);
    let clean = false;
    try {
      if (!this.aborted) {
        this.decoder = decoder;
        for (const bytes of this.backlog) decoder.write(bytes);
        this.backlog = [];
      }
      // A decoder that dies meanwhile fails the utterance at once, as a dead process does.
      const how = await Promise.race([this.over, decoder.exited.then(() => 'died' as const)]);
      if (how === 'abort') {
        await decoder.abandon();
        clean = true;
        throw new Error('recognition aborted');
      }
      const text = await decoder.finish();
      clean = true;
      if (this.aborted) throw new Error('recognition aborted');
      if (text) this.addLine(text);
      return { text: this.lines.join(' ') };
    } finally {
      this.decoder = undefined;
      if (clean) decoders.release(decoder);
      else void decoder.stop();
    }
  }

  private run(args: string[]): Promise<Transcript> {
    if (this.aborted) return Promise.reject(new Error('recognition aborted'));
    const child = spawn('/bin/sh', ['-c', 'cat | exec "$0" "$@"', this.binary, ...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.child = child;
    child.stdin!.on('error', () => undefined); // a process that died: reported by its exit
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      stdout += chunk;
      let newline: number;
      while ((newline = stdout.indexOf('\n')) >= 0) {
        this.addLine(stdout.slice(0, newline));
        stdout = stdout.slice(newline + 1);
      }
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
    for (const bytes of this.backlog) child.stdin!.write(bytes);
    this.backlog = [];
    if (this.ended) child.stdin!.end();
    return new Promise<Transcript>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => {
        this.addLine(stdout);
        if (this.aborted) reject(new Error('recognition aborted'));
        else if (code === 0) resolve({ text: this.lines.join(' ') });
        else
          void this.logTail().then((log) =>
            reject(new Error(`pocketsphinx_continuous failed (${signal ?? `code ${code}`}): ${(log || stderr).trim() || 'no output'}`)),
          );
      });
    });
  }

  private addLine(line: string): void {
    const text = line.trim().toLowerCase();
    if (!text) return;
    this.lines.push(text);
    const sofar = this.lines.join(' ');
    for (const listener of this.partialListeners) listener(sofar);
  }

  private async logTail(): Promise<string> {
    if (!this.folder) return '';
    const log = await readFile(path.join(this.folder, 'log'), 'utf8').catch(() => '');
    return log
      .split('\n')
      .filter((l) => /ERROR|FATAL/.test(l))
      .slice(-3)
      .join(' | ');
  }

  private cleanUp(): void {
    if (this.folder) rmSync(this.folder, { recursive: true, force: true });
    this.onDone();
  }
}
