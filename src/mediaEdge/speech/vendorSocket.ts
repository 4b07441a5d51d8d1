/**
 * Opening a cloud speech engine's WebSocket (Deepgram, ElevenLabs) with a bound on the
 * connect time, and a refused handshake told as the vendor told it (its HTTP status and
 * error text), never the key. One place, so every cloud adapter fails the same way.
 */
import WebSocket from 'ws';

/** A cloud engine failed: refused, unreachable, too slow, or closed mid-stream. */
export class CloudSpeechError extends Error {
  constructor(
    readonly vendor: string,
    message: string,
  ) {
    super(`${vendor}: ${message}`);
    this.name = 'CloudSpeechError';
  }
}

export interface VendorSocketOptions {
  vendor: string;
  url: URL;
  headers: Record<string, string>;
  connectTimeoutMs: number;
  /** Response headers that carry the vendor's error text on a refused handshake (Deepgram: dg-error). */
  errorHeaders?: readonly string[];
}

/** The URL as logged: path and query names only (no credentials ever ride in it, but keep logs short). */
export function describeUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * Starts connecting at once; `opened` settles when the socket is open, or rejects with a
 * CloudSpeechError (refused handshake, network error, or no answer within the timeout,
 * after which the attempt is abandoned).
 */
export function openVendorSocket(options: VendorSocketOptions): { socket: WebSocket; opened: Promise<WebSocket> } {
  const socket = new WebSocket(options.url, { headers: options.headers, handshakeTimeout: options.connectTimeoutMs, perMessageDeflate: false });
  const opened = new Promise<WebSocket>((resolve, reject) => {
    const fail = (message: string) => {
      clearTimeout(timer);
      reject(new CloudSpeechError(options.vendor, message));
    };
    // The handshake timeout covers the HTTP upgrade; this also covers DNS and TCP.
    const timer = setTimeout(() => {
      fail(`no connection to ${describeUrl(options.url)} within ${options.connectTimeoutMs} ms`);
      socket.terminate();
    }, options.connectTimeoutMs);
    socket.once('open', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    let refused = false;
    socket.once('unexpected-response', (_request, response) => {
      refused = true;
      const fromHeader = (options.errorHeaders ?? []).map((name) => response.headers[name]).find((value) => typeof value === 'string');
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body = (body + chunk).slice(0, 500)));
      const refusal = `${describeUrl(options.url)} refused the connection: HTTP ${response.statusCode}`;
      const done = (detail: string) => {
        fail(`${refusal} ${detail}`.trim());
        socket.terminate();
      };
      response.on('end', () => done((fromHeader ?? body).trim()));
      response.on('error', () => done(''));
    });
    socket.once('error', (err) => {
      if (!refused) fail(`cannot connect to ${describeUrl(options.url)}: ${err.message}`);
    });
  });
  opened.catch(() => undefined); // the caller may only look at the socket's end
  socket.on('error', () => undefined); // reported through `opened` or the close
  return { socket, opened };
}

/** A ws:// or wss:// base URL, or a reason it is not one. */
export function checkBaseUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL';
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') return 'must be a ws:// or wss:// URL';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.search || url.hash) return 'must not have a query or fragment';
  return undefined;
}

/** `base` joined with `path`, keeping any path prefix of the base (a proxy's). */
export function vendorUrl(base: string, path: string, query: URLSearchParams): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  url.search = query.toString();
  return url;
}
