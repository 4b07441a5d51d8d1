/**
 * ElevenLabs streaming synthesis (TTS_PROVIDER=elevenlabs): one WebSocket to
 * /v1/text-to-speech/{voice_id}/stream-input per line, authenticated by the xi-api-key
 * header. It sends the opening message (a single space with the voice settings), the line,
 * and the empty text that ends the input; ElevenLabs answers with `audio` chunks (base64)
 * and a last message with `isFinal: true`. docs/speech.md, "ElevenLabs".
 *
 * The output format is asked for in the query: pcm_16000 is the channel's own format (raw
 * 16-bit little-endian), ulaw_8000 is what a telephone leg carries (G.711 μ-law), decoded
 * and resampled here into the channel's 16 kHz frames. A refused handshake (401 on a bad
 * key), an error message, a close before isFinal, or silence past the answer timeout makes
 * the iteration throw a CloudSpeechError (the fallback engine then takes over).
 */
import { FrameAssembler } from '../audio/frames.js';
import { decodeMulaw } from '../audio/mulaw.js';
import { Resampler } from '../audio/resample.js';
import { int16FromLittleEndian } from '../audio/wav.js';
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import type { SpeechSynthesizer, SynthesisOptions } from './interfaces.js';
import { hasWords, plainText } from './speakableText.js';
import { CloudSpeechError, openVendorSocket, vendorUrl } from './vendorSocket.js';

export const ELEVENLABS_DEFAULT_BASE_URL = 'wss://api.elevenlabs.io';
/** ElevenLabs' low-latency English-capable model. */
export const ELEVENLABS_DEFAULT_MODEL_ID = 'eleven_flash_v2_5';
/** "Rachel", a premade voice every account has (the one ElevenLabs' own examples use). */
export const ELEVENLABS_DEFAULT_VOICE_ID = '21m00Tcm4TlvDq8ikWAM';
/** The formats the edge can turn into its channel's frames. */
export const ELEVENLABS_OUTPUT_FORMATS = ['pcm_16000', 'ulaw_8000'] as const;
export type ElevenLabsOutputFormat = (typeof ELEVENLABS_OUTPUT_FORMATS)[number];

/** The wire format: the messages the adapter sends. */
export interface ElevenLabsOpening {
  text: ' ';
  voice_settings: { stability: number; similarity_boost: number; speed?: number };
  generation_config?: { chunk_length_schedule: number[] };
}
export interface ElevenLabsText {
  text: string;
  try_trigger_generation?: boolean;
  flush?: boolean;
}
/** What the stream-input endpoint sends back (the fields the adapter reads). */
export interface ElevenLabsOutput {
  audio?: string | null;
  isFinal?: boolean | null;
  normalizedAlignment?: unknown;
  alignment?: unknown;
  /** An error answer: ElevenLabs names it and usually closes the socket. */
  error?: string;
  message?: string;
}

export interface ElevenLabsOptions {
  apiKey: string;
  baseUrl?: string;
  voiceId?: string;
  modelId?: string;
  outputFormat?: ElevenLabsOutputFormat;
  connectTimeoutMs: number;
  /** Longest wait for the first audio of a line, and between its chunks. */
  answerTimeoutMs: number;
}

/** The samples at the channel's rate of the audio chunks of one line, as they stream in. */
class AudioDecoder {
  private odd: Buffer = Buffer.alloc(0);
  private readonly resampler: Resampler | undefined;

  constructor(private readonly format: ElevenLabsOutputFormat) {
    if (format === 'ulaw_8000') this.resampler = new Resampler(8000, SAMPLE_RATE);
  }

  push(bytes: Buffer): Int16Array {
    if (this.format === 'ulaw_8000') return this.resampler!.push(decodeMulaw(bytes));
    // Chunks may split a sample: keep the odd byte for the next one.
    const joined = this.odd.length ? Buffer.concat([this.odd, bytes]) : bytes;
    this.odd = joined.length % 2 ? Buffer.from(joined.subarray(joined.length - 1)) : Buffer.alloc(0);
    return int16FromLittleEndian(joined.subarray(0, joined.length - this.odd.length));
  }

  flush(): Int16Array {
    return this.resampler ? this.resampler.flush() : new Int16Array(0);
  }
}

export class ElevenLabsSynthesizer implements SpeechSynthesizer {
  readonly name = 'elevenlabs';
  private readonly open = new Set<{ terminate(): void }>();

  constructor(private readonly options: ElevenLabsOptions) {}

  get outputFormat(): ElevenLabsOutputFormat {
    return this.options.outputFormat ?? 'pcm_16000';
  }

  /** Nothing to load: a connection is made per line (and a check at start-up would spend characters). */
  async warmUp(): Promise<void> {}

  async close(): Promise<void> {
    for (const socket of this.open) socket.terminate();
  }

