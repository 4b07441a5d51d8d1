// Carrier pacing (docs/calls.md, "Carrier pacing"; figures in docs/benchmarks.md): BENCH_CALLS
// (300) calls due at the same moment from one number, DIAL_RATE_PER_NUMBER=BENCH_RATE (5),
// run by two worker processes (bench/support/dialRecordingWorker.ts: the service's worker,
// printing each dial the provider is asked for) sharing Redis, over Postgres and a Temporal
// dev server. It prints the dial starts bucketed per calendar second (target: never above
// the rate), and how long the whole run takes (target: calls / rate, 60 s ± 10% for 300 at 5).
//
//   npx tsx bench/dialPacing.ts
//
// Knobs: BENCH_CALLS (300), BENCH_RATE (5), BENCH_CEILING (team ceiling, 300: slots never
// bind), BENCH_LEAD_SECONDS (30: calls are created, then all fall due at once),
// BENCH_STORE (redis, or postgres: the workers get no REDIS_URL and share Postgres).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { PROJECT_ROOT } from '../src/config/index.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { addPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { insertTeam } from '../src/db/repositories/teams.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { freePort } from '../src/localPorts.js';
import { createLogger } from '../src/logging/logger.js';
import { scheduleCall } from '../src/services/calls.js';
import { startDevServer } from '../src/temporal/devServer.js';
import { callWorkflowId } from '../workflows/contracts.js';
import { RedisServer } from '../test/support/redisServer.js';
import { benchConfig, benchTempDir, runBenchmark, startBenchPostgres, waitForNamespace } from './support/environment.js';
import { out } from './support/stats.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const RATE = Number(process.env.BENCH_RATE ?? 5);
const CEILING = Number(process.env.BENCH_CEILING ?? 300);
const LEAD_SECONDS = Number(process.env.BENCH_LEAD_SECONDS ?? 30);
const STORE = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'redis';
const TASK_QUEUE = 'bench-pacing';

interface Dial {
  callId: string;
  at: number;
  worker: number;
}

