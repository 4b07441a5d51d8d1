// A recording SIP-over-WebSocket endpoint (subprotocol `sip`) for tests that look at what a
// browser sends rather than at a call: it records every SIP request (above all the INVITE
// with its headers and SDP), answers 100 Trying and then a final response (480 unless told
// otherwise, after an optional action such as redeeming the INVITE's token). No media.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

export interface SipRequest {
  method: string;
  requestUri: string;
  /** Header lines in order, names as sent. */
  headers: [string, string][];
  body: string;
  raw: string;
}

/** The first value of a header, by case-insensitive name. */
export function sipHeader(request: SipRequest, name: string): string | undefined {
  const lower = name.toLowerCase();
  return request.headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

/** The final response to an INVITE. */
export interface FinalResponse {
  status: number;
  reason: string;
}

export interface SipTestEndpointOptions {
  port?: number;
  host?: string;
  path?: string;
  /** Decides the INVITE's final response; default 480 Temporarily Unavailable (no media here). */
  onInvite?: (invite: SipRequest) => Promise<FinalResponse> | FinalResponse;
}

export interface SipTestEndpoint {
  /** ws://host:port/path: what MEDIA_EDGE_WS_URL should be. */
  url: string;
  /** Every SIP request received, in order. */
  requests: SipRequest[];
  /** The first INVITE received: at once if there was one, else when it arrives. */
  firstInvite(timeoutMs?: number): Promise<SipRequest>;
  close(): Promise<void>;
}

/** Parses one SIP request (one WebSocket message carries one SIP message); undefined for responses. */
export function parseSipRequest(raw: string): SipRequest | undefined {
  const split = raw.indexOf('\r\n\r\n');
  const head = split === -1 ? raw : raw.slice(0, split);
  const body = split === -1 ? '' : raw.slice(split + 4);
  const [startLine, ...lines] = head.split('\r\n');
  const start = /^([A-Z]+) (\S+) SIP\/2\.0$/.exec(startLine);
  if (!start) return undefined;
  const headers: [string, string][] = [];
  for (const line of lines) {
    if (/^[ \t]/.test(line) && headers.length) {
      headers[headers.length - 1][1] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon > 0) headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  return { method: start[1], requestUri: start[2], headers, body, raw };
}

/** A response to `request` echoing its Via, From, To (tagged), Call-ID and CSeq. */
export function sipResponse(request: SipRequest, status: number, reason: string, toTag: string): string {
  const lines = [`SIP/2.0 ${status} ${reason}`];
  for (const [name, value] of request.headers) {
    const lower = name.toLowerCase();
    if (lower === 'via' || lower === 'v') lines.push(`Via: ${value}`);
  }
  const to = sipHeader(request, 'To') ?? sipHeader(request, 't') ?? '';
  lines.push(`From: ${sipHeader(request, 'From') ?? sipHeader(request, 'f') ?? ''}`);
  lines.push(`To: ${status > 100 && !/;\s*tag=/i.test(to) ? `${to};tag=${toTag}` : to}`);
  lines.push(`Call-ID: ${sipHeader(request, 'Call-ID') ?? sipHeader(request, 'i') ?? ''}`);
  lines.push(`CSeq: ${sipHeader(request, 'CSeq') ?? ''}`);
  lines.push('Content-Length: 0', '', '');
  return lines.join('\r\n');
}

export async function startSipTestEndpoint(opts: SipTestEndpointOptions = {}): Promise<SipTestEndpoint> {
  const host = opts.host ?? '127.0.0.1';
  const path = opts.path ?? '/ws';
  const server = new WebSocketServer({
    host,
    port: opts.port ?? 0,
    path,
    // RFC 7118: the WebSocket subprotocol is `sip`.
    handleProtocols: (protocols) => (protocols.has('sip') ? 'sip' : false),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const requests: SipRequest[] = [];
  const waiters: ((invite: SipRequest) => void)[] = [];

  const onMessage = async (socket: WebSocket, data: string) => {
    const request = parseSipRequest(data);
    if (!request) return; // a response (e.g. to nothing we sent): ignore
    requests.push(request);
    if (request.method === 'ACK') return;
    const toTag = randomBytes(6).toString('hex');
    if (request.method !== 'INVITE') {
      socket.send(sipResponse(request, 200, 'OK', toTag));
      return;
    }
    waiters.splice(0).forEach((w) => w(request));
    socket.send(sipResponse(request, 100, 'Trying', toTag));
    let final: FinalResponse = { status: 480, reason: 'Temporarily Unavailable' };
    try {
      if (opts.onInvite) final = await opts.onInvite(request);
    } catch {
      final = { status: 500, reason: 'Server Internal Error' };
    }
    socket.send(sipResponse(request, final.status, final.reason, toTag));
  };

  server.on('connection', (socket) => {
    socket.on('message', (data) => void onMessage(socket, data.toString()));
  });

  const port = (server.address() as AddressInfo).port;
  return {
    url: `ws://${host}:${port}${path}`,
    requests,
    firstInvite(timeoutMs = 30_000) {
      const recorded = requests.find((r) => r.method === 'INVITE');
      if (recorded) return Promise.resolve(recorded);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no INVITE within ${timeoutMs} ms`)), timeoutMs);
        waiters.push((invite) => {
          clearTimeout(timer);
          resolve(invite);
        });
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}
