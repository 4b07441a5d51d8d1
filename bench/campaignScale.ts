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
// Issue 27's figures, all from the same run, each printed against its target (PASS/MISS)
// in a closing table with the sizes and the load average:
//  0. floor: Temporal's own cost on this stack, before the service starts: BENCH_FLOOR
//     (1,000) minimal workflows (one local activity) and as many call-shaped ones (two
//     local activities, two timers: ring and talk) started at once on the same dev server,
//     with the service worker's sticky timeout and the SDK's other defaults
//     (bench/campaignScale/floor.ts); CPU per workflow of the client and worker (this
//     process) and of Temporal; a simulated call's orchestration CPU (on time, else the
//     200-call run) against the call-shaped floor, target ≤ 1.3×;
//  live calls beside the bursts of "on time" and "flat cost, many waiting": a team of its
//     own (ceiling 10,000) gets one call every 1 / BENCH_LIVE_RATE s through the API, from
//     BENCH_LIVE_LEAD s before the due instant until every call of the burst has started
//     (at most BENCH_LIVE_WINDOW s after it). Calls that ended before the due instant are
//     the no-burst measure; calls in conversation while the burst's calls were still
//     starting are the live ones: their workflow-task waits once in progress (scheduled →
//     started, from their histories and their child workflows'), p50 / p99, target p99 ≤
//     250 ms, and their in-progress → end duration against the no-burst median, target
//     p99 ≤ 1.5×;
//  head of the line: with BENCH_FLAT_BIG due at ceiling 100, the start lateness of the
//     first BENCH_HEAD (100) calls in line, target ≤ 10 s; for every burst, the calls that
//     something at least BENCH_LINE_BATCH (100) places behind them in line overtook, target 0;
//  workflow-task timeouts with BENCH_FLAT_BIG due (target 0), CPU per call BENCH_FLAT_BIG
//     against BENCH_FLAT_SMALL (≤ 1.2×), start lateness p99 at BENCH_ONTIME due with free
//     slots (kept ≤ BENCH_KEPT_P99, 43.5 s, the figure before issue 27).
//  voice turns beside the bursts of "on time" and "flat cost, many waiting": bench/voiceTurns.ts,
//     started on this service (bench/support/voiceBeside.ts): its own API and media edge, the
//     calls' workflows on this service's worker and live-call queue. BENCH_VOICE_CALLS (10)
//     browser calls at once in rounds, first with no burst, then from the due instant until
//     every call of the burst has started (as the live calls): turn latency p95 at the edge
//     and at the caller, target ≤ 1.5 s. A browser call's own orchestration CPU on this
//     service (worker, Temporal, Postgres), measured in the no-burst level above the idle
//     service's, is taken out of the burst's CPU for each browser call made during it.
//
// A quick run (a few minutes):
//   BENCH_SCENARIOS=floor,ontime,flat BENCH_FLOOR=300 BENCH_ONTIME=500 BENCH_FLAT_BIG=2000 npx tsx bench/campaignScale.ts
//
// Every scenario also reads the call histories: events, activities, timers, signals by
// name and workflow-task timeouts per call.
//
//   npx tsx bench/campaignScale.ts
//
// Knobs (environment): BENCH_SCENARIOS (default "floor,create,throughput,ontime,flat"),
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
// temp folder's profiles/; implies BENCH_KEEP), BENCH_KEEP=1 (keep the temp folder with the service logs),
// BENCH_FLOOR (1000 workflows of each floor shape), BENCH_FLOOR_SHAPES (default
// "minimal,call-shaped"; also memos, status-upserts, patches, signal, continue-as-new,
// analysis and all: the call shape plus one ingredient of a simulated call's history each,
// printed against the call shape, bench/campaignScale/floor.ts), BENCH_LIVE_RATE (2 live calls a second;
// 0: no live calls), BENCH_LIVE_LEAD (20 s), BENCH_LIVE_WINDOW (120 s), BENCH_HEAD (100),
// BENCH_LINE_BATCH (100), BENCH_KEPT_P99 (43.5 s), BENCH_VOICE_CALLS (10 browser calls a
// round; 0: no voice calls).
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
import { measureFloor, type FloorFigures } from './campaignScale/floor.js';
import { startVoiceBeside, type VoiceBeside, type VoiceLevelSummary } from './support/voiceBeside.js';
import { atMost, lineInversions, verdictWord, workflowTaskWaits, type Verdict, type WorkflowTaskWait } from './campaignScale/figures.js';

