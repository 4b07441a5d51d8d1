/**
 * What the edge's sentence-at-a-time synthesisers share (Festival, Piper): one engine
 * process serves every call of the edge, so its sentences
 *
 * - wait here, one queue per call, and the calls take turns one sentence at a time
 *   (CallTurns): a call's long prompts delay another call's line by at most one sentence
 *   per call ahead of it; a call may have at most `maxQueuedPerCall` sentences waiting or
 *   being rendered, and a line past that fails with SynthesisQueueFullError;
 * - are kept once rendered (RenderedSentences, up to RENDER_CACHE_SECONDS of audio, least
 *   recently used out first): a script says the same questions on every call, and a kept
 *   sentence starts playing without waiting for the process;
 * - are played one after another while the next one renders (speakSentences), so the first
 *   sentence plays before the whole line is made.
 */
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { sliceFrames } from '../audio/frames.js';
import { RoundRobinQueue } from './roundRobinQueue.js';
import { hasWords, trimEdgeSilence } from './speakableText.js';
import { synthesisQueues } from '../../metrics/edgeMetrics.js';

/** Audio kept of rendered sentences: ten minutes is about 19 MB. */
export const RENDER_CACHE_SECONDS = 600;

/** The call already has as many sentences waiting for the engine as it may. */
export class SynthesisQueueFullError extends Error {
  constructor(
    readonly maxQueuedPerCall: number,
    engine = 'festival',
    setting = 'FESTIVAL_MAX_QUEUED_PER_CALL',
  ) {
    super(`this call already has ${maxQueuedPerCall} sentences waiting for ${engine} (${setting})`);
    this.name = 'SynthesisQueueFullError';
  }
}

/** Sentences rendered by the engine, served from what was kept, and refused because their call's queue was full. */
export interface SentenceStats {
  rendered: number;
  fromCache: number;
  refused: number;
}

interface Turn {
  run: () => void;
}

/** Work of the edge's calls for one engine process: one job at a time, the calls taking turns, each call's jobs capped. */
export class CallTurns {
  private readonly waiting = new RoundRobinQueue<unknown, Turn>();
  private busy = false;
  /** Jobs each call has waiting or running (absent: none). */
  private readonly outstanding = new Map<unknown, number>();

  constructor(
    readonly maxQueuedPerCall: number,
    private readonly refuse: () => Error,
  ) {
    if (!Number.isInteger(maxQueuedPerCall) || maxQueuedPerCall < 1) throw new Error(`maxQueuedPerCall must be a positive whole number, got ${maxQueuedPerCall}`);
    synthesisQueues.add(this);
  }

  /** Jobs waiting for their turn at the engine (the speech queue depth of docs/observability.md). */
  get queued(): number {
    return this.waiting.size;
  }

  /**
   * Runs `job` when `call`'s turn comes, alone; `hold` (after the job) still counts against
   * the call's cap but lets the next job run (reading what the engine wrote). Rejects at
   * once, without running it, when the call already has its cap.
   */
  async run<T, R>(call: unknown, job: () => Promise<T>, hold: (result: T) => Promise<R>): Promise<R> {
    const queued = this.outstanding.get(call) ?? 0;
    if (queued >= this.maxQueuedPerCall) throw this.refuse();
    this.outstanding.set(call, queued + 1);
    try {
      const result = await new Promise<T>((resolve, reject) => {
        this.waiting.push(call, {
          run: () => {
            job().then(resolve, reject).finally(() => {
              this.busy = false;
              this.next();
            });
          },
        });
        this.next();
      });
      return await hold(result);
    } finally {
      const left = this.outstanding.get(call)! - 1;
      if (left > 0) this.outstanding.set(call, left);
      else this.outstanding.delete(call);
    }
  }

  private next(): void {
    if (this.busy) return;
    const turn = this.waiting.take();
    if (!turn) return;
    this.busy = true;
    turn.run();
  }
}

/** Sentence → its 16 kHz samples, kept up to `seconds` of audio, least recently used out first. */
export class RenderedSentences {
  /** The rendering under way has length 0 until done. */
  private readonly kept = new Map<string, { audio: Promise<Int16Array>; length: number }>();
  private samples = 0;

  constructor(
    private readonly stats: SentenceStats,
    private readonly seconds = RENDER_CACHE_SECONDS,
  ) {}

  /** The kept samples of `sentence`, else `render()`'s (kept once they come; a failure is not kept). */
  get(sentence: string, render: () => Promise<Int16Array>): Promise<Int16Array> {
    if (!hasWords(sentence)) return Promise.resolve(new Int16Array(0));
    const kept = this.kept.get(sentence);
    if (kept) {
      this.stats.fromCache++;
      this.kept.delete(sentence);
      this.kept.set(sentence, kept);
      return kept.audio;
    }
    const entry = { audio: render(), length: 0 };
    this.kept.set(sentence, entry);
    void entry.audio.then(
      (samples) => {
        if (this.kept.get(sentence) !== entry) return;
        entry.length = samples.length;
        this.samples += samples.length;
        for (const [oldest, old] of this.kept) {
          if (this.samples <= this.seconds * SAMPLE_RATE || oldest === sentence) break;
          this.kept.delete(oldest);
          this.samples -= old.length;
        }
      },
      () => {
        if (this.kept.get(sentence) === entry) this.kept.delete(sentence);
      },
    );
    return entry.audio;
  }
}

/** Silence kept around sentences: before the first sound (a cut right at it clicks), between sentences, after the last. */
export interface SentencePauses {
  leadInMs: number;
  betweenMs: number;
  tailMs: number;
}

/**
 * The frames of `chunks` in order, each rendered by `render` (the next one while this one
 * plays), with their edge silence trimmed to `pauses`. Stops without an error when `signal`
 * aborts.
 */
export async function* speakSentences(
  chunks: readonly string[],
  render: (chunk: string) => Promise<Int16Array>,
  pauses: SentencePauses,
  signal?: AbortSignal,
): AsyncIterable<PcmFrame> {
  const start = (i: number) => {
    const rendering = render(chunks[i]);
    rendering.catch(() => undefined); // awaited below, unless the caller stops first
    return rendering;
  };
  let next = chunks.length > 0 ? start(0) : undefined;
  for (let i = 0; i < chunks.length; i++) {
    if (signal?.aborted) return;
    const samples = await next!;
    next = i + 1 < chunks.length ? start(i + 1) : undefined;
    if (signal?.aborted) return;
    const last = i === chunks.length - 1;
    const trimmed = trimEdgeSilence(samples, i === 0 ? pauses.leadInMs : pauses.betweenMs, last ? pauses.tailMs : pauses.betweenMs);
    for (const frame of sliceFrames(trimmed)) {
      if (signal?.aborted) return;
      yield frame;
    }
  }
}
