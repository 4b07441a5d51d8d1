// The web-call example's tiny server (docs/web-calls.md, examples/web-call/README.md):
// serves the page and mints a web session when the visitor clicks, calling
// POST /api/v1/create-web-session with the API key, which stays here and never reaches the
// browser (docs/web-calls.md, browser client contract, rule 1).
//
//   API_KEY=... SCRIPT_ID=... npx tsx examples/web-call/server.ts
//
// Environment: API_URL (default http://127.0.0.1:3000), API_KEY and SCRIPT_ID (required;
// `npm run --silent admin -- bootstrap --json` prints both), CONTACT_ID and DID (optional),
// PORT (default 8080), HOST (default 127.0.0.1), ICE_SERVERS (JSON array of RTCIceServer,
// default a public STUN server; add TURN for restrictive networks).
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const PUBLIC_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'public');
export const DEFAULT_ICE_SERVERS = [{ urls: 'stun:stun.l.google.com:19302' }];

export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

export interface ExampleServerOptions {
  apiUrl: string;
  apiKey: string;
  scriptId: string;
  contactId?: string;
  did?: string;
  port?: number;
  host?: string;
  iceServers?: IceServer[];
}

export interface ExampleServer {
  url: string;
  /** Sessions minted so far (one per click). */
  mints(): number;
  close(): Promise<void>;
}

/** What the page needs from a create-web-session answer; nothing else is passed on. */
const BROWSER_FIELDS = ['session_id', 'expires_at', 'ws_url', 'sip_domain', 'sip_username', 'sip_password', 'target', 'headers'] as const;

let jssipBundle: Promise<string> | undefined;

/** JsSIP (CommonJS) bundled once for the browser as the global `JsSIP`. */
function bundleJsSip(): Promise<string> {
  jssipBundle ??= build({
    entryPoints: [createRequire(import.meta.url).resolve('jssip')],
    bundle: true,
    format: 'iife',
    globalName: 'JsSIP',
    platform: 'browser',
    minify: true,
    write: false,
    logLevel: 'silent',
  }).then((result) => result.outputFiles[0].text);
  return jssipBundle;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });
  res.end(body);
}

const sendJson = (res: ServerResponse, status: number, body: unknown) => send(res, status, 'application/json', JSON.stringify(body));

export async function startExampleServer(opts: ExampleServerOptions): Promise<ExampleServer> {
  const iceServers = opts.iceServers ?? DEFAULT_ICE_SERVERS;
  let minted = 0;

  /** POST /session: mint on the visitor's click, server-side, with the API key. */
  async function mintSession(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A JSON content type forces a CORS preflight, so another site's page cannot make a
    // visitor's browser mint sessions (and use up the team's slots) through this server.
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
      sendJson(res, 415, { success: false, message: 'Content-Type must be application/json' });
      return;
    }
    req.resume();
    const body: Record<string, string> = { script_id: opts.scriptId, participant_identity: 'web visitor' };
    if (opts.contactId) body.contact_id = opts.contactId;
    if (opts.did) body.did = opts.did;
    const api = await fetch(`${opts.apiUrl}/api/v1/create-web-session`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${opts.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = (await api.json()) as Record<string, unknown>;
    if (api.status !== 201) {
      sendJson(res, api.status, { success: false, message: answer.message ?? 'Could not start a web call' });
      return;
    }
    minted += 1;
    const forBrowser: Record<string, unknown> = { success: true };
    for (const field of BROWSER_FIELDS) forBrowser[field] = answer[field];
    sendJson(res, 201, forBrowser);
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = `${req.method} ${url.pathname}`;
    const handle = async () => {
      switch (route) {
        case 'GET /':
          return send(res, 200, 'text/html; charset=utf-8', await readFile(path.join(PUBLIC_DIR, 'index.html'), 'utf8'));
        case 'GET /app.js':
          return send(res, 200, 'text/javascript; charset=utf-8', await readFile(path.join(PUBLIC_DIR, 'app.js'), 'utf8'));
        case 'GET /jssip.js':
          return send(res, 200, 'text/javascript; charset=utf-8', await bundleJsSip());
        case 'GET /config.json':
          return sendJson(res, 200, { iceServers });
        case 'POST /session':
          return mintSession(req, res);
        default:
          return sendJson(res, 404, { success: false, message: 'Not found' });
      }
    };
    handle().catch(() => sendJson(res, 502, { success: false, message: 'Could not reach the calling API' }));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 8080, opts.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    mints: () => minted,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function main(): Promise<void> {
  const apiKey = process.env.API_KEY;
  const scriptId = process.env.SCRIPT_ID;
  if (!apiKey || !scriptId) throw new Error('Set API_KEY and SCRIPT_ID (npm run --silent admin -- bootstrap --json prints both)');
  const server = await startExampleServer({
    apiUrl: process.env.API_URL ?? 'http://127.0.0.1:3000',
    apiKey,
    scriptId,
    contactId: process.env.CONTACT_ID,
    did: process.env.DID,
    port: Number(process.env.PORT ?? 8080),
    host: process.env.HOST ?? '127.0.0.1',
    iceServers: process.env.ICE_SERVERS ? (JSON.parse(process.env.ICE_SERVERS) as IceServer[]) : undefined,
  });
  process.stdout.write(`Web-call example on ${server.url}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  });
}
