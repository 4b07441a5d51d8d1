// Campaign scale (docs/benchmarks.md): thousands of calls due at one instant, run by the
// service as a user runs it: the API and the worker as their own processes (src/server.ts,
// src/worker.ts), a Temporal dev server with its SQLite file (as `npm start` runs it) and
// Postgres, every process on this machine, calls created through the public API and
// results read from the calls table and the workflow histories. Not a timed test: it
// prints figures.
//
//  1. create-phone-call throughput at concurrency 16 and 32, with the worker running (it
//     takes each new workflow's first task) and with the worker stopped (SIGSTOP), and the
//     CPU each created call costs, per process;
//  2. throughput with a ceiling: BENCH_THROUGHPUT (500) calls due at once, ceiling 20:
//     makespan (first start to last end) against ceil(calls / ceiling) × (call length +
//     ring time), target ≤ 1.5×;
//  3. on time: BENCH_ONTIME (2,000) calls due at once, ceiling 2,010 (no call waits for a
//     slot): start lateness (actual_time − scheduled_time) p50 / p90 / p99 / max, target
//     p99 ≤ 20 s;
//  4. flat cost: orchestration CPU seconds per call (API + worker + Temporal + Postgres,
//     from /proc, from the due instant until every call is analysed) with
//     BENCH_FLAT_BIG (10,000) calls due at once against BENCH_FLAT_SMALL (200), both at
//     ceiling 100, so 9,900 against 100 wait: ratio target ≤ 1.2; and the slot-related
//     signals per call with 10,000 due (target ≤ 2 on average, no workflow-task timeouts).
//
// Every scenario also reads the call histories: events, activities, timers, signals by
// name and workflow-task timeouts per call.
//
//   npx tsx bench/campaignScale.ts
//
// Knobs (environment): BENCH_SCENARIOS (default "create,throughput,ontime,flat"),
// BENCH_CREATE (1000 calls per create round), BENCH_THROUGHPUT (500),
// BENCH_THROUGHPUT_CEILING (20), BENCH_ONTIME (2000), BENCH_ONTIME_CEILING (2010),
// BENCH_FLAT_SMALL (200), BENCH_FLAT_BIG (10000), BENCH_FLAT_CEILING (100),
// BENCH_CALL_SECONDS (2: SIMULATOR_CALL_SECONDS), BENCH_CREATE_CONCURRENCY (16, for the
// scenarios), BENCH_HISTORIES (calls whose history is read per scenario; default all),
// BENCH_CALLER_NUMBERS (200: the team's caller numbers, used in turn), DIAL_RATE_PER_NUMBER
// (10: with 200 numbers, carrier pacing seldom holds a call back), BENCH_PG_STATEMENTS=1
// (load pg_stat_statements and print the statements that took the
// most time in each scenario), BENCH_WORKER_ENV (extra worker settings, e.g.
// "DATABASE_POOL_SIZE=20"), BENCH_PROFILE=1 (V8 CPU profiles of the worker, in the kept
// temp folder's profiles/; implies BENCH_KEEP), BENCH_KEEP=1 (keep the temp folder with the service logs).
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { PROJECT_ROOT } from '../src/config/index.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { addPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { freePort } from '../src/localPorts.js';
import { createLogger } from '../src/logging/logger.js';
import { startDevServer } from '../src/temporal/devServer.js';
import { callWorkflowId } from '../workflows/contracts.js';
import { insertTeamWithKey, jsonRequester } from './support/api.js';
import { benchConfig, benchTempDir, runBenchmark, startBenchPostgres, waitForNamespace } from './support/environment.js';
import { childrenNamed, machineCpuSeconds, treeCpuSeconds, treeRssMiB } from './support/processCpu.js';
import { median, out, quantile } from './support/stats.js';

