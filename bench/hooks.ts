// What the webhook trigger's checks cost, measured in one run: POST /api/v1/hooks/{token}
// throughput for an unsigned hook (token lookup + workflow start) against a signed hook
// (HMAC-SHA256 over the raw body), a signed hook with a fresh X-Webhook-Id on every request
// (plus the delivery claim), and repeated deliveries of one X-Webhook-Id (claim, lookup of
// the first run, a start that the server answers with the existing run). Interleaved round
// by round so that drift of a shared machine hits every mode alike. Then the mean cost of
// each stage of a request, in process and sequentially (token lookup, signature, delivery
// claim, workflow start), which is far less noisy than HTTP throughput. Also: the time to
// reject a signature wrong in its first byte against one wrong only in its last byte
// (constant-time comparison: the ratio should be ~1).
//
//   npx tsx bench/hooks.ts        (starts its own embedded Postgres and Temporal dev server)
//   DATABASE_URL=postgres://... TEMPORAL_ADDRESS=host:7233 npx tsx bench/hooks.ts
//
// Knobs (environment): BENCH_ROUNDS (default 5), BENCH_REQUESTS per round and mode
// (default 300), BENCH_CONCURRENCY (default 8), BENCH_BODY_BYTES (default 1024).
// No worker runs: this measures acceptance, not the automations. Rate limits are off.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import os from 'node:os';
import type { Client } from '@temporalio/client';
import { secretBox } from '../src/config/index.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { claimHookDelivery, markHookDeliveryStarted } from '../src/db/repositories/hookDeliveries.js';
import { insertTeam } from '../src/db/repositories/teams.js';
import { signWebhookBody, webhookSignatureValid } from '../src/domain/hookSignature.js';
import { authenticateHookToken, createHook } from '../src/services/hooks.js';
import { startWorkflowOnce } from '../src/temporal/startOnce.js';
import { HOOK_RUN_WORKFLOW_TYPE, hookRunWorkflowId } from '../workflows/contracts.js';
import { startBenchApi, type BenchApi } from './support/api.js';
import { API_BENCH_SETTINGS, benchConfig, benchTempDir, connectBenchTemporal, openBenchDatabase, startBenchPostgres, runBenchmark } from './support/environment.js';
import { startLoadThread, type LoadThread } from './support/loadThread.js';
import { upperMedian } from './support/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const BODY_BYTES = Number(process.env.BENCH_BODY_BYTES ?? 1024);

type Mode = 'unsigned' | 'signed' | 'signed+id' | 'duplicate id';
const MODES: Mode[] = ['unsigned', 'signed', 'signed+id', 'duplicate id'];

// One request of the load generator's thread (signing there too), answered 202 when accepted.
const HOOK_REQUEST = `
const crypto = require('node:crypto');
let seq = 0;
function request({ mode, run }) {
  seq++;
  const filler = 'x'.repeat(Math.max(0, workerData.bodyBytes - 120));
  const body = JSON.stringify({ phone_number: '+14155550123', first_name: 'Bench', seq, filler });
  const signed = mode !== 'unsigned';
  const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
  if (signed) headers['X-Webhook-Signature'] = 'sha256=' + crypto.createHmac('sha256', workerData.secret).update(body).digest('hex');
  if (mode === 'signed+id') headers['X-Webhook-Id'] = 'bench-' + run + '-' + seq;
  if (mode === 'duplicate id') headers['X-Webhook-Id'] = 'bench-duplicate';
  return post(signed ? workerData.signedPath : workerData.unsignedPath, headers, body);
}
`;

/** Mean nanoseconds per call of `fn`, over `n` calls. */
function timePerCall(fn: () => void, n: number): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - started) / n;
}

/** Rejecting a signature wrong in its first byte vs. wrong only in its last byte. */
function signatureTiming(): { first: number; last: number } {
  const secret = 'whsec_bench';
  const body = Buffer.from(JSON.stringify({ phone_number: '+14155550123', filler: 'x'.repeat(BODY_BYTES) }));
  const good = signWebhookBody(secret, body);
  const flip = (hex: string, at: number) => hex.slice(0, at) + (hex[at] === '0' ? '1' : '0') + hex.slice(at + 1);
  const wrongFirst = `sha256=${flip(good, 0)}`;
  const wrongLast = `sha256=${flip(good, 63)}`;
  // Many short alternating blocks, then the median of each: robust against the bursts of
  // other processes on a shared machine.
  const blocks = 400;
  const n = 500;
  const firsts: number[] = [];
  const lasts: number[] = [];
  timePerCall(() => webhookSignatureValid(secret, body, wrongFirst), 20_000); // warm-up
  for (let block = 0; block < blocks; block++) {
    const runFirst = () => firsts.push(timePerCall(() => webhookSignatureValid(secret, body, wrongFirst), n));
    const runLast = () => lasts.push(timePerCall(() => webhookSignatureValid(secret, body, wrongLast), n));
    if (block % 2 === 0) {
      runFirst();
      runLast();
    } else {
      runLast();
      runFirst();
    }
  }
  return { first: upperMedian(firsts), last: upperMedian(lasts) };
}

/**
 * Mean time of each stage of an accepted request, run in process one after another
 * (interleaved per iteration), so their shares do not depend on HTTP or load noise.
 */
