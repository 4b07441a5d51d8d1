// `npm start` as a new user runs it (src/main.ts, in a fresh data folder, nothing set): it
// listens on 127.0.0.1 only, generates its secrets into the data folder instead of using
// constants, keeps the embedded Postgres behind a generated password, shares them with the
// operator CLI, and refuses webhook endpoints on this machine's network (docs/security.md).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { localSecretsFile } from '../../src/config/localSecrets.js';
import { runningEmbeddedPort } from '../../src/db/embedded.js';
import { freePort } from '../../src/localPorts.js';
import { operatorCli } from '../support/cli.js';

const TSX = path.join(PROJECT_ROOT, 'node_modules', '.bin', 'tsx');
// What src/main.ts used to set when these were unset: anyone who read the source knew them.
const FORMER_CONSTANTS = ['local-media-edge-secret-change-me', 'local-recording-link-secret-change-me'];

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'npm-start-'));
let service: ChildProcess;
let stdout = '';
let stderr = '';
let apiBase = '';

const UNSET = ['DATABASE_URL', 'REDIS_URL', 'TEMPORAL_ADDRESS', 'HOST', 'MEDIA_EDGE_SECRET', 'RECORDING_LINK_SECRET', 'WEBHOOK_ALLOW_PRIVATE_URLS', 'SECRETS_ENCRYPTION_KEY', 'EMBEDDED_POSTGRES_PASSWORD', 'NODE_ENV'];

// The dev server's ports: free ones, not its defaults 7233 and 8233, which it leaves only when
// it finds them taken; two runs of this file at once (two suites on one machine) could both
// find them free and then race for them. No assertion here is about those ports.
const temporalPorts = { TEMPORAL_DEV_PORT: String(await freePort()), TEMPORAL_UI_PORT: String(await freePort()) };

/** The environment of a new user's shell: none of the settings this test is about (empty counts as unset). */
function newUserEnv(): Record<string, string> {
  return { ...(process.env as Record<string, string>), ...Object.fromEntries(UNSET.map((name) => [name, ''])), ...temporalPorts, DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
}

const { adminJson } = operatorCli(newUserEnv);

before(async () => {
  const edgePort = await freePort();
  service = spawn(TSX, ['src/main.ts'], {
    cwd: PROJECT_ROOT,
    env: { ...newUserEnv(), PORT: '0', MEDIA_EDGE_WS_URL: `ws://127.0.0.1:${edgePort}/ws` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  service.stderr!.on('data', (d) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not come up in 180 s: ${stdout}${stderr}`)), 180_000);
    service.stdout!.on('data', (d) => {
      stdout += d;
      if (stdout.includes('Press Ctrl-C to stop.')) {
        clearTimeout(timer);
        resolve();
      }
    });
    service.once('exit', (code) => reject(new Error(`npm start exited ${code}: ${stderr}`)));
  });
  apiBase = /API {10}(http:\/\/\S+)\/api\/v1/.exec(stdout)![1];
});

after(async () => {
  if (service.exitCode === null) {
    const exited = new Promise((resolve) => service.once('exit', resolve));
    service.kill('SIGINT');
    await exited;
  }
});

/** Local addresses (hex from /proc/net/tcp, as host order) listening on `port`. */
function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      const [address, portHex] = local.split(':');
      if (state === '0A' && parseInt(portHex, 16) === port) found.push(address);
    }
  }
  return found;
}

test('the API listens on 127.0.0.1 only, and says so', () => {
  assert.match(stdout, /Listening {4}127\.0\.0\.1 only/);
  const port = Number(new URL(apiBase).port);
  // 0100007F is 127.0.0.1 in /proc/net/tcp's byte order; 00000000 would be every interface.
  assert.deepEqual(listeningAddresses(port), ['0100007F']);
});

test('secrets left unset are generated into the data folder, owner-only, and none is a known constant', async () => {
  const file = localSecretsFile(dataDir);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const secrets = JSON.parse(readFileSync(file, 'utf8'));
  for (const name of ['MEDIA_EDGE_SECRET', 'RECORDING_LINK_SECRET', 'SECRETS_ENCRYPTION_KEY', 'EMBEDDED_POSTGRES_PASSWORD']) {
    assert.ok(typeof secrets[name] === 'string' && secrets[name].length >= 24, name);
    assert.ok(!FORMER_CONSTANTS.includes(secrets[name]), name);
  }
  assert.match(stdout, new RegExp(`Secrets {6}generated .*MEDIA_EDGE_SECRET.* into ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));

  const redeem = (secret: string) =>
    fetch(`${apiBase}/internal/v1/web-sessions/redeem`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: '{}' });
  assert.equal((await redeem(FORMER_CONSTANTS[0])).status, 401, 'the former constant opens nothing');
  assert.notEqual((await redeem(secrets.MEDIA_EDGE_SECRET)).status, 401, 'the generated secret is the edge’s');
});

test('the embedded Postgres takes only its generated password', async () => {
  const port = runningEmbeddedPort(dataDir)!;
  const known = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres` });
  await assert.rejects(known.connect(), (err: { code?: string }) => err.code === '28P01');
  await known.end().catch(() => {});
});

test('the operator CLI shares the install’s secrets; webhook endpoints on this machine are refused by default', async () => {
  const { api_key: apiKey } = await adminJson(['bootstrap']);
  const res = await fetch(`${apiBase}/api/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'http://127.0.0.1:9/hooks' }),
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { success: boolean; message: string };
  assert.equal(body.success, false);
  assert.match(body.message, /^Invalid request: url must not point to a loopback, private, link-local or other non-public address/);
});

test('Ctrl-C (SIGINT) stops it cleanly: exit 0, nothing logged at error level, and the Postgres and Temporal dev server it started are stopped', async () => {
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => service.once('exit', (code, signal) => resolve({ code, signal })));
  const postgresPort = runningEmbeddedPort(dataDir);
  assert.ok(postgresPort, 'the embedded Postgres runs');
  const before = stdout.length;
  service.kill('SIGINT');
  // Was 130: embedded-postgres's exit hook stopped Postgres at once and ended the process before it had drained.
  assert.deepEqual(await exited, { code: 0, signal: null }, `${stderr}\n${stdout.split('\n').slice(-20).join('\n')}`);
  assert.deepEqual(stdout.slice(before).split('\n').filter((l) => /"level":(50|60)\b/.test(l)), [], 'nothing logged at error level while stopping');
  // A clean Postgres shutdown removes its pid file; the dev server's port is free.
  assert.equal(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), false, 'the embedded Postgres stopped');
  assert.deepEqual(listeningAddresses(postgresPort), []);
  assert.deepEqual(listeningAddresses(Number(temporalPorts.TEMPORAL_DEV_PORT)), [], 'the Temporal dev server stopped');
});