const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'create,throughput,ontime,flat').split(',');
const CREATE = Number(process.env.BENCH_CREATE ?? 1000);
const THROUGHPUT = Number(process.env.BENCH_THROUGHPUT ?? 500);
const THROUGHPUT_CEILING = Number(process.env.BENCH_THROUGHPUT_CEILING ?? 20);
const ONTIME = Number(process.env.BENCH_ONTIME ?? 2000);
const ONTIME_CEILING = Number(process.env.BENCH_ONTIME_CEILING ?? 2010);
const FLAT_SMALL = Number(process.env.BENCH_FLAT_SMALL ?? 200);
const FLAT_BIG = Number(process.env.BENCH_FLAT_BIG ?? 10_000);
const FLAT_CEILING = Number(process.env.BENCH_FLAT_CEILING ?? 100);
const CALL_SECONDS = Number(process.env.BENCH_CALL_SECONDS ?? 2);
const CREATE_CONCURRENCY = Number(process.env.BENCH_CREATE_CONCURRENCY ?? 16);
const HISTORIES = process.env.BENCH_HISTORIES ? Number(process.env.BENCH_HISTORIES) : Infinity;
const PG_STATEMENTS = process.env.BENCH_PG_STATEMENTS === '1';
const PROFILE = process.env.BENCH_PROFILE === '1';
const CALLER_NUMBERS = Number(process.env.BENCH_CALLER_NUMBERS ?? 200);
const TASK_QUEUE = 'bench-campaign';
/** The simulator rings for a third of the call, at most 1 s (src/telephony/simulator.ts). */
const RING_SECONDS = Math.min(1, CALL_SECONDS / 3);
/** Signals that are about slots, in any version of the call workflow. */
const SLOT_SIGNALS = new Set(['slotFreed', 'slotGranted']);

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const pad = (v: string | number, n: number) => String(v).padStart(n);

interface Service {
  api: ChildProcess;
  worker: ChildProcess;
  temporalPid: number;
  postgresPid: number;
  base: string;
}

/** The CPU seconds of the four parts of the service, by name. */
function serviceCpu(svc: Service): Record<string, number> {
  return treeCpuSeconds({ api: svc.api.pid!, worker: svc.worker.pid!, temporal: svc.temporalPid, postgres: svc.postgresPid });
}

function diff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(b).map((k) => [k, b[k] - (a[k] ?? 0)]));
}

const sum = (r: Record<string, number>) => Object.values(r).reduce((x, y) => x + y, 0);

