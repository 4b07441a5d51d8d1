// Real local HTTP servers that receive event webhooks, and a verifier of their signatures
// written from the Standard Webhooks specification (independent of src/domain's signer).
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedWebhook {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The parsed body: { id, type, created_at, team_id, data }. */
  json: any;
  receivedAt: number;
  /** The status it was answered with, or 'hang' when it got no answer. */
  answered: number | 'hang';
}

/** How to answer the n-th request (0-based): a status, or 'hang' (never answer). */
export type Answer = number | 'hang' | ((request: ReceivedWebhook, n: number) => number | 'hang');

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  answer(answer: Answer): void;
  /** Resolves with the requests received once `predicate` holds for them; fails after `timeoutMs`. */
  waitFor(predicate: (received: ReceivedWebhook[]) => boolean, timeoutMs?: number, what?: string): Promise<ReceivedWebhook[]>;
  /** The requests whose payload type is `type`. */
  ofType(type: string): ReceivedWebhook[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(answer: Answer = 200): Promise<WebhookReceiver> {
  let current: Answer = answer;
  const received: ReceivedWebhook[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const request: ReceivedWebhook = { headers: req.headers, body, json, receivedAt: Date.now(), answered: 200 };
      const status = typeof current === 'function' ? current(request, received.length) : current;
      request.answered = status;
      received.push(request);
      if (status === 'hang') return;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status >= 300 ? `answered ${status}` : 'ok');
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    answer(next) {
      current = next;
    },
    async waitFor(predicate, timeoutMs = 30_000, what = 'webhooks') {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${what}; received ${received.length}: ${received.map((r) => r.json?.type).join(', ')}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      return received;
    },
    ofType: (type) => received.filter((r) => r.json?.type === type),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Verifies a request as the Standard Webhooks specification says a receiver must: the three
 * headers present, the timestamp within `toleranceSeconds` of now, and at least one `v1,`
 * signature in the space-separated list equal (in constant time) to the base64 HMAC-SHA256,
 * keyed with the base64-decoded secret after `whsec_`, of "<id>.<timestamp>.<body>".
 */
export function verifyStandardWebhook(secret: string, headers: http.IncomingHttpHeaders, body: string, opts: { nowSeconds?: number; toleranceSeconds?: number } = {}): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d+$/.test(timestamp)) return false;
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > (opts.toleranceSeconds ?? 300)) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