async function stageCosts(pool: Pool, temporal: Client, hook: { id: string; token: string; teamId: string }, secret: string, n: number) {
  const body = Buffer.from(JSON.stringify({ phone_number: '+14155550123', filler: 'x'.repeat(BODY_BYTES) }));
  const signature = `sha256=${signWebhookBody(secret, body)}`;
  const ms = { token: 0, signature: 0, claim: 0, start: 0 };
  const time = async (stage: keyof typeof ms, fn: () => unknown) => {
    const started = performance.now();
    await fn();
    ms[stage] += performance.now() - started;
  };
  for (let i = 0; i < n; i++) {
    const runId = randomUUID();
    await time('token', () => authenticateHookToken(pool, hook.token));
    await time('signature', () => webhookSignatureValid(secret, body, signature));
    await time('claim', async () => {
      await claimHookDelivery(pool, { hookId: hook.id, deliveryId: `stage-${runId}`, runId });
      await markHookDeliveryStarted(pool, hook.id, `stage-${runId}`, runId);
    });
    await time('start', () =>
      startWorkflowOnce(temporal, HOOK_RUN_WORKFLOW_TYPE, {
        taskQueue: 'bench-hooks',
        workflowId: hookRunWorkflowId(runId),
        args: [{ runId, hookId: hook.id, teamId: hook.teamId, automation: { kind: 'none' }, body: JSON.parse(body.toString()), phoneRegion: 'US', deliveryId: null, receivedAt: new Date().toISOString() }],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      }),
    );
  }
  const total = ms.token + ms.signature + ms.claim + ms.start;
  for (const [stage, value] of Object.entries(ms)) {
    process.stdout.write(`  ${stage.padEnd(10)} ${(value / n).toFixed(3).padStart(8)} ms   ${((value / total) * 100).toFixed(1).padStart(5)}% of an accepted signed request with X-Webhook-Id\n`);
  }
}

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-hooks-');
  const { url: databaseUrl, embedded } = await openBenchDatabase(tmp, (dir) => startBenchPostgres(dir));
  const server = await connectBenchTemporal();
  const { client: temporal, env } = server;
  const config = benchConfig(databaseUrl, { ...API_BENCH_SETTINGS, TEMPORAL_TASK_QUEUE: 'bench-hooks' });
  const pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE);
  let load: LoadThread | undefined;
  let served: BenchApi | undefined;
  try {
    await migrate(pool);
    const team = await insertTeam(pool, { name: 'bench', maxConcurrent: 10 });
    const secret = 'whsec_bench';
    const unsigned = await createHook(pool, { teamId: team.id, secret: null, automation: { kind: 'none' } });
    const signed = await createHook(pool, { teamId: team.id, secret, automation: { kind: 'none' } }, secretBox(config));
    served = await startBenchApi(config, pool, temporal);
    const thread = startLoadThread(HOOK_REQUEST, 202, {
      port: served.port,
      secret,
      signedPath: signed.path,
      unsignedPath: unsigned.path,
      concurrency: CONCURRENCY,
      bodyBytes: BODY_BYTES,
    });
    load = thread;
    const run = (mode: Mode, requests: number, round: number) => thread.run({ mode, requests, run: round });

    process.stdout.write(
      `POST /api/v1/hooks/{token}, ${ROUNDS} rounds x ${REQUESTS} requests per mode, concurrency ${CONCURRENCY}, ${BODY_BYTES}-byte bodies, ` +
        `${embedded ? 'embedded Postgres' : 'DATABASE_URL'}, ${env ? 'Temporal dev server' : 'TEMPORAL_ADDRESS'}, ${os.cpus().length} CPUs\n`,
    );
    for (const mode of MODES) await run(mode, Math.min(100, REQUESTS), -1); // warm-up

    const total = Object.fromEntries(MODES.map((m) => [m, { ms: 0, n: 0 }])) as Record<Mode, { ms: number; n: number }>;
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order so no mode always runs first (or last) in a round.
      const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]);
      const line: string[] = [];
      for (const mode of order) {
        const r = await run(mode, REQUESTS, round);
        if (r.failed) throw new Error(`${r.failed} ${mode} requests did not answer 202`);
        total[mode].ms += r.ms;
        total[mode].n += REQUESTS;
        line.push(`${mode} ${Math.round((REQUESTS / r.ms) * 1000)} req/s`);
      }
      process.stdout.write(`  round ${round + 1}: ${line.join(', ')}\n`);
    }
    const rate = (m: Mode) => (total[m].n / total[m].ms) * 1000;
    const base = rate('unsigned');
    for (const mode of MODES) {
      process.stdout.write(`${mode.padEnd(13)} ${rate(mode).toFixed(0).padStart(5)} req/s   ratio to unsigned ${(rate(mode) / base).toFixed(3)}\n`);
    }
    process.stdout.write(`stages, in process, mean of ${Math.min(REQUESTS, 200)} sequential iterations:\n`);
    await stageCosts(pool, temporal, { id: signed.id, token: signed.token, teamId: team.id }, secret, Math.min(REQUESTS, 200));
    const timing = signatureTiming();
    process.stdout.write(
      `signature rejection (median of 400 alternating blocks): wrong first byte ${(timing.first / 1000).toFixed(2)} µs, wrong last byte ${(timing.last / 1000).toFixed(2)} µs, ratio last/first ${(timing.last / timing.first).toFixed(3)}\n`,
    );
  } finally {
    await load?.terminate();
    await served?.api.close();
    await pool.end();
    await server.close();
    await embedded?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
