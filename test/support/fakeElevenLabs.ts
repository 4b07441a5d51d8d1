// A fake ElevenLabs for tests: a local WebSocket server speaking the text-to-speech
// stream-input protocol (wss://api.elevenlabs.io/v1/text-to-speech/{voice_id}/stream-input)
// as ElevenLabs documents it. The key comes in the xi-api-key header (a wrong one is refused
// with HTTP 401) or, without the header, as xi_api_key in the first message (a wrong or
// missing one gets an error message and a 1008 close). The first message must be the
// single-space opening; text messages accumulate; the empty text ends the input, and the
// fake then answers `audio` chunks (base64, in the query's output_format) and a last
// `{ isFinal: true }`, then closes 1000. It cannot speak: its audio is a 440 Hz tone of
// MS_PER_CHARACTER per character of the text, so a test knows what to expect. Failure modes
// for the fallback tests: close mid-stream (1011) after the first chunk, or never answer.
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { encodeMulaw } from '../../src/mediaEdge/audio/mulaw.js';
import { int16ToLittleEndian } from '../../src/mediaEdge/audio/wav.js';
import { refuseHandshake, WebSocketFakeServer } from './webSocketFake.js';

export const MS_PER_CHARACTER = 40;
export const TONE_HZ = 440;
export const TONE_AMPLITUDE = 6000;
const PCM_RATES: Record<string, number> = { pcm_8000: 8000, pcm_16000: 16000, pcm_22050: 22050, pcm_24000: 24000, pcm_44100: 44100 };

export type FakeElevenLabsBehaviour = 'normal' | 'close_mid_stream' | 'silent';

export interface FakeElevenLabsRequest {
  path: string;
  voiceId: string | undefined;
  query: URLSearchParams;
  apiKeyHeader: string | undefined;
  status: number;
  /** The client's messages, parsed, in order. */
  messages: Record<string, unknown>[];
}

/** The fake's audio for `text`, as 16-bit samples at `rate`. */
export function fakeSpeech(text: string, rate: number): Int16Array {
  const count = Math.round((text.length * MS_PER_CHARACTER * rate) / 1000);
  return Int16Array.from({ length: count }, (_, i) => Math.round(TONE_AMPLITUDE * Math.sin((2 * Math.PI * TONE_HZ * i) / rate)));
}

export class FakeElevenLabs {
  readonly requests: FakeElevenLabsRequest[] = [];
  behaviour: FakeElevenLabsBehaviour = 'normal';
  /** Behaviours of the next streams, one each, before `behaviour` applies again. */
  nextBehaviours: FakeElevenLabsBehaviour[] = [];
  private server!: WebSocketFakeServer;

  private constructor(readonly apiKey: string) {}

  static async start(apiKey = 'xi-test-key'): Promise<FakeElevenLabs> {
    const fake = new FakeElevenLabs(apiKey);
    fake.server = await WebSocketFakeServer.listen((req, socket, head) => fake.upgrade(req, socket, head));
    return fake;
  }

  get baseUrl(): string {
    return this.server.baseUrl;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private refuse(socket: Socket, status: number, reason: string, detail: { status: string; message: string }): void {
    refuseHandshake(socket, status, reason, JSON.stringify({ detail }));
  }

  private upgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const match = /^\/v1\/text-to-speech\/([^/]+)\/stream-input$/.exec(url.pathname);
    const header = req.headers['xi-api-key'];
    const request: FakeElevenLabsRequest = {
      path: url.pathname,
      voiceId: match ? decodeURIComponent(match[1]) : undefined,
      query: url.searchParams,
      apiKeyHeader: typeof header === 'string' ? header : undefined,
      status: 101,
      messages: [],
    };
    this.requests.push(request);
    if (!match) {
      request.status = 404;
      return this.refuse(socket, 404, 'Not Found', { status: 'not_found', message: 'Not found' });
    }
    if (request.apiKeyHeader !== undefined && request.apiKeyHeader !== this.apiKey) {
      request.status = 401;
      return this.refuse(socket, 401, 'Unauthorized', { status: 'invalid_api_key', message: 'Invalid API key' });
    }
    const format = url.searchParams.get('output_format') ?? 'mp3_44100_128';
    if (format !== 'ulaw_8000' && !(format in PCM_RATES)) {
      // The fake makes no MP3 or Opus: only the raw formats the edge can use.
      request.status = 400;
      return this.refuse(socket, 400, 'Bad Request', { status: 'invalid_output_format', message: `Unsupported output_format ${format}` });
    }
    this.server.accept(req, socket, head, (ws) => this.stream(ws, request, format));
  }

  private stream(ws: WebSocket, request: FakeElevenLabsRequest, format: string): void {
    const behaviour = this.nextBehaviours.shift() ?? this.behaviour;
    let text = '';
    const error = (message: string, errorCode: string) => {
      ws.send(JSON.stringify({ message, error: errorCode, code: 1008 }));
      ws.close(1008, message);
    };
    ws.on('message', (data, isBinary) => {
      if (isBinary) return error('Binary messages are not supported', 'invalid_message');
      let message: Record<string, unknown>;
      try {
        message = JSON.parse(String(data)) as Record<string, unknown>;
      } catch {
        return error('Invalid JSON', 'invalid_message');
      }
      request.messages.push(message);
      if (request.messages.length === 1) {
        if (request.apiKeyHeader === undefined && message.xi_api_key !== this.apiKey) return error('Invalid API key', 'invalid_api_key');
        if (message.text !== ' ') return error('The first message must be a single space', 'invalid_message');
        return;
      }
      if (typeof message.text !== 'string') return error('text is required', 'invalid_message');
      if (message.text !== '') {
        text += message.text;
        return;
      }
      if (behaviour === 'silent') return;
      this.speak(ws, text.trim(), format, behaviour);
    });
  }

  private speak(ws: WebSocket, text: string, format: string, behaviour: FakeElevenLabsBehaviour): void {
    const rate = format === 'ulaw_8000' ? 8000 : PCM_RATES[format];
    const samples = fakeSpeech(text, rate);
    const bytes = format === 'ulaw_8000' ? Buffer.from(encodeMulaw(samples)) : int16ToLittleEndian(samples);
    // Odd-sized chunks: a sample may straddle two of them, as it can from the real service.
    const chunk = 3_201;
    for (let at = 0; at < bytes.length; at += chunk) {
      ws.send(JSON.stringify({ audio: bytes.subarray(at, at + chunk).toString('base64'), isFinal: null, normalizedAlignment: null, alignment: null }));
      if (behaviour === 'close_mid_stream') {
        ws.close(1011, 'Internal server error');
        return;
      }
    }
    ws.send(JSON.stringify({ isFinal: true }));
    ws.close(1000);
  }
}