  async *synthesize(text: string, options: SynthesisOptions = {}): AsyncIterable<PcmFrame> {
    const line = plainText(text);
    if (!hasWords(line) || options.signal?.aborted) return;
    const format = this.outputFormat;
    const voiceId = this.options.voiceId ?? ELEVENLABS_DEFAULT_VOICE_ID;
    const url = vendorUrl(
      this.options.baseUrl ?? ELEVENLABS_DEFAULT_BASE_URL,
      `/v1/text-to-speech/${encodeURIComponent(voiceId)}/stream-input`,
      new URLSearchParams({ model_id: this.options.modelId ?? ELEVENLABS_DEFAULT_MODEL_ID, output_format: format }),
    );
    const { socket, opened } = openVendorSocket({ vendor: 'ElevenLabs', url, headers: { 'xi-api-key': this.options.apiKey }, connectTimeoutMs: this.options.connectTimeoutMs });
    this.open.add(socket);

    // The socket's events, queued for the loop below.
    type SocketEvent = { kind: 'open' } | { kind: 'message'; data: string } | { kind: 'closed'; code: number; reason: string } | { kind: 'failed'; error: Error };
    const inbox: SocketEvent[] = [];
    let wake: (() => void) | undefined;
    const post = (event: SocketEvent) => {
      inbox.push(event);
      wake?.();
    };
    socket.on('open', () => post({ kind: 'open' }));
    socket.on('message', (data, isBinary) => {
      if (!isBinary) post({ kind: 'message', data: String(data) });
    });
    socket.on('close', (code, reason) => post({ kind: 'closed', code, reason: String(reason) }));
    opened.catch((error: Error) => post({ kind: 'failed', error }));
    const aborted = () => wake?.();
    options.signal?.addEventListener('abort', aborted);

    /** The next event; undefined once aborted; throws when none comes in time. */
    const next = async (timeoutMs: number, waitingFor: string): Promise<SocketEvent | undefined> => {
      while (inbox.length === 0) {
        if (options.signal?.aborted) return undefined;
        let timer: NodeJS.Timeout | undefined;
        const timedOut = await new Promise<boolean>((resolve) => {
          wake = () => resolve(false);
          timer = setTimeout(() => resolve(true), timeoutMs);
        });
        clearTimeout(timer);
        wake = undefined;
        if (timedOut && inbox.length === 0 && !options.signal?.aborted) throw new CloudSpeechError('ElevenLabs', `no ${waitingFor} within ${timeoutMs} ms`);
      }
      return inbox.shift();
    };

    try {
      // openVendorSocket bounds the connection itself; the margin only guards against a lost event.
      const first = await next(this.options.connectTimeoutMs + 1_000, 'connection');
      if (!first) return;
      if (first.kind === 'failed') throw first.error;
      if (first.kind !== 'open') {
        await opened; // a refused or broken handshake closes before `opened` rejects with the reason
        throw new CloudSpeechError('ElevenLabs', 'the connection closed as it opened');
      }
      if (options.signal?.aborted) return;
      const opening: ElevenLabsOpening = { text: ' ', voice_settings: { stability: 0.5, similarity_boost: 0.8 } };
      const body: ElevenLabsText = { text: `${line} `, try_trigger_generation: true };
      const end: ElevenLabsText = { text: '' };
      for (const message of [opening, body, end]) socket.send(JSON.stringify(message));

      const decoder = new AudioDecoder(format);
      const frames = new FrameAssembler();
      for (;;) {
        const event = await next(this.options.answerTimeoutMs, 'audio');
        if (!event) return; // aborted
        if (event.kind === 'failed') throw event.error;
        if (event.kind === 'closed') throw new CloudSpeechError('ElevenLabs', `the stream closed before the end of the line (${event.code}${event.reason ? ` ${event.reason}` : ''})`);
        if (event.kind !== 'message') continue;
        let output: ElevenLabsOutput;
        try {
          output = JSON.parse(event.data) as ElevenLabsOutput;
        } catch {
          throw new CloudSpeechError('ElevenLabs', 'sent a message that is not JSON');
        }
        if (output.error || (output.message && !output.audio && !output.isFinal)) {
          throw new CloudSpeechError('ElevenLabs', `refused the line: ${[output.error, output.message].filter(Boolean).join(': ')}`);
        }
        if (output.audio) for (const frame of frames.push(decoder.push(Buffer.from(output.audio, 'base64')))) yield frame;
        if (output.isFinal) {
          for (const frame of [...frames.push(decoder.flush()), ...frames.flush()]) yield frame;
          return;
        }
      }
    } finally {
      options.signal?.removeEventListener('abort', aborted);
      this.open.delete(socket);
      if (socket.readyState === socket.OPEN) socket.close(1000);
      else socket.terminate();
    }
  }
}
