// A scriptable SIP-over-WebSocket user agent client for the media edge's tests: sends what a
// browser's JsSIP would (INVITE with extra headers and an SDP offer, ACK, BYE, CANCEL,
// OPTIONS), or anything else raw, and records every message it receives.
import { randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import {
  createResponse,
  getHeader,
  parseSipMessage,
  serializeSipMessage,
  type SipHeader,
  type SipMessage,
  type SipRequest,
  type SipResponse,
} from '../../src/mediaEdge/sip/message.js';

const rand = (n = 6) => randomBytes(n).toString('hex');

/** A syntactically complete WebRTC audio offer (nothing listens on it): for SIP-only tests. */
export function staticAudioOffer(codecs: 'opus' | 'pcmu' | 'none' = 'opus', ufrag = 'abcd'): string {
  const formats = codecs === 'opus' ? '111 0' : codecs === 'pcmu' ? '0' : '9';
  const rtpmaps =
    codecs === 'opus' ? ['a=rtpmap:111 opus/48000/2', 'a=rtpmap:0 PCMU/8000'] : codecs === 'pcmu' ? ['a=rtpmap:0 PCMU/8000'] : ['a=rtpmap:9 G722/8000'];
  return [
    'v=0',
    'o=- 4611731400430051336 2 IN IP4 127.0.0.1',
    's=-',
    't=0 0',
    'a=group:BUNDLE 0',
    `m=audio 9 UDP/TLS/RTP/SAVPF ${formats}`,
    'c=IN IP4 0.0.0.0',
    `a=ice-ufrag:${ufrag}`,
    'a=ice-pwd:aaaaaaaaaaaaaaaaaaaaaaaa',
    'a=fingerprint:sha-256 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF',
    'a=setup:actpass',
    'a=mid:0',
    'a=sendrecv',
    'a=rtcp-mux',
    ...rtpmaps,
    '',
  ].join('\r\n');
}

export interface InviteOptions {
  headers?: Record<string, string>;
  sdp?: string;
  /** Request-URI (default sip:agent@edge.test). */
  target?: string;
  extraHeaders?: SipHeader[];
}

export interface ConnectOptions {
  /** The local address to connect from (127.0.0.2 is another caller on Linux's loopback). */
  localAddress?: string;
}

/** A handshake the edge refused: its HTTP status and Retry-After. */
export interface RefusedConnection {
  status: number;
  retryAfter?: string;
}

/** One outgoing call's identifiers, enough to build its ACK, BYE and CANCEL. */
export interface ClientDialog {
  invite: SipRequest;
  callId: string;
  fromTag: string;
  branch: string;
  cseq: number;
  /** The To of the 2xx (with the edge's tag), once answered. */
  remoteTo?: string;
  /** The edge's Contact URI, once answered. */
  remoteTarget?: string;
}

export class SipTestClient {
  readonly received: SipMessage[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: { match: (m: SipMessage) => boolean; resolve: (m: SipMessage) => void }[] = [];
  /** Answer the edge's BYE with 200 (default true). */
  autoAnswerBye = true;

  private constructor(
    readonly socket: WebSocket,
    readonly host = `${rand(4)}.invalid`,
  ) {
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    socket.on('message', (data) => {
      let message: SipMessage;
      try {
        message = parseSipMessage(data.toString());
      } catch {
        return;
      }
      this.received.push(message);
      if (message.kind === 'request' && message.method === 'BYE' && this.autoAnswerBye) this.send(createResponse(message, 200));
      const waiting = this.waiters.filter((w) => w.match(message));
      this.waiters = this.waiters.filter((w) => !waiting.includes(w));
      for (const w of waiting) w.resolve(message);
    });
  }

  static async connect(url: string, protocol = 'sip', options: ConnectOptions = {}): Promise<SipTestClient> {
    const socket = new WebSocket(url, protocol, options);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return new SipTestClient(socket);
  }

  /** Connects, or resolves with the HTTP answer that refused the handshake. */
  static attempt(url: string, options: ConnectOptions = {}): Promise<SipTestClient | RefusedConnection> {
    const socket = new WebSocket(url, 'sip', options);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new SipTestClient(socket)));
      socket.once('unexpected-response', (_req, res) => {
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
        socket.terminate();
      });
      // After a refusal, terminate() reports an error of its own: the promise is settled by then.
      socket.on('error', reject);
    });
  }

  send(message: SipMessage | string): void {
    this.socket.send(typeof message === 'string' ? message : serializeSipMessage(message));
  }

  /** The first message (already received or to come) that matches. */
  waitFor(match: (m: SipMessage) => boolean, timeoutMs = 5000, what = 'a SIP message'): Promise<SipMessage> {
    const seen = this.received.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms; received: ${this.received.map(describe).join(', ')}`)), timeoutMs);
      this.waiters.push({
        match,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  }

  /** The final response to a request of ours (by Call-ID and CSeq). */
  async finalResponse(request: SipRequest, timeoutMs = 5000): Promise<SipResponse> {
    const cseq = getHeader(request, 'CSeq');
    const callId = getHeader(request, 'Call-ID');
    return (await this.waitFor(
      (m) => m.kind === 'response' && m.status >= 200 && getHeader(m, 'CSeq') === cseq && getHeader(m, 'Call-ID') === callId,
      timeoutMs,
      `final response to ${request.method}`,
    )) as SipResponse;
  }

  responsesTo(request: SipRequest): SipResponse[] {
    const cseq = getHeader(request, 'CSeq');
    const callId = getHeader(request, 'Call-ID');
    return this.received.filter((m): m is SipResponse => m.kind === 'response' && getHeader(m, 'CSeq') === cseq && getHeader(m, 'Call-ID') === callId);
  }

  private via(branch: string): SipHeader {
    return { name: 'Via', value: `SIP/2.0/WSS ${this.host};branch=${branch}` };
  }

  /** Sends an INVITE as JsSIP would and returns its dialog identifiers. */
  invite(options: InviteOptions = {}): ClientDialog {
    const target = options.target ?? 'sip:agent@edge.test';
    const dialog: ClientDialog = { callId: rand(10), fromTag: rand(5), branch: `z9hG4bK${rand(8)}`, cseq: 1 + Math.floor(Math.random() * 1000), invite: undefined! };
    const sdp = options.sdp ?? staticAudioOffer();
    dialog.invite = {
      kind: 'request',
      method: 'INVITE',
      uri: target,
      headers: [
        this.via(dialog.branch),
        { name: 'Max-Forwards', value: '69' },
        { name: 'To', value: `<${target}>` },
        { name: 'From', value: `<sip:web-caller@edge.test>;tag=${dialog.fromTag}` },
        { name: 'Call-ID', value: dialog.callId },
        { name: 'CSeq', value: `${dialog.cseq} INVITE` },
        { name: 'Contact', value: `<sip:${rand(4)}@${this.host};transport=ws;ob>` },
        ...Object.entries(options.headers ?? {}).map(([name, value]) => ({ name, value })),
        ...(options.extraHeaders ?? []),
        { name: 'Allow', value: 'INVITE,ACK,CANCEL,BYE,UPDATE,MESSAGE,OPTIONS,REFER,INFO,NOTIFY' },
        { name: 'Supported', value: 'ice,replaces,outbound' },
        { name: 'User-Agent', value: 'JsSIP 3.13 (test)' },
        ...(sdp ? [{ name: 'Content-Type', value: 'application/sdp' }] : []),
      ],
      body: sdp,
    };
    this.send(dialog.invite);
    return dialog;
  }

  /** Waits for the INVITE's final response; on a 2xx records the dialog's remote side and sends the ACK. */
  async answered(dialog: ClientDialog, timeoutMs = 10_000): Promise<SipResponse> {
    const response = await this.finalResponse(dialog.invite, timeoutMs);
    if (response.status < 300) {
      dialog.remoteTo = getHeader(response, 'To');
      dialog.remoteTarget = /<([^>]+)>/.exec(getHeader(response, 'Contact') ?? '')?.[1];
      this.ack(dialog);
    }
    return response;
  }

  ack(dialog: ClientDialog): void {
    this.send(this.inDialog(dialog, 'ACK', dialog.cseq));
  }

  /** An in-dialog request of ours (BYE, re-INVITE, OPTIONS…); CSeq moves on unless given. */
  inDialog(dialog: ClientDialog, method: string, cseq = ++dialog.cseq, body = '', extra: SipHeader[] = []): SipRequest {
    return {
      kind: 'request',
      method,
      uri: dialog.remoteTarget ?? dialog.invite.uri,
      headers: [
        this.via(`z9hG4bK${rand(8)}`),
        { name: 'Max-Forwards', value: '69' },
        { name: 'To', value: dialog.remoteTo ?? getHeader(dialog.invite, 'To')! },
        { name: 'From', value: getHeader(dialog.invite, 'From')! },
        { name: 'Call-ID', value: dialog.callId },
        { name: 'CSeq', value: `${cseq} ${method}` },
        ...extra,
        ...(body ? [{ name: 'Content-Type', value: 'application/sdp' }] : []),
      ],
      body,
    };
  }

  bye(dialog: ClientDialog): SipRequest {
    const bye = this.inDialog(dialog, 'BYE');
    this.send(bye);
    return bye;
  }

  cancel(dialog: ClientDialog): SipRequest {
    const cancel: SipRequest = {
      kind: 'request',
      method: 'CANCEL',
      uri: dialog.invite.uri,
      headers: [
        this.via(dialog.branch),
        { name: 'Max-Forwards', value: '69' },
        { name: 'To', value: getHeader(dialog.invite, 'To')! },
        { name: 'From', value: getHeader(dialog.invite, 'From')! },
        { name: 'Call-ID', value: dialog.callId },
        { name: 'CSeq', value: `${dialog.cseq} CANCEL` },
      ],
      body: '',
    };
    this.send(cancel);
    return cancel;
  }

  /** An out-of-dialog request with the mandatory headers. */
  request(method: string, uri = 'sip:agent@edge.test', extra: SipHeader[] = []): SipRequest {
    const request: SipRequest = {
      kind: 'request',
      method,
      uri,
      headers: [
        this.via(`z9hG4bK${rand(8)}`),
        { name: 'Max-Forwards', value: '69' },
        { name: 'To', value: `<${uri}>` },
        { name: 'From', value: `<sip:web-caller@edge.test>;tag=${rand(5)}` },
        { name: 'Call-ID', value: rand(10) },
        { name: 'CSeq', value: `1 ${method}` },
        ...extra,
      ],
      body: '',
    };
    this.send(request);
    return request;
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    this.socket.close();
    const timer = setTimeout(() => this.socket.terminate(), 1000);
    await this.closed;
    clearTimeout(timer);
  }
}

function describe(m: SipMessage): string {
  return m.kind === 'request' ? `${m.method}` : `${m.status} (${getHeader(m, 'CSeq')})`;
}
