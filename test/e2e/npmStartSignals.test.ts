// SIGTERM to `npm start` (src/main.ts: the API, the worker and the media edge in one process)
// with a browser call talking, as test/e2e/processSignals.test.ts does for the separate
// processes: the edge drains first (it hangs its call up, BYE, and reports its end), the
// process's own worker writes the call's end (`dropout` / `connection_lost` with a System
// Note) before it stops, once, then the API closes and the process exits 0 with nothing
// logged at error level. Over the test's Postgres (read after the exit), with the Temporal dev
// server npm start starts itself. SIGINT, with the embedded Postgres npm start starts
// itself, is test/e2e/npmStartDefaults.test.ts's last test.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { browserCall, SpokenAnswers } from '../../chaos/browserCaller.js';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { freePort } from '../../src/localPorts.js';
import { createTestTeam, testPool, type TestTeam } from '../support/app.js';
import { callRow, waitForCall } from '../support/calls.js';
import type { Pool } from '../../src/db/pool.js';

/** Long enough that the call is still talking when the service is told to stop. */
const SCRIPT = {
  name: 'npm start signals',
  steps: [
    { id: 'greet', type: 'say', text: 'Hello. This call checks that the whole service stops cleanly when it is told to.' },
    { id: 'ask', type: 'ask', question: 'Is this a good time to talk?', variable: 'answers.ok', expect: 'yes_no' },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
  ],
};

let pool: Pool;
let team: TestTeam;
let scriptId: string;
let service: ChildProcess;
let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
const lines: string[] = [];
let stderr = '';
let dataDir: string;
let apiBase: string;

before(async () => {
  pool = await testPool();
  team = await createTestTeam(pool);
  ({ id: scriptId } = await insertScript(pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'npm-start-signals-'));
  service = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'src/main.ts')], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      DATA_DIR: dataDir,
      TEMPORAL_ADDRESS: '',
      TEMPORAL_DEV_PORT: String(await freePort()),
      TEMPORAL_UI_PORT: String(await freePort()),
      TEMPORAL_TASK_QUEUE: `npm-start-signals-${process.pid}`,
      PORT: '0',
      HOST: '127.0.0.1',
      MEDIA_EDGE_WS_URL: `ws://127.0.0.1:${await freePort()}/ws`,
      METRICS_ENABLED: 'true',
      API_METRICS_PORT: '0',
      WORKER_METRICS_PORT: '0',
      MEDIA_EDGE_METRICS_PORT: '0',
      TEMPORAL_METRICS_PORT: String(await freePort()),
      RATE_LIMITS_ENABLED: 'false',
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  createInterface({ input: service.stdout! }).on('line', (line) => lines.push(line));
  service.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  exited = new Promise((resolve) => service.once('exit', (code, signal) => resolve({ code, signal })));
  for (;;) {
    if (lines.includes('Press Ctrl-C to stop.')) break;
    if (service.exitCode !== null) throw new Error(`npm start exited ${service.exitCode}: ${stderr}\n${lines.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  apiBase = /^API {10}(http:\/\/\S+)\/api\/v1$/.exec(lines.find((l) => l.startsWith('API  '))!)![1];
});

after(async () => {
  if (service?.exitCode === null && service.signalCode === null) service.kill('SIGKILL');
  await pool?.end();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Log lines at error level (pino's 50) or above. */
const errorLines = () => lines.filter((l) => /"level":(50|60)\b/.test(l));

test('SIGTERM to npm start with a browser call talking: the call ends dropout with a System Note, the process exits 0', async () => {
  const silent = await SpokenAnswers.prepare([]);
  const mint = async () => {
    const res = await fetch(`${apiBase}/api/v1/create-web-session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${team.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ script_id: scriptId }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    return (await res.json()) as { session_id: string; ws_url: string; target: string; headers: Record<string, string> };
  };
  // On a busy machine werift's ICE now and then gives up before media flows: the caller tries again, as a person would.
  let minted!: Awaited<ReturnType<typeof mint>>;
  let outcome!: Promise<string>;
  for (let attempt = 1; ; attempt++) {
    minted = await mint();
    let live!: () => void;
    const talking = new Promise<'talking'>((resolve) => (live = () => resolve('talking')));
    outcome = browserCall({ ws_url: minted.ws_url, target: minted.target, headers: minted.headers }, silent, () => live(), 120_000);
    const first = await Promise.race([talking, outcome]);
    if (first === 'talking') break;
    assert.ok(attempt < 3, `the call ended before it talked: ${first}\n${lines.slice(-30).join('\n')}`);
  }
  const { rows } = await pool.query<{ call_id: string }>('SELECT call_id FROM web_sessions WHERE id = $1', [minted.session_id]);
  const callId = rows[0].call_id;
  assert.ok(callId, 'the session was redeemed into a call');
  await waitForCall(pool, callId, (c) => c.status === 'in-progress', 60_000);

  service.kill('SIGTERM');
  const exit = await exited;
  assert.deepEqual(exit, { code: 0, signal: null }, `${stderr}\n${lines.slice(-30).join('\n')}`);
  assert.deepEqual(errorLines(), [], 'nothing logged at error level');
  assert.doesNotMatch(stderr, /IllegalStateError|Not running/);
  assert.equal(await outcome, 'bye', 'the edge hung up the call (BYE) before it closed the socket');
  // Written before the process exited: nothing runs the call's workflow now.
  const ended = await callRow(pool, callId);
  assert.equal(ended.status, 'dropout', JSON.stringify(ended));
  assert.equal(ended.end_reason, 'connection_lost');
  assert.ok(ended.system_notes.some((n) => n.kind === 'media'), JSON.stringify(ended.system_notes));
});
