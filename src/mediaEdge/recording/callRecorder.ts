/**
 * Records one call, both parties, into one WAV in the recording store.
 *
 * The recording is stereo 16 kHz 16-bit PCM: the caller (the channel's inbound audio) on
 * the left, the agent (outbound audio, as it left) on the right. Frames are laid on one
 * timeline from the call's start: while a party's frames flow they are laid end to end,
 * and a frame arriving more than GAP_TOLERANCE_MS after the point that party's track has
 * reached starts at its own arrival time, the silence before it kept. So the agent's
 * replies sit where they were heard, and the two tracks agree within that tolerance.
 *
 * Memory stays small whatever the length: each party's samples go to a spool file
 * (positioned writes; a gap is a hole that reads back as silence) in about one-second
 * batches, and finish() streams the two files, interleaved, into the store, never over an
 * existing recording (a second session of one call cannot replace the first). A recording
 * stops at MAX_RECORDING_MS (two hours, the longest a call may last); later frames are
 * dropped and the result says `truncated`.
 */
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { SAMPLE_RATE, type MediaChannel, type PcmFrame } from '../media/channel.js';
import type { RecordingStore } from '../../recordings/store.js';
import { WAV_HEADER_BYTES, wavHeader } from '../../recordings/wav.js';

export const MAX_RECORDING_MS = 2 * 60 * 60 * 1000;
export const GAP_TOLERANCE_MS = 100;
const CHANNELS = 2;
const BYTES_PER_SAMPLE = 2;
/** Samples a track keeps in memory before writing them out: one second. */
const FLUSH_SAMPLES = SAMPLE_RATE;
/** Samples per channel read and interleaved at a time when writing the WAV: one second. */
const READ_SAMPLES = SAMPLE_RATE;

export interface CallRecorderOptions {
  store: RecordingStore;
  /** Store key, `<team_id>/<call_id>.wav` (src/recordings/keys.ts recordingKey). */
  key: string;
  /** A monotonic clock in milliseconds; default performance.now. */
  clock?: () => number;
  /** When the call started, on `clock`; default: now. */
  startedAt?: number;
  /** Where the spool files go; default the OS temporary folder. */
  spoolDir?: string;
  /** Default MAX_RECORDING_MS. */
  maxDurationMs?: number;
}

export interface RecordingResult {
  key: string;
  durationMs: number;
  bytes: number;
  /** Frames past maxDurationMs were dropped. */
  truncated: boolean;
}

const msToSamples = (ms: number) => Math.round((ms * SAMPLE_RATE) / 1000);
/** WAV samples are little-endian: on such a machine (all this runs on) samples are copied as they lie in memory. */
const LITTLE_ENDIAN = os.endianness() === 'LE';

/**
 * `n` samples of each party (little-endian 16-bit) → stereo frames, left first. Through 16-bit
 * views rather than a two-byte Buffer.copy per sample: a call's finish interleaves every second
 * of it (that copy per sample was 9 % of the edge's CPU in bench/converse.ts).
 */
function interleave(left: Buffer, right: Buffer, n: number): Buffer {
  const out = Buffer.alloc(n * CHANNELS * BYTES_PER_SAMPLE);
  if (!LITTLE_ENDIAN || left.byteOffset % 2 !== 0 || right.byteOffset % 2 !== 0) {
    for (let i = 0; i < n; i++) {
      left.copy(out, i * 4, i * 2, i * 2 + 2);
      right.copy(out, i * 4 + 2, i * 2, i * 2 + 2);
    }
    return out;
  }
  const l = new Int16Array(left.buffer, left.byteOffset, n);
  const r = new Int16Array(right.buffer, right.byteOffset, n);
  const o = new Int16Array(out.buffer, out.byteOffset, n * CHANNELS);
  for (let i = 0; i < n; i++) {
    o[2 * i] = l[i];
    o[2 * i + 1] = r[i];
  }
  return out;
}

/** One party's audio: samples laid on the timeline, written out to a spool file in batches. */
class Track {
  /** The timeline position (in samples) right after the last sample placed. */
  end = 0;
  private pendingAt = 0;
  private pending: Buffer[] = [];
  private pendingSamples = 0;
  private handle?: FileHandle;
  private writes: Promise<void> = Promise.resolve();
  error?: Error;

  constructor(
    private readonly file: () => Promise<string>,
    private readonly maxSamples: number,
  ) {}

  /** Places a frame that arrived at timeline sample `arrival`; returns false if it fell past the cap. */
  place(frame: PcmFrame, arrival: number): boolean {
    const start = arrival > this.end + msToSamples(GAP_TOLERANCE_MS) ? arrival : this.end;
    const count = Math.min(frame.length, this.maxSamples - start);
    if (count <= 0) return false;
    if (start !== this.pendingAt + this.pendingSamples) this.flush();
    if (this.pendingSamples === 0) this.pendingAt = start;
    const bytes = Buffer.alloc(count * BYTES_PER_SAMPLE);
    // 50 frames a second per party for the whole call: one copy, not a write per sample.
    if (LITTLE_ENDIAN) new Int16Array(bytes.buffer, bytes.byteOffset, count).set(frame.subarray(0, count));
    else for (let i = 0; i < count; i++) bytes.writeInt16LE(frame[i], i * BYTES_PER_SAMPLE);
    this.pending.push(bytes);
    this.pendingSamples += count;
    this.end = start + count;
    if (this.pendingSamples >= FLUSH_SAMPLES) this.flush();
    return count === frame.length;
  }