/** Starts `src/<entry>` in its own Node process with `env`; resolves once a log line matches `ready`. */
function startServiceProcess(entry: string, env: NodeJS.ProcessEnv, logFile: string, ready: RegExp, nodeArgs: string[] = []): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(PROJECT_ROOT, 'src', entry)], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(logFile);
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (d: Buffer) => {
      seen = (seen + d.toString()).slice(-4096);
      if (ready.test(seen)) {
        child.stdout!.off('data', onData);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${entry} exited (${code}) before it was ready; see ${logFile}`)));
  });
}

async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

interface BenchTeam {
  id: string;
  key: string;
  scriptId: string;
  /** The team's caller numbers: a campaign dials from a pool of them (BENCH_CALLER_NUMBERS). */
  from: string[];
}

let teamSeq = 0;
async function newTeam(pool: Pool, ceiling: number): Promise<BenchTeam> {
  teamSeq += 1;
  const team = await insertTeamWithKey(pool, `campaign ${teamSeq}`);
  await pool.query('UPDATE teams SET max_concurrent = $2 WHERE id = $1', [team.id, ceiling]);
  const script = await insertScript(pool, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  const from: string[] = [];
  for (let i = 0; i < CALLER_NUMBERS; i++) from.push((await addPhoneNumber(pool, team.id, `+1212555${String(1000 + i).padStart(4, '0')}`)).phone_number);
  return { id: team.id, key: team.key, scriptId: script.id, from };
}

let numberBlock = 0;
/**
 * Creates `n` calls due at `due` through the API over `concurrency` lanes; returns the call
 * ids and the calls per second. Callee numbers end in 9, so every call completes.
 */
async function createCalls(base: string, team: BenchTeam, n: number, due: Date, concurrency: number): Promise<{ ids: string[]; perSecond: number; ms: number }> {
  const request = jsonRequester(base);
  const block = (numberBlock += 1);
  const ids: string[] = new Array(n);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const json = await request(team.key, 'POST', '/api/v1/create-phone-call', {
          from_number: team.from[i % team.from.length],
          script_id: team.scriptId,
          contact: { phone_number: `+1628${2_000_000 + (block % 8) * 1_000_000 + ((i * 10 + 9) % 1_000_000)}`, first_name: 'Bench', last_name: `N${i}` },
          scheduled_time: due.toISOString(),
        });
        ids[i] = json.call_id as string;
      }
    }),
  );
  const ms = performance.now() - started;
  return { ids, perSecond: (n * 1000) / ms, ms };
}

interface HistoryFigures {
  read: number;
  events: number[];
  activities: number[];
  timers: number[];
  slotSignals: number[];
  otherSignals: number[];
  memos: number[];
  taskTimeouts: number;
  taskFailures: number;
  activityNames: Map<string, number>;
}

/** Reads the histories of (up to BENCH_HISTORIES of) the calls and counts what they hold. */
async function readHistories(client: Client, ids: string[]): Promise<HistoryFigures> {
  const step = Math.max(1, Math.ceil(ids.length / Math.min(ids.length, HISTORIES)));
  const chosen = ids.filter((_, i) => i % step === 0);
  const f: HistoryFigures = { read: 0, events: [], activities: [], timers: [], slotSignals: [], otherSignals: [], memos: [], taskTimeouts: 0, taskFailures: 0, activityNames: new Map() };
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < chosen.length) {
        const id = chosen[next++];
        const history = await client.workflow.getHandle(callWorkflowId(id)).fetchHistory();
        let activities = 0;
        let timers = 0;
        let slot = 0;
        let other = 0;
        let memos = 0;
        for (const e of history.events ?? []) {
          if (e.activityTaskScheduledEventAttributes) {
            activities += 1;
            const name = e.activityTaskScheduledEventAttributes.activityType?.name ?? '?';
            f.activityNames.set(name, (f.activityNames.get(name) ?? 0) + 1);
          }
          if (e.timerStartedEventAttributes) timers += 1;
          if (e.workflowPropertiesModifiedEventAttributes) memos += 1;
          if (e.workflowExecutionSignaledEventAttributes) {
            if (SLOT_SIGNALS.has(e.workflowExecutionSignaledEventAttributes.signalName ?? '')) slot += 1;
            else other += 1;
          }
          if (e.workflowTaskTimedOutEventAttributes) f.taskTimeouts += 1;
          if (e.workflowTaskFailedEventAttributes) f.taskFailures += 1;
        }
        f.read += 1;
        f.events.push(history.events?.length ?? 0);
        f.activities.push(activities);
        f.timers.push(timers);
        f.slotSignals.push(slot);
        f.otherSignals.push(other);
        f.memos.push(memos);
      }
    }),
  );
  return f;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

function printHistories(h: HistoryFigures): void {
  out(`  histories read: ${h.read}`);
  out(
    `  per call: ${mean(h.events).toFixed(1)} events (median ${median(h.events)}, max ${Math.max(...h.events)}), ${mean(h.activities).toFixed(1)} activities, ` +
      `${mean(h.timers).toFixed(1)} timers, ${mean(h.memos).toFixed(1)} memo upserts, ${mean(h.slotSignals).toFixed(2)} slot signals (max ${Math.max(...h.slotSignals)}), ${mean(h.otherSignals).toFixed(2)} other signals`,
  );
  out(`  workflow-task timeouts: ${h.taskTimeouts}, workflow-task failures: ${h.taskFailures}`);
  const names = [...h.activityNames.entries()].sort((a, b) => b[1] - a[1]).map(([n, c]) => `${n} ${(c / h.read).toFixed(2)}`);
  out(`  activities per call by type: ${names.join(', ')}`);
}

interface ScenarioResult {
  name: string;
  calls: number;
  ceiling: number;
  createPerSecond: number;
  fellDueEarly: boolean;
  wallMs: number;
  cpu: Record<string, number>;
  machineBusy: number;
  lateness: number[];
  durations: number[];
  makespanMs: number;
  startSpanMs: number;
  statuses: Record<string, number>;
  histories: HistoryFigures;
  load: [number, number];
  /** Resident memory (MiB) at the end of the scenario. */
  rss: { worker: number; temporal: number };
}

async function resetStatements(pool: Pool): Promise<void> {
  if (PG_STATEMENTS) await pool.query('SELECT pg_stat_statements_reset()');
}

async function printStatements(pool: Pool, calls: number): Promise<void> {
  if (!PG_STATEMENTS) return;
  const { rows } = await pool.query<{ query: string; calls: number; total: number; mean: number }>(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::int, total_exec_time AS total, mean_exec_time AS mean
       FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 12`,
  );
  out('  Postgres statements by total time (pg_stat_statements):');
  for (const r of rows) {
    out(`    ${pad(r.total.toFixed(0), 7)} ms  ${pad((r.calls / calls).toFixed(2), 6)}/call  ${r.mean.toFixed(3)} ms each  ${r.query.slice(0, 150)}`);
  }
}

/**
 * Creates `calls` calls due at one instant in a new team of ceiling `ceiling`, waits for
 * the instant, and measures from then until every call is analysed.
 */
