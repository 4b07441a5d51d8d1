// What exact web-session accounting and Update-based redemption cost, measured in one run:
//
// 1. Slot acquisition (tryAcquireSessionSlot, which locks the team row): a burst of
//    BENCH_BURST concurrent acquisitions on ONE team (they queue on the team lock) against
//    the same burst spread over BENCH_BURST teams (no shared lock), interleaved round by
//    round. Ratio = what exactness under contention costs a single busy team. Also checks
//    exactness: 50 concurrent acquisitions against a ceiling of 5 grant exactly 5.
// 2. Minting (createWebSession: checks, slot, row, workflow start) against the same work
//    without the workflow start, and the start alone.
// 3. Redemption: the Update round trip (validator, handler, the activity that creates the
//    call and starts its workflow) against creating the same web call directly (the
//    activity's work without the Update), and the answer for a used token (row lookup).
//
//   npx tsx bench/webSessions.ts       (starts its own embedded Postgres and Temporal dev server)
//   DATABASE_URL=postgres://... TEMPORAL_ADDRESS=host:7233 npx tsx bench/webSessions.ts
//
// Knobs (environment): BENCH_ROUNDS (default 5), BENCH_BURST (default 20),
// BENCH_ITERATIONS for parts 2 and 3 (default 60).
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import os from 'node:os';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { releaseSlot, tryAcquireSessionSlot } from '../src/db/repositories/concurrencySlots.js';
import { getOrCreateSharedWebContact } from '../src/db/repositories/contacts.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { insertTeam } from '../src/db/repositories/teams.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { createLogger } from '../src/logging/logger.js';
import { scheduleCall, type CallServiceDeps } from '../src/services/calls.js';
import { UseCaseError } from '../src/services/errors.js';
import { createWebSession, redeemWebSession, startWebSessionWorkflow, type WebSessionServiceDeps } from '../src/services/webSessions.js';
import { createWorker, liveCallTaskQueue } from '../src/temporal/worker.js';
import { WEB_SESSION_TTL_MS } from '../workflows/contracts.js';
import { benchConfig, benchTempDir, connectBenchTemporal, openBenchDatabase, startBenchPostgres, runBenchmark } from './support/environment.js';
import { out, quantile, upperMedian as median } from './support/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const BURST = Number(process.env.BENCH_BURST ?? 20);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 60);
const TASK_QUEUE = 'bench-web-sessions';
/** Web calls start on the live-call queue, as in `npm start` (docs/calls.md, "Task queues"), with a worker of their own. */
const LIVE_TASK_QUEUE = liveCallTaskQueue(TASK_QUEUE);

const newTeam = (pool: Pool, maxConcurrent: number) => insertTeam(pool, { name: 'bench', maxConcurrent });