const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'floor,create,throughput,ontime,flat').split(',');
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
const FLOOR = Number(process.env.BENCH_FLOOR ?? 1000);
const FLOOR_SHAPES = (process.env.BENCH_FLOOR_SHAPES ?? 'minimal,call-shaped').split(',').filter(Boolean);
const LIVE_RATE = Number(process.env.BENCH_LIVE_RATE ?? 2);
const LIVE_LEAD_MS = Number(process.env.BENCH_LIVE_LEAD ?? 20) * 1000;
const LIVE_WINDOW_MS = Number(process.env.BENCH_LIVE_WINDOW ?? 120) * 1000;
const HEAD = Number(process.env.BENCH_HEAD ?? 100);
const LINE_BATCH = Number(process.env.BENCH_LINE_BATCH ?? 100);
const KEPT_P99_MS = Number(process.env.BENCH_KEPT_P99 ?? 43.5) * 1000;
const VOICE_CALLS = Number(process.env.BENCH_VOICE_CALLS ?? 10);
/** The no-burst level of browser calls runs until it has this many turns (two rounds of 10 calls). */
const VOICE_BASELINE_TURNS = 80;
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
/** The `i`th callee of a block of numbers: it ends in 9, so the call completes. */
const calleeNumber = (block: number, i: number) => `+1628${2_000_000 + (block % 8) * 1_000_000 + ((i * 10 + 9) % 1_000_000)}`;

interface LiveTrickle {
  /** Stops creating calls; resolves with the ids of those created. */
  stop(): Promise<string[]>;
}

/**
 * One call due now every 1 / `perSecond` s through the API in `team`, until stopped: calls
 * that are talking when a burst falls due in another team. A slow answer delays the next
 * call rather than bunching them.
 */
function startLiveTrickle(base: string, team: BenchTeam, perSecond: number): LiveTrickle {
  const request = jsonRequester(base);
  const block = (numberBlock += 1);
  const ids: string[] = [];
  let stopped = false;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      const sent = performance.now();
      const json = await request(team.key, 'POST', '/api/v1/create-phone-call', {
        from_number: team.from[i % team.from.length],
        script_id: team.scriptId,
        contact: { phone_number: calleeNumber(block, i), first_name: 'Live', last_name: `L${i}` },
      });
      ids.push(json.call_id as string);
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 / perSecond - (performance.now() - sent))));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return ids;
    },
  };
}
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
          contact: { phone_number: calleeNumber(block, i), first_name: 'Bench', last_name: `N${i}` },
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
  /** Workflow tasks completed, over the call's runs (docs/calls.md, "Workflow tasks per call"). */
  tasks: number[];
  slotSignals: number[];
  otherSignals: number[];
  memos: number[];
  taskTimeouts: number;
  taskFailures: number;
  activityNames: Map<string, number>;
}

/**
 * The events of every run of a call's workflow, oldest run first: an admitted call continues
 * as new on the live-call queue (docs/calls.md, "Task queues"), so its admission is in the run
 * before the latest (found through the latest run's continuedExecutionRunId).
 */
async function callHistoryEvents(client: Client, callId: string): Promise<HistoryEvents> {
  const runs: HistoryEvents[] = [];
  let runId: string | undefined;
  for (;;) {
    const events = (await client.workflow.getHandle(callWorkflowId(callId), runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    if (!runId) return runs.flat();
  }
}

type HistoryEvents = NonNullable<Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>['events']>;

/** Reads the histories of (up to BENCH_HISTORIES of) the calls and counts what they hold. */
async function readHistories(client: Client, ids: string[]): Promise<HistoryFigures> {
  const step = Math.max(1, Math.ceil(ids.length / Math.min(ids.length, HISTORIES)));
  const chosen = ids.filter((_, i) => i % step === 0);
  const f: HistoryFigures = { read: 0, events: [], activities: [], timers: [], tasks: [], slotSignals: [], otherSignals: [], memos: [], taskTimeouts: 0, taskFailures: 0, activityNames: new Map() };
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < chosen.length) {
        const id = chosen[next++];
        const history = { events: await callHistoryEvents(client, id) };
        let activities = 0;
        let timers = 0;
        let tasks = 0;
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
          if (e.workflowTaskCompletedEventAttributes) tasks += 1;
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
        f.tasks.push(tasks);
        f.slotSignals.push(slot);
        f.otherSignals.push(other);
        f.memos.push(memos);
      }
    }),
  );
  return f;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/**
 * The workflow-task waits of each call's workflow and of the child workflows it started
 * (a call's conversation may run in one, on a task queue of its own).
 */