function startWorker(index: number, env: NodeJS.ProcessEnv, logFile: string, dials: Dial[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bench', 'support', 'dialRecordingWorker.ts')], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(logFile);
  child.stderr!.pipe(log);
  let buffered = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const m = /^dial (\S+) (\d+)$/.exec(line);
        if (m) dials.push({ callId: m[1], at: Number(m[2]), worker: index });
        else if (line === 'worker ready') resolve(child);
        else log.write(`${line}\n`);
      }
    });
    child.once('exit', (code) => reject(new Error(`worker ${index} exited (${code}); see ${logFile}`)));
  });
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-pacing-');
  const pg = await startBenchPostgres(tmp);
  const redis = await RedisServer.start();
  const pool = createPool(pg.url, 8);
  const config = benchConfig(pg.url, { TEMPORAL_TASK_QUEUE: TASK_QUEUE });
  const dev = await startDevServer({ cliPath: config.TEMPORAL_CLI_PATH, dataDir: path.join(tmp, 'temporal'), port: await freePort(), uiPort: await freePort(), namespace: 'default', logger: createLogger('silent') });
  const workers: ChildProcess[] = [];
  let connection: Connection | undefined;
  try {
    await migrate(pool);
    connection = await Connection.connect({ address: dev.address });
    const client = new Client({ connection });
    await waitForNamespace(client);
    const dials: Dial[] = [];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: pg.url,
      REDIS_URL: STORE === 'redis' ? redis.url : '',
      TEMPORAL_ADDRESS: dev.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      DATA_DIR: path.join(tmp, 'data'),
      DIAL_RATE_PER_NUMBER: String(RATE),
      SIMULATOR_CALL_SECONDS: '1',
      LOG_LEVEL: 'warn',
    };
    mkdirSync(env.DATA_DIR!, { recursive: true });
    for (const i of [1, 2]) workers.push(await startWorker(i, env, path.join(tmp, `worker-${i}.log`), dials));

    const team = await insertTeam(pool, { name: 'pacing', maxConcurrent: CEILING });
    const script = await insertScript(pool, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
    const from = (await addPhoneNumber(pool, team.id, '+12125550100')).phone_number;
    const due = new Date(Date.now() + LEAD_SECONDS * 1000);
    const deps = { pool, temporal: client, config };
    const created = performance.now();
    const ids: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < CALLS) {
          const i = next++;
          // Numbers ending 0001 ring out: the dial is what is measured, not the conversation.
          const call = await scheduleCall(deps, { teamId: team.id, fromNumber: from, scriptId: script.id, contact: { phone_number: `+1628${String(2_000_000 + i * 10_000 + 1).padStart(7, '0')}` }, scheduledTime: due });
          ids[i] = call.callId;
        }
      }),
    );
    out(`${CALLS} calls from ${from} created in ${((performance.now() - created) / 1000).toFixed(1)} s, all due at ${due.toISOString()}; DIAL_RATE_PER_NUMBER=${RATE}, two workers, ${STORE === 'redis' ? 'Redis' : 'Postgres'} pacer store`);
    if (Date.now() > due.getTime()) out('  warning: creating the calls took longer than the lead time; raise BENCH_LEAD_SECONDS');

    const deadline = due.getTime() + ((CALLS / RATE) * 2 + 120) * 1000;
    let load: number[] = [];
    for (;;) {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM calls WHERE team_id = $1 AND status NOT IN ('scheduled', 'in-progress')`, [team.id]);
      if (Date.now() > due.getTime() && Date.now() < due.getTime() + 1000) load = os.loadavg();
      if (rows[0].n >= CALLS) break;
      if (Date.now() > deadline) throw new Error(`only ${rows[0].n} of ${CALLS} calls ended by the deadline`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const endLoad = os.loadavg();

    const unique = new Set(dials.map((d) => d.callId));
    const times = dials.map((d) => d.at).sort((a, b) => a - b);
    const perSecond = new Map<number, number>();
    for (const t of times) perSecond.set(Math.floor(t / 1000), (perSecond.get(Math.floor(t / 1000)) ?? 0) + 1);
    const counts = [...perSecond.values()];
    const histogram = new Map<number, number>();
    for (const c of counts) histogram.set(c, (histogram.get(c) ?? 0) + 1);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    const firstSecond = Math.floor(due.getTime() / 1000);
    const timeline = Array.from({ length: Math.floor(times[times.length - 1] / 1000) - firstSecond + 1 }, (_, i) => perSecond.get(firstSecond + i) ?? 0).join('');
    const byWorker = [1, 2].map((w) => dials.filter((d) => d.worker === w).length);
    out(`  dials: ${dials.length} (${unique.size} distinct calls; by worker ${byWorker.join(' / ')})`);
    out(`  dial starts per calendar second: max ${Math.max(...counts)} (target ≤ ${RATE}); seconds with n dials: ${[...histogram.entries()].sort((a, b) => a[0] - b[0]).map(([n, s]) => `${n}→${s}`).join(', ')}`);
    out(`  dials in each second from the due moment: ${timeline}`);
    out(`  gap between consecutive dials: min ${Math.min(...gaps)} ms, median ${gaps.sort((a, b) => a - b)[Math.floor(gaps.length / 2)]} ms (1/rate = ${1000 / RATE} ms)`);
    const whole = (times[times.length - 1] - due.getTime()) / 1000;
    const expected = CALLS / RATE;
    out(`  first dial ${((times[0] - due.getTime()) / 1000).toFixed(2)} s after the due moment; last dial ${whole.toFixed(1)} s after it; first to last ${((times[times.length - 1] - times[0]) / 1000).toFixed(1)} s`);
    out(`  whole run (due moment → last dial): ${whole.toFixed(1)} s against ${expected} s: ${((whole / expected - 1) * 100).toFixed(1)}% (target ±10%)`);
    out(`  load average at the due moment ${load.map((l) => l.toFixed(2)).join(' ')}, at the end ${endLoad.map((l) => l.toFixed(2)).join(' ')} (${os.cpus().length} CPUs)`);
    if (dials.length !== CALLS || unique.size !== CALLS) out(`  warning: expected one dial per call`);
    // Where the first seconds go: from the due moment to each call's wait for a token (histories).
    const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => (t ? Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : NaN);
    const waits: number[] = [];
    const direct: number[] = [];
    for (const id of ids) {
      const history = await client.workflow.getHandle(callWorkflowId(id)).fetchHistory();
      const started = (history.events ?? []).find((e) => e.activityTaskStartedEventAttributes);
      if (started) waits.push(ms(started.eventTime) - due.getTime());
      else direct.push(1);
    }
    waits.sort((a, b) => a - b);
    out(`  calls that waited for a token in an activity: ${waits.length} (first started ${(waits[0] / 1000).toFixed(1)} s after the due moment, median ${(waits[Math.floor(waits.length / 2)] / 1000).toFixed(1)} s, last ${(waits[waits.length - 1] / 1000).toFixed(1)} s); took a free token at once: ${direct.length}`);
  } finally {
    for (const w of workers) await stop(w);
    await connection?.close();
    await dev.stop();
    await pool.end();
    await redis.stop();
    await pg.stop();
  }
}

runBenchmark(main);
