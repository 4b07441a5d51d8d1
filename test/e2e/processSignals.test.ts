// SIGTERM to each service process as production runs it: `npm run media-edge` (src/mediaEdge/main.ts)
// with a browser call talking, `npm run api` (src/server.ts) and `npm run worker` (src/worker.ts),
// each its own OS process over the test's Postgres and a Temporal dev server. Each must exit 0;
// the edge drains first: it hangs its call up (BYE) and the call ends `dropout` / `connection_lost`
// with a System Note before the process is gone (docs/media-edge.md, "Stopping the edge"). The edge's own Temporal
// worker serves the SDK's metrics on MEDIA_EDGE_TEMPORAL_METRICS_PORT (docs/observability.md).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { browserCall, SpokenAnswers } from '../../chaos/browserCaller.js';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { freePort } from '../../src/localPorts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { callTestConfig, createCallWorker, waitForCall } from '../support/calls.js';
import { scrape } from '../support/prometheusText.js';
import { createLocalEnv } from '../support/temporal.js';

const SECRET = 'signals-test-media-edge-secret-0123';
const SIP_DOMAIN = 'edge.signals.test';

/** Long enough that the call is still talking when the edge is told to stop. */
const SCRIPT = {
  name: 'Signals',
  steps: [
    { id: 'greet', type: 'say', text: 'Hello. This call checks that the media edge stops cleanly when it is told to.' },
    { id: 'ask', type: 'ask', question: 'Is this a good time to talk?', variable: 'answers.ok', expect: 'yes_no' },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
  ],
};

