/**
 * One attempt of an event webhook: a POST of the body to the endpoint's URL, over a
 * connection to an address checked just before (resolveWebhookHost) and pinned, with a
 * deadline on the whole attempt. Redirects are not followed: a 3xx is a failed attempt.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseWebhookUrl, resolveWebhookHost, WebhookUrlRefused, type HostResolver, type ResolvedAddress } from './addresses.js';

export interface WebhookPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The whole attempt (resolving, connecting, the answer's status line) must fit in this. */
  timeoutMs: number;
  resolver: HostResolver;
  allowPrivate: boolean;
}

export interface WebhookPostResult {
  /** The answer's status, null when none came. */
  statusCode: number | null;
  /** Null for a 2xx; otherwise what went wrong, for the delivery's last_error. */
  error: string | null;
  /** From the start of the attempt to the answer's status line (or the failure). */
  latencyMs: number;
}

/** How much of a failed answer's body is kept in the error. */
const ERROR_BODY_BYTES = 300;

/** A lookup that answers the address checked before, whatever the resolver would say now. */
function pinnedLookup(pinned: ResolvedAddress): LookupFunction {
  return (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (err: null, addresses: ResolvedAddress[]) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
}

function printable(bytes: Buffer): string {
  return bytes.toString('utf8').replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

/** Sends one attempt; never throws (every failure is a result). */
export async function postWebhook(req: WebhookPost): Promise<WebhookPostResult> {
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  let timer: NodeJS.Timeout | undefined;
  let request: http.ClientRequest | undefined;
  const timedOut = new Promise<WebhookPostResult>((resolve) => {
    timer = setTimeout(() => {
      request?.destroy();
      resolve({ statusCode: null, error: `No answer within ${req.timeoutMs / 1000} s`, latencyMs: elapsed() });
    }, req.timeoutMs);
  });
  const attempt = async (): Promise<WebhookPostResult> => {
    let url: URL;
    let addresses: ResolvedAddress[];
    try {
      url = parseWebhookUrl(req.url);
      addresses = await resolveWebhookHost(url, { resolver: req.resolver, allowPrivate: req.allowPrivate });
    } catch (err) {
      const reason = err instanceof WebhookUrlRefused ? `Refused: url ${err.message}` : `Refused: ${(err as Error).message}`;
      return { statusCode: null, error: reason, latencyMs: elapsed() };
    }
    return new Promise<WebhookPostResult>((resolve) => {
      const transport = url.protocol === 'https:' ? https : http;
      request = transport.request(url, {
        method: 'POST',
        headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
        // A fresh connection per attempt, to the address just checked.
        agent: false,
        lookup: pinnedLookup(addresses[0]),
      });
      request.on('response', (res) => {
        const statusCode = res.statusCode ?? 0;
        const latencyMs = elapsed();
        if (statusCode >= 200 && statusCode < 300) {
          res.resume();
          resolve({ statusCode, error: null, latencyMs });
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        const finish = () => {
          const text = printable(Buffer.concat(chunks).subarray(0, ERROR_BODY_BYTES));
          const redirect = statusCode >= 300 && statusCode < 400 ? ' (redirects are not followed)' : '';
          resolve({ statusCode, error: `HTTP ${statusCode}${redirect}${text ? `: ${text}` : ''}`, latencyMs });
        };
        res.on('data', (chunk: Buffer) => {
          if (size < ERROR_BODY_BYTES) chunks.push(chunk);
          size += chunk.length;
          if (size >= ERROR_BODY_BYTES) {
            res.destroy();
            finish();
          }
        });
        res.on('end', finish);
        res.on('error', finish);
      });
      request.on('error', (err) => resolve({ statusCode: null, error: err.message || (err as { code?: string }).code || 'connection failed', latencyMs: elapsed() }));
      request.end(req.body);
    });
  };
  try {
    return await Promise.race([attempt(), timedOut]);
  } finally {
    clearTimeout(timer);
    // The answer's body is not needed: a second to drain, then the connection goes.
    const open = request;
    if (open && !open.destroyed) setTimeout(() => open.destroy(), 1000).unref();
  }
}