  /** Queues the pending samples for writing (writes run one after the other). */
  flush(): void {
    if (this.pendingSamples === 0) return;
    const data = Buffer.concat(this.pending);
    const position = this.pendingAt * BYTES_PER_SAMPLE;
    this.pending = [];
    this.pendingSamples = 0;
    this.writes = this.writes.then(async () => {
      if (this.error) return;
      try {
        this.handle ??= await open(await this.file(), 'w+');
        await this.handle.write(data, 0, data.length, position);
      } catch (err) {
        this.error = err as Error;
      }
    });
  }

  /** Every queued write done; throws the first write error. */
  async settle(): Promise<void> {
    this.flush();
    await this.writes;
    if (this.error) throw this.error;
  }

  /** Reads `samples` samples from timeline position `at`; what was never written is silence. */
  async read(at: number, samples: number): Promise<Buffer> {
    const buf = Buffer.alloc(samples * BYTES_PER_SAMPLE);
    if (this.handle) await this.handle.read(buf, 0, buf.length, at * BYTES_PER_SAMPLE);
    return buf;
  }

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }
}

export class CallRecorder {
  private readonly clock: () => number;
  private readonly startedAt: number;
  private readonly maxSamples: number;
  private readonly caller: Track;
  private readonly agent: Track;
  private readonly unsubscribe: (() => void)[];
  private spool?: Promise<string>;
  private truncated = false;
  private finishing?: Promise<RecordingResult>;
  private stopped = false;
  /** When finish() was first called, on the clock. */
  private endedAt = 0;

  private constructor(
    channel: MediaChannel,
    private readonly options: CallRecorderOptions,
  ) {
    this.clock = options.clock ?? (() => performance.now());
    this.startedAt = options.startedAt ?? this.clock();
    this.maxSamples = msToSamples(options.maxDurationMs ?? MAX_RECORDING_MS);
    this.caller = new Track(() => this.spoolFile('caller.pcm'), this.maxSamples);
    this.agent = new Track(() => this.spoolFile('agent.pcm'), this.maxSamples);
    this.unsubscribe = [channel.onInbound((frame) => this.place(this.caller, frame)), channel.onOutbound((frame) => this.place(this.agent, frame))];
  }

  /** Starts recording `channel`: caller = inbound, agent = outbound. */
  static start(channel: MediaChannel, options: CallRecorderOptions): CallRecorder {
    return new CallRecorder(channel, options);
  }

  /** The store key the recording is written under. */
  get key(): string {
    return this.options.key;
  }

  /** Whether the store holds a recording under the key (this one, or one written before it). */
  stored(): Promise<boolean> {
    return this.options.store.exists(this.options.key);
  }

  private spoolFile(name: string): Promise<string> {
    this.spool ??= mkdtemp(path.join(this.options.spoolDir ?? os.tmpdir(), 'call-recording-'));
    return this.spool.then((dir) => path.join(dir, name));
  }

  private place(track: Track, frame: PcmFrame): void {
    if (this.stopped) return;
    const arrival = msToSamples(this.clock() - this.startedAt);
    if (!track.place(frame, Math.max(0, arrival))) this.truncated = true;
  }

  /**
   * Stops listening and writes the WAV under the key: as long as the call lasted until now
   * (or until the last sample placed, if later), at most maxDurationMs. Calling it again
   * returns the same result; after a failure (the store was down) it can be called again,
   * since the spooled audio is kept until a write succeeds or discard() is called.
   */
  finish(): Promise<RecordingResult> {
    if (!this.stopped) {
      this.stopped = true;
      for (const off of this.unsubscribe) off();
      this.endedAt = this.clock();
    }
    this.finishing ??= this.write().then(
      async (result) => {
        await this.cleanUp();
        return result;
      },
      (err: unknown) => {
        this.finishing = undefined;
        throw err;
      },
    );
    return this.finishing;
  }

  /** Stops listening and drops the audio without writing anything. */
  async discard(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      for (const off of this.unsubscribe) off();
    }
    await Promise.allSettled([this.caller.settle(), this.agent.settle()]);
    await this.cleanUp();
  }

  private async write(): Promise<RecordingResult> {
    await Promise.all([this.caller.settle(), this.agent.settle()]);
    const elapsed = msToSamples(this.endedAt - this.startedAt);
    const samples = Math.min(this.maxSamples, Math.max(elapsed, this.caller.end, this.agent.end, 0));
    const dataBytes = samples * CHANNELS * BYTES_PER_SAMPLE;
    const { caller, agent } = this;
    async function* wav(): AsyncGenerator<Buffer> {
      yield wavHeader({ sampleRate: SAMPLE_RATE, channels: CHANNELS, dataBytes });
      for (let at = 0; at < samples; at += READ_SAMPLES) {
        const n = Math.min(READ_SAMPLES, samples - at);
        const [left, right] = await Promise.all([caller.read(at, n), agent.read(at, n)]);
        yield interleave(left, right, n);
      }
    }
    const bytes = WAV_HEADER_BYTES + dataBytes;
    await this.options.store.put(this.options.key, Readable.from(wav()), 'audio/wav', bytes, { ifAbsent: true });
    return { key: this.options.key, durationMs: Math.round((samples * 1000) / SAMPLE_RATE), bytes, truncated: this.truncated };
  }

  private async cleanUp(): Promise<void> {
    await Promise.all([this.caller.close(), this.agent.close()]);
    const dir = this.spool;
    this.spool = undefined;
    if (dir) await rm(await dir, { recursive: true, force: true });
  }
}
