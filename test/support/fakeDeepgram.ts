// A fake Deepgram for tests: a local WebSocket server speaking the live recognition
// protocol of wss://api.deepgram.com/v1/listen as Deepgram documents it. The handshake
// needs `Authorization: Token <key>` (a wrong or missing key is refused with HTTP 401 and a
// dg-error header, as Deepgram does) and a valid encoding/sample_rate/channels; every other
// query parameter is recorded for the test to check. Binary messages are audio; text
// messages are the control messages KeepAlive, Finalize and CloseStream. While audio
// arrives it sends interim `Results` (is_final false); on Finalize the finals so far
// (from_finalize true); on CloseStream the last finals, a `Metadata` message and a 1000
// close. It cannot hear: what it "recognises" is the transcript the test gives it, released
// word by word as audio arrives. Failure modes for the fallback tests: close mid-stream
// (1011, as Deepgram's NET errors do) or never answer.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { refuseHandshake, WebSocketFakeServer } from './webSocketFake.js';

export type FakeDeepgramBehaviour =
  /** Answers as Deepgram does. */
  | 'normal'
  /** Closes the stream with 1011 once some audio has come, with no answer. */
  | 'close_mid_stream'
  /** Accepts the connection and the audio but never answers. */
  | 'silent';

export interface FakeDeepgramRequest {
  path: string;
  query: URLSearchParams;
  authorization: string | undefined;
  status: number;
  /** Bytes of audio received on the stream, and the control messages, in order. */
  audioBytes: number;
  controls: string[];
}

const AUDIO_ENCODINGS = new Set(['linear16', 'linear32', 'flac', 'alaw', 'mulaw', 'amr-nb', 'amr-wb', 'opus', 'ogg-opus', 'speex', 'g729']);

export class FakeDeepgram {
  readonly requests: FakeDeepgramRequest[] = [];
  /** What the next streams "hear" (lower-case words; a transcript per stream, the last one repeating). */
  transcripts: string[] = ['hello'];
  behaviour: FakeDeepgramBehaviour = 'normal';
  /** Behaviours of the next streams, one each, before `behaviour` applies again. */
  nextBehaviours: FakeDeepgramBehaviour[] = [];
  /** Deepgram closes a stream that gets neither audio nor a KeepAlive for about 10 s (NET-0001). */
  idleTimeoutMs = 10_000;
  /** Streams the server has accepted so far. */
  streams = 0;
  private server!: WebSocketFakeServer;

  private constructor(readonly apiKey: string) {}

  static async start(apiKey = 'dg-test-key'): Promise<FakeDeepgram> {
    const fake = new FakeDeepgram(apiKey);
    fake.server = await WebSocketFakeServer.listen((req, socket, head) => fake.upgrade(req, socket, head));
    return fake;
  }