/** A service process: its stdout read line by line, stderr kept for the failure message. */
class ServiceProcess {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(entry: string, env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, entry)], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.lines.push(line));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** The first stdout line matching `pattern`; fails if the process exits first. */
  async line(pattern: RegExp): Promise<string> {
    for (;;) {
      const found = this.lines.find((l) => pattern.test(l));
      if (found) return found;
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`exited (${this.child.exitCode ?? this.child.signalCode}) before ${pattern}: ${this.stderr}\n${this.lines.join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async terminate(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.kill('SIGTERM');
    return this.exited;
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

let env: TestWorkflowEnvironment;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;
let scriptId: string;
let edge: ServiceProcess;
let api: ServiceProcess;
let workerProcess: ServiceProcess;
let edgeQueue: string;
let temporalMetricsUrl: string;
let wsUrl: string;
const processes: ServiceProcess[] = [];

/** What each spawned process is given: the test's database and Redis, the dev server, info logs on stdout. */
function serviceEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'info', TEMPORAL_ADDRESS: env.address, OTEL_EXPORTER_OTLP_ENDPOINT: '', ...extra };
}

before(async () => {
  env = await createLocalEnv();
  const edgePort = await freePort();
  wsUrl = `ws://127.0.0.1:${edgePort}/ws`;
  const settings = {
    TEMPORAL_TASK_QUEUE: `signals-${process.pid}`,
    MEDIA_EDGE_WS_URL: wsUrl,
    MEDIA_EDGE_SIP_DOMAIN: SIP_DOMAIN,
    MEDIA_EDGE_SECRET: SECRET,
    RATE_LIMITS_ENABLED: 'false',
  } as const;
  app = await startTestApi({ temporal: env.client, config: settings });
  worker = await createCallWorker(env, app.pool, callTestConfig(settings));
  running = worker.run();
  team = await createTestTeam(app.pool);
  ({ id: scriptId } = await insertScript(app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  const temporalMetricsPort = await freePort();
  temporalMetricsUrl = `http://127.0.0.1:${temporalMetricsPort}/metrics`;
  edge = new ServiceProcess(
    'src/mediaEdge/main.ts',
    serviceEnv({
      ...settings,
      API_URL: app.url,
      METRICS_ENABLED: 'true',
      MEDIA_EDGE_METRICS_PORT: String(await freePort()),
      MEDIA_EDGE_TEMPORAL_METRICS_PORT: String(temporalMetricsPort),
      MEDIA_EDGE_INSTANCE_ID: `signals-${process.pid}`,
    }),
  );
  // The API and a worker on a queue of their own, only to be stopped: started beside the edge (each takes long to start on a busy machine).
  api = new ServiceProcess('src/server.ts', serviceEnv({ PORT: String(await freePort()), HOST: '127.0.0.1', METRICS_ENABLED: 'true', API_METRICS_PORT: '0' }));
  workerProcess = new ServiceProcess(
    'src/worker.ts',
    serviceEnv({ TEMPORAL_TASK_QUEUE: `signals-worker-${process.pid}`, METRICS_ENABLED: 'true', WORKER_METRICS_PORT: '0', TEMPORAL_METRICS_PORT: String(await freePort()) }),
  );
  processes.push(edge, api, workerProcess);
  edgeQueue = /\(task queue (\S+)\)/.exec(await edge.line(/^Media edge /))![1];
});

after(async () => {
  for (const p of processes) p.kill();
  worker?.shutdown();
  await running;
  await app?.close();
  await env?.teardown();
});

test('SIGTERM to the media edge with a call talking: the call ends dropout with a System Note, the edge exits 0', async () => {
  // A silent caller: the agent talks, then waits for an answer.
  const silent = await SpokenAnswers.prepare([]);
  // On a busy machine werift's ICE now and then gives up before media flows: the caller tries again, as a person would.
  let minted!: Awaited<ReturnType<TestApi['request']>>;
  let outcome!: Promise<string>;
  for (let attempt = 1; ; attempt++) {
    minted = await app.request('POST', '/api/v1/create-web-session', { key: team.apiKey, body: { script_id: scriptId } });
    assert.equal(minted.status, 201, minted.text);
    let live!: () => void;
    const talking = new Promise<'talking'>((resolve) => (live = () => resolve('talking')));
    outcome = browserCall({ ws_url: minted.json.ws_url, target: minted.json.target, headers: minted.json.headers }, silent, () => live(), 120_000);
    const first = await Promise.race([talking, outcome]);
    if (first === 'talking') break;
    assert.ok(attempt < 3, `the call ended before it talked: ${first}\n${edge.lines.slice(-30).join('\n')}`);
  }
  const { rows } = await app.pool.query<{ call_id: string }>('SELECT call_id FROM web_sessions WHERE id = $1', [minted.json.session_id]);
  const callId = rows[0].call_id;
  assert.ok(callId, 'the session was redeemed into a call');
  await waitForCall(app.pool, callId, (c) => c.status === 'in-progress', 60_000);

  // The edge's own worker, polling its queue, is in the SDK's metrics on its own port.
  let queues = new Set<string>();
  for (let tries = 0; tries < 100 && !queues.has(edgeQueue); tries++) {
    const sdk = await scrape(temporalMetricsUrl);
    assert.ok([...sdk.types.keys()].every((name) => name.startsWith('temporal_')), [...sdk.types.keys()].join(', '));
    queues = new Set(sdk.samples.map((s) => s.labels.task_queue).filter(Boolean));
    if (!queues.has(edgeQueue)) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(queues.has(edgeQueue), `the edge's task queue ${edgeQueue} in its SDK metrics (saw ${[...queues].join(', ')})`);

  const exit = await edge.terminate();
  assert.deepEqual(exit, { code: 0, signal: null }, edge.stderr);
  assert.doesNotMatch(edge.stderr, /IllegalStateError|Not running/);
  assert.equal(await outcome, 'bye', 'the edge hung up the call (BYE) before it closed the socket');
  // Reported by the edge before it exited (no pickup or heartbeat timeout needed).
  const ended = await waitForCall(app.pool, callId, (c) => c.status !== 'in-progress', 30_000);
  assert.equal(ended.status, 'dropout');
  assert.equal(ended.end_reason, 'connection_lost');
  assert.ok(ended.system_notes.some((n) => n.kind === 'media'), JSON.stringify(ended.system_notes));
});

test('SIGTERM to the API and to the worker process: each exits 0', async () => {
  await Promise.all([api.line(/API listening/), workerProcess.line(/worker running/)]);
  const [apiExit, workerExit] = await Promise.all([api.terminate(), workerProcess.terminate()]);
  assert.deepEqual(apiExit, { code: 0, signal: null }, `the API: ${api.stderr}\n${api.lines.slice(-10).join('\n')}`);
  assert.deepEqual(workerExit, { code: 0, signal: null }, `the worker: ${workerProcess.stderr}\n${workerProcess.lines.slice(-10).join('\n')}`);
});