/** Milliseconds of `fn`. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

const p95 = (xs: number[]) => quantile(xs, 0.95);
const fmt = (ms: number) => `${ms.toFixed(2).padStart(7)} ms`;

async function slotAcquisition(pool: Pool): Promise<void> {
  const expires = () => new Date(Date.now() + WEB_SESSION_TTL_MS);
  // Exactness first: 50 concurrent acquisitions against a ceiling of 5.
  const small = await newTeam(pool, 5);
  const results = await Promise.all(Array.from({ length: 50 }, () => tryAcquireSessionSlot(pool, small.id, randomUUID(), expires())));
  const granted = results.filter((r) => r.granted).length;
  out(`exactness: 50 concurrent acquisitions against a ceiling of 5 granted ${granted}${granted === 5 ? '' : '  <-- WRONG'}`);

  const contended: number[] = [];
  const spread: number[] = [];
  const burst = async (teamIds: string[]) => {
    const holders = teamIds.map(() => randomUUID());
    const ms = await timed(() => Promise.all(teamIds.map((teamId, i) => tryAcquireSessionSlot(pool, teamId, holders[i], expires()))));
    await Promise.all(holders.map((h) => releaseSlot(pool, h)));
    return ms;
  };
  const one = await newTeam(pool, BURST * 2);
  const many = await Promise.all(Array.from({ length: BURST }, () => newTeam(pool, BURST * 2)));
  await burst(Array(BURST).fill(one.id)); // warm-up
  await burst(many.map((t) => t.id));
  for (let round = 0; round < ROUNDS * 4; round++) {
    // Alternate which mode goes first.
    if (round % 2 === 0) {
      contended.push(await burst(Array(BURST).fill(one.id)));
      spread.push(await burst(many.map((t) => t.id)));
    } else {
      spread.push(await burst(many.map((t) => t.id)));
      contended.push(await burst(Array(BURST).fill(one.id)));
    }
  }
  const c = median(contended);
  const s = median(spread);
  out(`burst of ${BURST} concurrent acquisitions, median of ${contended.length}:`);
  out(`  one team (queue on its row lock)   ${fmt(c)}   ${fmt(c / BURST)} per acquisition`);
  out(`  ${String(BURST).padEnd(2)} teams (no shared lock)         ${fmt(s)}   ${fmt(s / BURST)} per acquisition`);
  out(`  ratio one team / spread            ${(c / s).toFixed(2)}`);
}

async function mintingAndRedemption(pool: Pool, deps: WebSessionServiceDeps & Pick<CallServiceDeps, 'liveTaskQueue'>): Promise<void> {
  const team = await newTeam(pool, 10_000);
  const script = await insertScript(pool, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  const contact = await getOrCreateSharedWebContact(pool, team.id);
  const mint = () => createWebSession(deps, { teamId: team.id, scriptId: script.id });
  for (let i = 0; i < 5; i++) await redeemWebSession(deps, (await mint()).session_token); // warm-up (worker bundle, caches)

  // 2. Minting, and the workflow start alone (same input shape, fresh ids).
  const mintMs: number[] = [];
  const startMs: number[] = [];
  const tokens: string[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    mintMs.push(await timed(async () => tokens.push((await mint()).session_token)));
    startMs.push(await timed(() => startWebSessionWorkflow(deps, { sessionId: randomUUID(), teamId: team.id, ttlMs: WEB_SESSION_TTL_MS })));
  }
  const m = median(mintMs);
  const st = median(startMs);
  out(`create-web-session (service, sequential, median of ${ITERATIONS}):`);
  out(`  whole mint                         ${fmt(m)}   p95 ${fmt(p95(mintMs))}`);
  out(`  of which the workflow start        ${fmt(st)}   ${((st / m) * 100).toFixed(0)}%`);
  out(`  the rest (checks, slot, row)       ${fmt(m - st)}`);

  // 3. Redemption (Update + activity) against the same call created directly; then a used token.
  const redeemMs: number[] = [];
  const directMs: number[] = [];
  const usedMs: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    redeemMs.push(await timed(() => redeemWebSession(deps, tokens[i])));
    directMs.push(
      await timed(() => scheduleCall(deps, { teamId: team.id, scriptId: script.id, contact: { id: contact.id }, type: 'web', callId: randomUUID() })),
    );
    // A used token is a conflict (409 over HTTP); anything else is a failure of the bench.
    usedMs.push(await timed(() => redeemWebSession(deps, tokens[i]).catch((err: unknown) => {
      if (!(err instanceof UseCaseError && err.kind === 'conflict')) throw err;
    })));
  }
  const r = median(redeemMs);
  const d = median(directMs);
  out(`redemption (sequential, median of ${ITERATIONS}):`);
  out(`  Update round trip                  ${fmt(r)}   p95 ${fmt(p95(redeemMs))}`);
  out(`  the same web call created directly ${fmt(d)}`);
  out(`  ratio Update / direct              ${(r / d).toFixed(2)}`);
  out(`  used token answered 409            ${fmt(median(usedMs))}`);
}

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-web-sessions-');
  const { url: databaseUrl, embedded } = await openBenchDatabase(tmp, (dir) => startBenchPostgres(dir, [`max_connections=${BURST * 2 + 40}`]));
  const server = await connectBenchTemporal();
  const { client: temporal, env } = server;
  const config = benchConfig(databaseUrl, {
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    MEDIA_EDGE_WS_URL: 'wss://edge.bench/ws',
    MEDIA_EDGE_SIP_DOMAIN: 'edge.bench',
  });
  const pool = createPool(databaseUrl, BURST * 2 + 10);
  const workers: Worker[] = [];
  let running: Promise<void[]> | undefined;
  let workerConnection: NativeConnection | undefined;
  try {
    await migrate(pool);
    out(
      `web sessions, ${embedded ? 'embedded Postgres' : 'DATABASE_URL'}, ${env ? 'Temporal dev server' : 'TEMPORAL_ADDRESS'}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}`,
    );
    await slotAcquisition(pool);
    if (!env) workerConnection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
    const queue = { connection: workerConnection ?? env!.nativeConnection, namespace: 'default', taskQueue: TASK_QUEUE, deps: { config, pool, logger: createLogger('silent'), temporal, liveTaskQueue: LIVE_TASK_QUEUE } };
    workers.push(await createWorker(queue), await createWorker({ ...queue, taskQueue: LIVE_TASK_QUEUE }));
    running = Promise.all(workers.map((w) => w.run()));
    await mintingAndRedemption(pool, { pool, temporal, config, liveTaskQueue: LIVE_TASK_QUEUE });
  } finally {
    for (const w of workers) w.shutdown();
    await running;
    await workerConnection?.close();
    await pool.end();
    await server.close();
    await embedded?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