  get baseUrl(): string {
    return this.server.baseUrl;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private refuse(socket: Socket, status: number, reason: string, errCode: string, errMsg: string): void {
    const requestId = randomUUID();
    const body = JSON.stringify({ err_code: errCode, err_msg: errMsg, request_id: requestId });
    refuseHandshake(socket, status, reason, body, { 'dg-request-id': requestId, 'dg-error': body });
  }

  private upgrade(req: http.IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const request: FakeDeepgramRequest = { path: url.pathname, query: url.searchParams, authorization: req.headers.authorization, status: 101, audioBytes: 0, controls: [] };
    this.requests.push(request);
    if (url.pathname !== '/v1/listen') {
      request.status = 404;
      return this.refuse(socket, 404, 'Not Found', 'NOT_FOUND', 'No such endpoint.');
    }
    if (req.headers.authorization !== `Token ${this.apiKey}`) {
      request.status = 401;
      return this.refuse(socket, 401, 'Unauthorized', 'INVALID_AUTH', 'Invalid credentials.');
    }
    const encoding = url.searchParams.get('encoding');
    const sampleRate = url.searchParams.get('sample_rate');
    const channels = url.searchParams.get('channels') ?? '1';
    // Raw audio needs its encoding and rate; Deepgram refuses a stream it cannot decode.
    if (encoding !== null && (!AUDIO_ENCODINGS.has(encoding) || !sampleRate || !/^\d+$/.test(sampleRate) || !/^\d+$/.test(channels))) {
      request.status = 400;
      return this.refuse(socket, 400, 'Bad Request', 'Bad Request', 'Raw audio needs a valid encoding, sample_rate and channels.');
    }
    this.server.accept(req, socket, head, (ws) => this.stream(ws, request));
  }

  private stream(ws: WebSocket, request: FakeDeepgramRequest): void {
    const words = (this.transcripts[Math.min(this.streams, this.transcripts.length - 1)] ?? '').split(/\s+/).filter(Boolean);
    this.streams++;
    const behaviour = this.nextBehaviours.shift() ?? this.behaviour;
    const bytesPerSecond = Number(request.query.get('sample_rate') ?? 16000) * 2 * Number(request.query.get('channels') ?? 1);
    const interim = request.query.get('interim_results') === 'true';
    let finalised = 0; // words already sent as final
    let heardUpTo = 0; // words the audio so far "contains": one per 100 ms
    let start = 0;
    const requestId = randomUUID();
    let idle: NodeJS.Timeout | undefined;
    const stillThere = () => {
      clearTimeout(idle);
      idle = setTimeout(() => ws.close(1011, 'NET-0001: No audio received within the timeout window.'), this.idleTimeoutMs);
    };
    stillThere();
    ws.on('close', () => clearTimeout(idle));
    const results = (from: number, to: number, isFinal: boolean, extra: Record<string, unknown> = {}) => {
      const seconds = request.audioBytes / bytesPerSecond;
      ws.send(
        JSON.stringify({
          type: 'Results',
          channel_index: [0, 1],
          duration: Math.max(0, seconds - start),
          start,
          is_final: isFinal,
          speech_final: isFinal,
          channel: { alternatives: [{ transcript: words.slice(from, to).join(' '), confidence: 0.99, words: words.slice(from, to).map((word) => ({ word, start, end: seconds, confidence: 0.99 })) }] },
          metadata: { request_id: requestId, model_info: { name: request.query.get('model') ?? 'general', version: 'fake', arch: 'fake' }, model_uuid: randomUUID() },
          ...extra,
        }),
      );
      if (isFinal) start = seconds;
    };
    const finalise = (extra: Record<string, unknown> = {}) => {
      if (words.length > finalised) results(finalised, words.length, true, extra);
      finalised = words.length;
    };
    ws.on('message', (data, isBinary) => {
      stillThere();
      if (isBinary) {
        request.audioBytes += (data as Buffer).length;
        if (behaviour === 'close_mid_stream' && request.audioBytes >= bytesPerSecond * 0.1) {
          ws.close(1011, 'NET-0001: The connection was closed unexpectedly.');
          return;
        }
        if (behaviour === 'silent') return;
        const heard = Math.min(words.length, Math.floor(request.audioBytes / (bytesPerSecond * 0.1)));
        if (interim && heard > heardUpTo) results(finalised, heard, false);
        heardUpTo = heard;
        return;
      }
      let control: { type?: unknown };
      try {
        control = JSON.parse(String(data)) as { type?: unknown };
      } catch {
        ws.close(1008, 'DATA-0000: The payload cannot be decoded as audio.');
        return;
      }
      request.controls.push(String(control.type));
      if (behaviour === 'silent') return;
      if (control.type === 'Finalize') finalise({ from_finalize: true });
      else if (control.type === 'CloseStream') {
        finalise();
        ws.send(
          JSON.stringify({
            type: 'Metadata',
            transaction_key: 'deprecated',
            request_id: requestId,
            sha256: '0'.repeat(64),
            created: new Date().toISOString(),
            duration: request.audioBytes / bytesPerSecond,
            channels: Number(request.query.get('channels') ?? 1),
          }),
        );
        ws.close(1000);
      }
    });
  }
}