async function scenario(svc: Service, pool: Pool, client: Client, name: string, calls: number, ceiling: number, ratePerSecond: number): Promise<ScenarioResult> {
  out(`\n== ${name}: ${calls.toLocaleString('en')} calls due at one instant, ceiling ${ceiling.toLocaleString('en')}, ${CALL_SECONDS} s simulated calls`);
  const team = await newTeam(pool, ceiling);
  // Due once every call exists, with room to spare; said below when creation ran late.
  const due = new Date(Date.now() + Math.ceil((calls / ratePerSecond) * 1.4 * 1000) + 8000);
  const created = await createCalls(svc.base, team, calls, due, CREATE_CONCURRENCY);
  const fellDueEarly = Date.now() > due.getTime() - 1000;
  out(`  created in ${s(created.ms)} (${created.perSecond.toFixed(0)} calls/s at concurrency ${CREATE_CONCURRENCY})${fellDueEarly ? '  <-- calls fell due during creation' : ''}`);
  await new Promise((r) => setTimeout(r, Math.max(0, due.getTime() - Date.now())));
  await resetStatements(pool);
  const load0 = os.loadavg()[0];
  const cpu0 = serviceCpu(svc);
  const machine0 = machineCpuSeconds();
  const t0 = performance.now();
  let lastPrint = 0;
  for (;;) {
    const { rows } = await pool.query<{ done: number; started: number; ended: number }>(
      `SELECT count(*) FILTER (WHERE progress = 'done')::int AS done,
              count(*) FILTER (WHERE actual_time IS NOT NULL)::int AS started,
              count(*) FILTER (WHERE status NOT IN ('scheduled', 'in-progress'))::int AS ended
         FROM calls WHERE team_id = $1`,
      [team.id],
    );
    if (rows[0].done >= calls) break;
    if (performance.now() - lastPrint > 30_000) {
      lastPrint = performance.now();
      out(`  ${s(performance.now() - t0)}: ${rows[0].started} started, ${rows[0].ended} ended, ${rows[0].done} analysed`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  const wallMs = performance.now() - t0;
  const cpu = diff(cpu0, serviceCpu(svc));
  const rss = { worker: treeRssMiB(svc.worker.pid!), temporal: treeRssMiB(svc.temporalPid) };
  const machine1 = machineCpuSeconds();
  const load1 = os.loadavg()[0];
  await printStatements(pool, calls);

  const { rows } = await pool.query<{ status: string; scheduled: Date; actual: Date; ended: Date }>(
    'SELECT status, scheduled_time AS scheduled, actual_time AS actual, end_time AS ended FROM calls WHERE team_id = $1',
    [team.id],
  );
  const statuses: Record<string, number> = {};
  for (const r of rows) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const startedRows = rows.filter((r) => r.actual);
  const lateness = startedRows.map((r) => r.actual.getTime() - r.scheduled.getTime());
  const durations = startedRows.map((r) => r.ended.getTime() - r.actual.getTime());
  const firstStart = Math.min(...startedRows.map((r) => r.actual.getTime()));
  const lastStart = Math.max(...startedRows.map((r) => r.actual.getTime()));
  const lastEnd = Math.max(...startedRows.map((r) => r.ended.getTime()));
  const histories = await readHistories(client, created.ids);
  const result: ScenarioResult = {
    name,
    calls,
    ceiling,
    createPerSecond: created.perSecond,
    fellDueEarly,
    wallMs,
    cpu,
    machineBusy: machine1.busy - machine0.busy,
    lateness,
    durations,
    makespanMs: lastEnd - firstStart,
    startSpanMs: lastStart - firstStart,
    statuses,
    histories,
    load: [load0, load1],
    rss,
  };
  printScenario(result);
  return result;
}

function printScenario(r: ScenarioResult): void {
  const q = (xs: number[], p: number) => s(quantile(xs, p));
  out(`  load average ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)}; due → all analysed in ${s(r.wallMs)}; statuses ${JSON.stringify(r.statuses)}`);
  out(`  start lateness: p50 ${q(r.lateness, 0.5)}, p90 ${q(r.lateness, 0.9)}, p99 ${q(r.lateness, 0.99)}, max ${s(Math.max(...r.lateness))}; ${(r.calls / Math.max(r.startSpanMs / 1000, 0.001)).toFixed(0)} starts/s from the first to the last start`);
  out(`  in-progress → end: p50 ${q(r.durations, 0.5)}, p90 ${q(r.durations, 0.9)}, max ${s(Math.max(...r.durations))}; makespan (first start → last end) ${s(r.makespanMs)}`);
  const total = sum(r.cpu);
  out(
    `  orchestration CPU: ${total.toFixed(1)} s = ${((total * 1000) / r.calls).toFixed(1)} ms per call (api ${((r.cpu.api * 1000) / r.calls).toFixed(1)}, worker ${((r.cpu.worker * 1000) / r.calls).toFixed(1)}, ` +
      `temporal ${((r.cpu.temporal * 1000) / r.calls).toFixed(1)}, postgres ${((r.cpu.postgres * 1000) / r.calls).toFixed(1)}); whole machine busy ${r.machineBusy.toFixed(1)} s`,
  );
  out(`  resident memory at the end: worker ${r.rss.worker.toFixed(0)} MiB, Temporal ${r.rss.temporal.toFixed(0)} MiB`);
  printHistories(r.histories);
}

async function createThroughput(svc: Service, pool: Pool): Promise<number> {
  out(`\n== create-phone-call, ${CREATE} calls per round (due in an hour), worker running and stopped`);
  const team = await newTeam(pool, 10);
  const later = new Date(Date.now() + 3600_000);
  await createCalls(svc.base, team, 50, later, 8); // warm-up
  let rate = 0;
  for (const workerStopped of [false, true]) {
    for (const concurrency of [16, 32]) {
      if (workerStopped) svc.worker.kill('SIGSTOP');
      const cpu0 = serviceCpu(svc);
      const created = await createCalls(svc.base, team, CREATE, later, concurrency);
      const cpu = diff(cpu0, serviceCpu(svc));
      if (workerStopped) svc.worker.kill('SIGCONT');
      // Let the worker take the first tasks of what was created (and count them too).
      await new Promise((r) => setTimeout(r, workerStopped ? 8000 : 2000));
      const after = diff(cpu0, serviceCpu(svc));
      const per = (k: string, c: Record<string, number>) => ((c[k] * 1000) / CREATE).toFixed(1);
      out(
        `  worker ${workerStopped ? 'stopped' : 'running'}, concurrency ${pad(concurrency, 2)}: ${pad(created.perSecond.toFixed(0), 4)} calls/s; CPU per call during the round api ${per('api', cpu)}, ` +
          `temporal ${per('temporal', cpu)}, postgres ${per('postgres', cpu)}, worker ${per('worker', cpu)} ms; worker's share once it ran: ${per('worker', after)} ms`,
      );
      if (!workerStopped && concurrency === 16) rate = created.perSecond;
    }
  }
  // The calls of this team never run within the bench.
  await pool.query(`UPDATE calls SET status = 'cancelled', progress = 'done', end_reason = 'cancelled', end_time = now(), duration = 0 WHERE team_id = $1 AND status = 'scheduled'`, [team.id]);
  return rate;
}

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-campaign-');
  let svc: Service | undefined;
  let api: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  const pg = await startBenchPostgres(tmp, PG_STATEMENTS ? ['shared_preload_libraries=pg_stat_statements'] : []);
  const pool = createPool(pg.url, 8);
  const config = benchConfig(pg.url);
  const dev = await startDevServer({
    cliPath: config.TEMPORAL_CLI_PATH,
    dataDir: path.join(tmp, 'temporal'),
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    logger: createLogger('silent'),
  });
  let connection: Connection | undefined;
  try {
    await migrate(pool);
    if (PG_STATEMENTS) await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const [temporalPid] = childrenNamed(process.pid, 'temporal');
    if (!temporalPid || !pg.pid) throw new Error('could not find the Temporal or Postgres process');
    connection = await Connection.connect({ address: dev.address });
    const client = new Client({ connection });
    await waitForNamespace(client);
    const port = await freePort();
    const dataDir = path.join(tmp, 'data');
    mkdirSync(dataDir, { recursive: true });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: pg.url,
      TEMPORAL_ADDRESS: dev.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      RATE_LIMITS_ENABLED: 'false',
      SIMULATOR_CALL_SECONDS: String(CALL_SECONDS),
      // A campaign dials from a pool of numbers, each at a carrier's rate: what is measured here
      // is the orchestration, which pacing seldom holds back (placePacedCall per call says how often).
      DIAL_RATE_PER_NUMBER: process.env.DIAL_RATE_PER_NUMBER ?? '10',
      LOG_LEVEL: 'info',
    };
    const workerEnv = { ...env };
    for (const pair of (process.env.BENCH_WORKER_ENV ?? '').split(',').filter(Boolean)) {
      const [k, v] = pair.split('=');
      workerEnv[k] = v;
    }
    api = await startServiceProcess('server.ts', env, path.join(tmp, 'api.log'), /API listening/);
    // BENCH_PROFILE=1: V8 CPU profiles of the worker's threads, written when it stops.
    const profileDir = path.join(tmp, 'profiles');
    const workerArgs = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
    worker = await startServiceProcess('worker.ts', workerEnv, path.join(tmp, 'worker.log'), /worker running/, workerArgs);
    svc = { api, worker, temporalPid, postgresPid: pg.pid, base: `http://127.0.0.1:${port}` };
    out(`${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; API pid ${api.pid}, worker pid ${worker.pid}, Temporal dev server pid ${temporalPid}, Postgres pid ${pg.pid}`);
    if (process.env.BENCH_WORKER_ENV) out(`worker settings: ${process.env.BENCH_WORKER_ENV}`);

    let rate = 60;
    if (SCENARIOS.includes('create')) rate = await createThroughput(svc, pool);
    const results: ScenarioResult[] = [];
    if (SCENARIOS.includes('throughput')) {
      const r = await scenario(svc, pool, client, 'throughput with a ceiling', THROUGHPUT, THROUGHPUT_CEILING, rate);
      const ideal = Math.ceil(THROUGHPUT / THROUGHPUT_CEILING) * (CALL_SECONDS + RING_SECONDS) * 1000;
      out(`  makespan / ideal (${s(ideal)} = ceil(${THROUGHPUT}/${THROUGHPUT_CEILING}) × (${CALL_SECONDS} s + ${RING_SECONDS.toFixed(2)} s ring)): ${(r.makespanMs / ideal).toFixed(2)} (target ≤ 1.5)`);
      results.push(r);
    }
    if (SCENARIOS.includes('ontime')) {
      const r = await scenario(svc, pool, client, 'on time', ONTIME, ONTIME_CEILING, rate);
      out(`  start lateness p99 ${s(quantile(r.lateness, 0.99))} (target ≤ 20 s)`);
      results.push(r);
    }
    if (SCENARIOS.includes('flat')) {
      // A cold worker (JIT, caches) costs more per call: warm it first when nothing ran before.
      if (results.length === 0) await scenario(svc, pool, client, 'warm-up (not counted)', FLAT_SMALL, FLAT_CEILING, rate);
      const small = await scenario(svc, pool, client, 'flat cost, few waiting', FLAT_SMALL, FLAT_CEILING, rate);
      const big = await scenario(svc, pool, client, 'flat cost, many waiting', FLAT_BIG, FLAT_CEILING, rate);
      const perCall = (r: ScenarioResult) => sum(r.cpu) / r.calls;
      out(`\n  orchestration CPU per call, ${FLAT_BIG - FLAT_CEILING} waiting / ${FLAT_SMALL - FLAT_CEILING} waiting: ${(perCall(big) * 1000).toFixed(1)} / ${(perCall(small) * 1000).toFixed(1)} ms = ${(perCall(big) / perCall(small)).toFixed(2)} (target ≤ 1.2)`);
      out(`  slot signals per call with ${FLAT_BIG.toLocaleString('en')} due: ${mean(big.histories.slotSignals).toFixed(2)} (target ≤ 2); workflow-task timeouts ${big.histories.taskTimeouts}`);
      results.push(small, big);
    }
    out('\nsummary');
    for (const r of results) {
      out(
        `  ${r.name.padEnd(26)} ${pad(r.calls, 6)} calls, ceiling ${pad(r.ceiling, 5)}: lateness p99 ${s(quantile(r.lateness, 0.99)).padStart(8)}, makespan ${s(r.makespanMs).padStart(8)}, ` +
          `${((sum(r.cpu) * 1000) / r.calls).toFixed(1)} ms CPU/call, ${mean(r.histories.events).toFixed(0)} events/call, ${mean(r.histories.slotSignals).toFixed(2)} slot signals/call, ${r.histories.taskTimeouts} task timeouts`,
      );
    }
  } finally {
    await stopProcess(api);
    await stopProcess(worker);
    await connection?.close();
    await pool.end();
    await dev.stop();
    await pg.stop();
    if (process.env.BENCH_KEEP === '1' || PROFILE) out(`kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