async function readTaskWaits(client: Client, ids: string[]): Promise<Map<string, WorkflowTaskWait[]>> {
  const waits = new Map<string, WorkflowTaskWait[]>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < ids.length) {
        const id = ids[next++];
        const own: WorkflowTaskWait[] = [];
        const workflowIds = [callWorkflowId(id)];
        for (let k = 0; k < workflowIds.length; k++) {
          const history = k === 0 ? { events: await callHistoryEvents(client, id) } : await client.workflow.getHandle(workflowIds[k]).fetchHistory();
          own.push(...workflowTaskWaits(history.events ?? []));
          for (const e of history.events ?? []) {
            const child = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
            if (child) workflowIds.push(child);
          }
        }
        waits.set(id, own);
      }
    }),
  );
  return waits;
}

interface LiveFigures {
  created: number;
  /** Calls that ended before the due instant: the no-burst measure. */
  baseline: { calls: number; durations: number[]; waits: number[] };
  /** Calls in conversation while the burst's calls were starting. */
  during: { calls: number; durations: number[]; waits: number[]; timeouts: number; lateAfterDueMs: number[] };
}

/** A live task that waited longer than this to start is late (the target's p99). */
const LIVE_WAIT_TARGET_MS = 250;

/** Reads the live calls once they are analysed and sorts them into before and during the burst. */
async function liveFigures(pool: Pool, client: Client, ids: string[], dueMs: number, burstLastStartMs: number): Promise<LiveFigures> {
  for (let i = 0; i < 300; i++) {
    const { rows } = await pool.query<{ done: number }>(`SELECT count(*)::int AS done FROM calls WHERE id = ANY($1::uuid[]) AND progress = 'done'`, [ids]);
    if (rows[0].done >= ids.length) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  const { rows } = await pool.query<{ id: string; actual: Date | null; ended: Date | null }>(
    'SELECT id, actual_time AS actual, end_time AS ended FROM calls WHERE id = ANY($1::uuid[])',
    [ids],
  );
  const talked = rows.filter((r) => r.actual && r.ended);
  const before = talked.filter((r) => r.ended!.getTime() < dueMs);
  const during = talked.filter((r) => r.actual!.getTime() < burstLastStartMs && r.ended!.getTime() > dueMs);
  const waits = await readTaskWaits(client, [...before, ...during].map((r) => r.id));
  // Tasks once the call is in progress: its conversation, not its own admission.
  const talking = (r: (typeof rows)[number]) => (waits.get(r.id) ?? []).filter((w) => w.scheduledMs > r.actual!.getTime());
  const duration = (r: (typeof rows)[number]) => r.ended!.getTime() - r.actual!.getTime();
  return {
    created: ids.length,
    // A call that ended before the due instant may be analysed after it: that task is the burst's.
    baseline: { calls: before.length, durations: before.map(duration), waits: before.flatMap((r) => talking(r).filter((w) => w.scheduledMs < dueMs).map((w) => w.waitMs)) },
    during: {
      calls: during.length,
      durations: during.map(duration),
      waits: during.flatMap((r) => talking(r).map((w) => w.waitMs)),
      timeouts: during.reduce((n, r) => n + talking(r).reduce((m, w) => m + w.timedOutBefore, 0), 0),
      // When the late ones were scheduled: at the burst's first admissions, or all along.
      lateAfterDueMs: during.flatMap((r) => talking(r).filter((w) => w.waitMs > LIVE_WAIT_TARGET_MS).map((w) => w.scheduledMs - dueMs)),
    },
  };
}

interface TargetLine {
  scenario: string;
  goal: string;
  shown: string;
  verdict: Verdict;
}
/** Every figure judged in this run, printed again at the end. */
const targets: TargetLine[] = [];

/** Prints a figure against its target and keeps it for the closing table. */
function judge(scenario: string, goal: string, verdict: Verdict, show: (x: number) => string): void {
  const line = { scenario, goal, shown: `${show(verdict.value)} (target ≤ ${show(verdict.target)})`, verdict };
  targets.push(line);
  out(`  ${goal}: ${line.shown} ${verdictWord(verdict)}`);
}

const ratio = (x: number) => `${x.toFixed(2)}×`;
const msShown = (x: number) => `${x.toFixed(0)} ms`;

function printHistories(h: HistoryFigures): void {
  out(`  histories read: ${h.read}`);
  out(
    `  per call: ${mean(h.events).toFixed(1)} events (median ${median(h.events)}, max ${Math.max(...h.events)}), ${mean(h.activities).toFixed(1)} activities, ` +
      `${mean(h.tasks).toFixed(1)} workflow tasks (median ${median(h.tasks)}), ${mean(h.timers).toFixed(1)} timers, ${mean(h.memos).toFixed(1)} memo upserts, ${mean(h.slotSignals).toFixed(2)} slot signals (max ${Math.max(...h.slotSignals)}), ${mean(h.otherSignals).toFixed(2)} other signals`,
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
  /** Live calls that started while the CPU was read: counted as calls in the CPU per call. */
  extraCalls: number;
  /** Start lateness of the first BENCH_HEAD calls in line (never started: Infinity). */
  headLateness: number[];
  /** Calls that a call at least BENCH_LINE_BATCH places behind them in line overtook. */
  inversions: number;
  live?: LiveFigures;
  /** The browser calls' turns while the burst's calls were starting. */
  voice?: VoiceLevelSummary;
  /** Their own orchestration CPU (as measured with no burst), taken out of `cpu`. */
  voiceCpuSeconds: number;
}

/** Orchestration CPU ms per call, the live calls that ran meanwhile counted as calls. */
const cpuPerCallMs = (r: ScenarioResult) => (sum(r.cpu) * 1000) / (r.calls + r.extraCalls);

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
async function scenario(
  svc: Service,
  pool: Pool,
  client: Client,
  name: string,
  calls: number,
  ceiling: number,
  ratePerSecond: number,
  liveTeam?: BenchTeam,
  voice?: VoiceBesideRun,
): Promise<ScenarioResult> {
  out(`\n== ${name}: ${calls.toLocaleString('en')} calls due at one instant, ceiling ${ceiling.toLocaleString('en')}, ${CALL_SECONDS} s simulated calls${liveTeam ? `, live calls beside it (${LIVE_RATE} a second)` : ''}`);
  const team = await newTeam(pool, ceiling);
  // Due once every call exists, with room to spare; said below when creation ran late.
  // Live calls run for BENCH_LIVE_LEAD s before the due instant: their no-burst measure.
  const due = new Date(Date.now() + Math.ceil((calls / ratePerSecond) * 1.4 * 1000) + 8000 + (liveTeam ? LIVE_LEAD_MS : 0));
  const created = await createCalls(svc.base, team, calls, due, CREATE_CONCURRENCY);
  const fellDueEarly = Date.now() > due.getTime() - 1000;
  out(`  created in ${s(created.ms)} (${created.perSecond.toFixed(0)} calls/s at concurrency ${CREATE_CONCURRENCY})${fellDueEarly ? '  <-- calls fell due during creation' : ''}`);
  if (liveTeam && due.getTime() - Date.now() < LIVE_LEAD_MS / 2) out(`  <-- live calls start only ${s(due.getTime() - Date.now())} before the due instant (creation was slow)`);
  let trickle = liveTeam ? startLiveTrickle(svc.base, liveTeam, LIVE_RATE) : undefined;
  let liveIds: string[] = [];
  await new Promise((r) => setTimeout(r, Math.max(0, due.getTime() - Date.now())));
  // Browser calls from the due instant until the burst has started, like the live calls.
  const voiceLevel = liveTeam ? voice?.beside.startLevel() : undefined;
  let voiceResult: Promise<VoiceLevelSummary> | undefined;
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
    if (trickle && (rows[0].started >= calls || performance.now() - t0 > LIVE_WINDOW_MS)) {
      liveIds = await trickle.stop();
      trickle = undefined;
      // Not awaited here: the round in progress ends on its own time, which is not the burst's.
      voiceResult = voiceLevel?.stop();
    }
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
  if (trickle) liveIds = await trickle.stop();
  const voiceSummary = await (voiceResult ?? voiceLevel?.stop());
  // The browser calls' workflows ran on this service: their own CPU, as measured with no burst, is not the campaign's.
  const voiceCpu = voiceSummary && voice ? Object.fromEntries(Object.entries(voice.cpuPerCall).map(([part, v]) => [part, v * voiceSummary.callsRun])) : {};
  for (const [part, v] of Object.entries(voiceCpu)) cpu[part] -= v;
  await printStatements(pool, calls);
  const extraCalls = liveIds.length
    ? (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE id = ANY($1::uuid[]) AND actual_time >= $2', [liveIds, due])).rows[0].n
    : 0;

  const { rows } = await pool.query<{ status: string; scheduled: Date; actual: Date; ended: Date; seq: string }>(
    'SELECT status, scheduled_time AS scheduled, actual_time AS actual, end_time AS ended, seq FROM calls WHERE team_id = $1',
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
  // The line: scheduled_time, then seq (every call here is due at one instant).
  const line = [...rows].sort((a, b) => a.scheduled.getTime() - b.scheduled.getTime() || Number(a.seq) - Number(b.seq));
  const headLateness = line.slice(0, HEAD).map((r) => (r.actual ? r.actual.getTime() - r.scheduled.getTime() : Infinity));
  const inversions = lineInversions(
    line.map((r, place) => ({ place, startedMs: r.actual?.getTime() })),
    LINE_BATCH,
  );
  const live = liveIds.length ? await liveFigures(pool, client, liveIds, due.getTime(), lastStart) : undefined;
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
    extraCalls,
    headLateness,
    inversions,
    live,
    voice: voiceSummary,
    voiceCpuSeconds: sum(voiceCpu),
  };
  printScenario(result);
  return result;
}

/** A level of browser calls in one line. */
function voiceShown(v: VoiceLevelSummary): string {
  return (
    `turn latency at the edge p50 ${msShown(v.edgeP50)}, p95 ${msShown(v.edgeP95)}; at the caller p50 ${msShown(v.callerP50)}, p95 ${msShown(v.callerP95)} (${v.turns} turns); ` +
    `workflow between two voice activities p50 ${msShown(v.workflowP50)}, p95 ${msShown(v.workflowP95)}; ${v.failed} failed calls, ${v.unheard} answers not made out`
  );
}

/** The browser calls beside the bursts, and what one costs this service with no burst. */
interface VoiceBesideRun {
  beside: VoiceBeside;
  baseline: VoiceLevelSummary;
  /** A browser call's own orchestration CPU (s) by part of this service: its workflows on the worker, Temporal, Postgres. */
  cpuPerCall: Record<string, number>;
}

/** Time the service's CPU goes idle, then measure a level of browser calls with no burst, and its CPU above idle. */
async function voiceWithNoBurst(svc: Service, beside: VoiceBeside): Promise<Omit<VoiceBesideRun, 'beside'>> {
  const idle0 = serviceCpu(svc);
  const idleStart = performance.now();
  await new Promise((r) => setTimeout(r, 5000));
  const idleSeconds = (performance.now() - idleStart) / 1000;
  const idle = diff(idle0, serviceCpu(svc));
  const cpu0 = serviceCpu(svc);
  const start = performance.now();
  const baseline = await beside.level(VOICE_BASELINE_TURNS);
  const seconds = (performance.now() - start) / 1000;
  const used = diff(cpu0, serviceCpu(svc));
  const cpuPerCall = Object.fromEntries(Object.entries(used).map(([part, v]) => [part, Math.max(0, v - (idle[part] / idleSeconds) * seconds) / baseline.callsRun]));
  return { baseline, cpuPerCall };
}

function printScenario(r: ScenarioResult): void {
  const q = (xs: number[], p: number) => s(quantile(xs, p));
  out(`  load average ${r.load[0].toFixed(1)} → ${r.load[1].toFixed(1)}; due → all analysed in ${s(r.wallMs)}; statuses ${JSON.stringify(r.statuses)}`);
  out(`  start lateness: p50 ${q(r.lateness, 0.5)}, p90 ${q(r.lateness, 0.9)}, p99 ${q(r.lateness, 0.99)}, max ${s(Math.max(...r.lateness))}; ${(r.calls / Math.max(r.startSpanMs / 1000, 0.001)).toFixed(0)} starts/s from the first to the last start`);
  out(`  in-progress → end: p50 ${q(r.durations, 0.5)}, p90 ${q(r.durations, 0.9)}, max ${s(Math.max(...r.durations))}; makespan (first start → last end) ${s(r.makespanMs)}`);
  const total = sum(r.cpu);
  const n = r.calls + r.extraCalls;
  out(
    `  orchestration CPU: ${total.toFixed(1)} s = ${cpuPerCallMs(r).toFixed(1)} ms per call (api ${((r.cpu.api * 1000) / n).toFixed(1)}, worker ${((r.cpu.worker * 1000) / n).toFixed(1)}, ` +
      `temporal ${((r.cpu.temporal * 1000) / n).toFixed(1)}, postgres ${((r.cpu.postgres * 1000) / n).toFixed(1)}); whole machine busy ${r.machineBusy.toFixed(1)} s` +
      (r.extraCalls ? `; ${r.extraCalls} live calls that started meanwhile counted as calls` : '') +
      (r.voice ? `; ${r.voice.callsRun} browser calls' own ${r.voiceCpuSeconds.toFixed(1)} s taken out` : ''),
  );
  const head = r.headLateness.filter(Number.isFinite);
  out(
    `  line: the first ${r.headLateness.length} calls in line started ${head.length ? `p50 ${s(quantile(head, 0.5))}, max ${s(Math.max(...r.headLateness))}` : 'never'} after due; ` +
      `${r.inversions} calls overtaken by one at least ${LINE_BATCH} places behind them`,
  );
  if (r.live) {
    const l = r.live;
    const q = (xs: number[], p: number) => (xs.length ? quantile(xs, p) : NaN);
    out(
      `  live calls (${l.created} created): ${l.baseline.calls} ended before the due instant: in progress → end p50 ${s(q(l.baseline.durations, 0.5))}, ` +
        `conversation task wait p50 ${msShown(q(l.baseline.waits, 0.5))}, p99 ${msShown(q(l.baseline.waits, 0.99))} (${l.baseline.waits.length} tasks)`,
    );
    out(
      `    ${l.during.calls} in conversation while the burst started: in progress → end p50 ${s(q(l.during.durations, 0.5))}, p99 ${s(q(l.during.durations, 0.99))}; ` +
        `conversation task wait p50 ${msShown(q(l.during.waits, 0.5))}, p99 ${msShown(q(l.during.waits, 0.99))}, max ${msShown(l.during.waits.length ? Math.max(...l.during.waits) : NaN)} ` +
        `(${l.during.waits.length} tasks, ${l.during.timeouts} timed out first)`,
    );
    const spans: [number, number][] = [[0, 5], [5, 10], [10, 30], [30, 60], [60, Infinity]];
    const lateIn = ([from, to]: [number, number]) => l.during.lateAfterDueMs.filter((ms) => ms >= from * 1000 && ms < to * 1000).length;
    const label = ([from, to]: [number, number]) => (Number.isFinite(to) ? `${from}–${to} s` : `${from} s on`);
    out(`    tasks that waited over ${LIVE_WAIT_TARGET_MS} ms, by when they were scheduled after the due instant: ${spans.map((span) => `${label(span)} ${lateIn(span)}`).join(', ')}`);
  }
  if (r.voice) out(`  voice turns (bench/voiceTurns.ts, ${r.voice.calls} browser calls at once): ${voiceShown(r.voice)}`);
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

/**
 * How fast calls are created now, when the create scenario does not run: 100 calls due in an
 * hour (then cancelled), so a scenario's due instant leaves room to create its calls.
 */
async function probeCreateRate(svc: Service, pool: Pool): Promise<number> {
  const team = await newTeam(pool, 10);
  const created = await createCalls(svc.base, team, 100, new Date(Date.now() + 3600_000), CREATE_CONCURRENCY);
  await pool.query(`UPDATE calls SET status = 'cancelled', progress = 'done', end_reason = 'cancelled', end_time = now(), duration = 0 WHERE team_id = $1 AND status = 'scheduled'`, [team.id]);
  out(`  creating calls now: ${created.perSecond.toFixed(0)} a second (100 calls due in an hour, at concurrency ${CREATE_CONCURRENCY})`);
  return created.perSecond;
}

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-campaign-');
  let svc: Service | undefined;
  let api: ChildProcess | undefined;
  let worker: ChildProcess | undefined;
  let voice: VoiceBesideRun | undefined;
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
    const loadAtStart = os.loadavg();
    // Temporal's floor first, on the dev server alone (the service is not running yet).
    let floor: FloorFigures[] | undefined;
    if (SCENARIOS.includes('floor')) {
      out(`\n== Temporal's floor: ${FLOOR.toLocaleString('en')} workflows of each shape started at once (concurrency ${CREATE_CONCURRENCY}), load average ${os.loadavg()[0].toFixed(1)}`);
      floor = await measureFloor({
        client,
        address: dev.address,
        temporalPid,
        workflows: FLOOR,
        concurrency: CREATE_CONCURRENCY,
        ringMs: RING_SECONDS * 1000,
        talkMs: (CALL_SECONDS - RING_SECONDS) * 1000,
        shapes: FLOOR_SHAPES,
      });
      const bare = floor.find((f) => f.shape === 'call-shaped');
      for (const f of floor) {
        // An ingredient's cost is what it adds to the call shape of the same run.
        const added = bare && f.shape !== 'call-shaped' && f.shape !== 'minimal' ? `; + ${(f.totalMs - bare.totalMs).toFixed(1)} ms on the call shape (Temporal + ${(f.temporalMs - bare.temporalMs).toFixed(1)})` : '';
        out(
          `  ${f.shape.padEnd(15)}: ${f.totalMs.toFixed(1)} ms CPU per workflow (client and worker ${f.clientWorkerMs.toFixed(1)}, Temporal ${f.temporalMs.toFixed(1)})${added}; ` +
            `${((f.workflows * 1000) / f.wallMs).toFixed(1)} workflows/s end to end (${s(f.wallMs)}); load average ${os.loadavg()[0].toFixed(1)}`,
        );
      }
    }
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
    // Browser calls on this service (its worker runs their workflows, its analysis reads their recordings).
    const bursts = ['ontime', 'flat'].some((name) => SCENARIOS.includes(name));
    if (VOICE_CALLS > 0 && LIVE_RATE > 0 && bursts) {
      out(`\n== voice turns beside the campaign: bench/voiceTurns.ts, ${VOICE_CALLS} browser calls at once, first with no burst`);
      const beside = await startVoiceBeside({ ...env, RECORDINGS_DIR: path.join(dataDir, 'recordings') }, VOICE_CALLS);
      voice = { beside, ...(await voiceWithNoBurst(svc, beside)) };
      out(`  no burst: ${voiceShown(voice.baseline)}`);
      out(`  a browser call's own orchestration CPU on this service, with no burst: ${(sum(voice.cpuPerCall) * 1000).toFixed(0)} ms (${Object.entries(voice.cpuPerCall).map(([part, v]) => `${part} ${(v * 1000).toFixed(0)}`).join(', ')})`);
    }

    let rate = SCENARIOS.includes('create') ? await createThroughput(svc, pool) : await probeCreateRate(svc, pool);
    const results: ScenarioResult[] = [];
    if (SCENARIOS.includes('throughput')) {
      const r = await scenario(svc, pool, client, 'throughput with a ceiling', THROUGHPUT, THROUGHPUT_CEILING, rate);
      rate = Math.min(rate, r.createPerSecond);
      const ideal = Math.ceil(THROUGHPUT / THROUGHPUT_CEILING) * (CALL_SECONDS + RING_SECONDS) * 1000;
      out(`  makespan / ideal (${s(ideal)} = ceil(${THROUGHPUT}/${THROUGHPUT_CEILING}) × (${CALL_SECONDS} s + ${RING_SECONDS.toFixed(2)} s ring)): ${(r.makespanMs / ideal).toFixed(2)} (target ≤ 1.5)`);
      results.push(r);
    }
    // Calls that are talking when a burst falls due: a team of their own, never in the burst's line.
    const liveTeam = LIVE_RATE > 0 ? await newTeam(pool, 10_000) : undefined;
    const judgeLive = (r: ScenarioResult) => {
      if (!r.live) return;
      const l = r.live;
      judge(r.name, `live calls' conversation task wait p99 (${l.during.calls} calls, ${l.during.waits.length} tasks)`, atMost(l.during.waits.length ? quantile(l.during.waits, 0.99) : NaN, LIVE_WAIT_TARGET_MS), msShown);
      const base = l.baseline.durations.length ? quantile(l.baseline.durations, 0.5) : NaN;
      judge(r.name, `live calls' duration p99 / no-burst p50 (${s(l.during.durations.length ? quantile(l.during.durations, 0.99) : NaN)} / ${s(base)})`, atMost(l.during.durations.length ? quantile(l.during.durations, 0.99) / base : NaN, 1.5), ratio);
      if (r.voice) {
        const v = r.voice;
        judge(r.name, `voice turn latency p95 at ${v.calls} browser calls, edge / caller ${msShown(v.edgeP95)} / ${msShown(v.callerP95)} (no burst ${msShown(voice!.baseline.edgeP95)} / ${msShown(voice!.baseline.callerP95)})`, atMost(Math.max(v.edgeP95, v.callerP95), 1500), msShown);
      }
    };
    if (SCENARIOS.includes('ontime')) {
      const r = await scenario(svc, pool, client, 'on time', ONTIME, ONTIME_CEILING, rate, liveTeam, voice);
      rate = Math.min(rate, r.createPerSecond);
      out(`  start lateness p99 ${s(quantile(r.lateness, 0.99))} (issue 26's target ≤ 20 s)`);
      judge(r.name, `start lateness p99 with free slots`, atMost(quantile(r.lateness, 0.99), KEPT_P99_MS), s);
      judge(r.name, `calls overtaken by one ≥ ${LINE_BATCH} places behind`, atMost(r.inversions, 0), String);
      judgeLive(r);
      results.push(r);
    }
    if (SCENARIOS.includes('flat')) {
      // A cold worker (JIT, caches) costs more per call: warm it first when nothing ran before.
      if (results.length === 0) await scenario(svc, pool, client, 'warm-up (not counted)', FLAT_SMALL, FLAT_CEILING, rate);
      const small = await scenario(svc, pool, client, 'flat cost, few waiting', FLAT_SMALL, FLAT_CEILING, rate);
      // Creating calls on a busy machine is slower than the first guess: due after the measured rate.
      rate = Math.min(rate, small.createPerSecond);
      const big = await scenario(svc, pool, client, 'flat cost, many waiting', FLAT_BIG, FLAT_CEILING, rate, liveTeam, voice);
      out(`\n  orchestration CPU per call, ${FLAT_BIG - FLAT_CEILING} waiting / ${FLAT_SMALL - FLAT_CEILING} waiting: ${cpuPerCallMs(big).toFixed(1)} / ${cpuPerCallMs(small).toFixed(1)} ms`);
      out(`  slot signals per call with ${FLAT_BIG.toLocaleString('en')} due: ${mean(big.histories.slotSignals).toFixed(2)} (target ≤ 2)`);
      judge(big.name, `CPU per call, ${FLAT_BIG.toLocaleString('en')} / ${FLAT_SMALL} due`, atMost(cpuPerCallMs(big) / cpuPerCallMs(small), 1.2), ratio);
      judge(big.name, `workflow-task timeouts (${big.histories.read} histories)`, atMost(big.histories.taskTimeouts, 0), String);
      judge(big.name, `start lateness of the first ${big.headLateness.length} in line, max`, atMost(Math.max(...big.headLateness), 10_000), s);
      judge(big.name, `calls overtaken by one ≥ ${LINE_BATCH} places behind`, atMost(big.inversions, 0), String);
      judgeLive(big);
      results.push(small, big);
    }
    const callShaped = floor?.find((f) => f.shape === 'call-shaped');
    const simulated = results.find((r) => r.name === 'on time') ?? results.find((r) => r.name === 'flat cost, few waiting');
    if (callShaped && simulated) {
      out(`\n== against the floor`);
      judge(simulated.name, `a simulated call's CPU / the call-shaped floor (${cpuPerCallMs(simulated).toFixed(1)} / ${callShaped.totalMs.toFixed(1)} ms)`, atMost(cpuPerCallMs(simulated) / callShaped.totalMs, 1.3), ratio);
    }
    out('\nsummary');
    for (const r of results) {
      out(
        `  ${r.name.padEnd(26)} ${pad(r.calls, 6)} calls, ceiling ${pad(r.ceiling, 5)}: lateness p99 ${s(quantile(r.lateness, 0.99)).padStart(8)}, makespan ${s(r.makespanMs).padStart(8)}, ` +
          `${cpuPerCallMs(r).toFixed(1)} ms CPU/call, ${mean(r.histories.events).toFixed(0)} events/call, ${mean(r.histories.slotSignals).toFixed(2)} slot signals/call, ${r.histories.taskTimeouts} task timeouts`,
      );
    }
    out(
      `\nissue 27's targets (sizes: floor ${FLOOR}, on time ${ONTIME} at ceiling ${ONTIME_CEILING}, flat ${FLAT_SMALL} / ${FLAT_BIG} at ceiling ${FLAT_CEILING}, ` +
        `live calls ${LIVE_RATE}/s, ${voice ? `${VOICE_CALLS} browser calls, ` : ''}${CALL_SECONDS} s calls; load average ${loadAtStart[0].toFixed(1)} at the start, ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} now)`,
    );
    for (const t of targets) out(`  ${verdictWord(t.verdict)}  ${t.scenario.padEnd(24)} ${t.goal}: ${t.shown}`);
  } finally {
    await voice?.beside.end();
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
