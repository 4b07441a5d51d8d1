// Event webhooks (docs/event-webhooks.md), measured in one run against a Temporal dev server
// with the service's two workers (its task queue and the webhook queue) in this process and
// the receivers on a thread of their own (their own event loop, like a remote receiver):
//
// 1. Latency: a call's terminal status (the completeCall activity, whose transaction records
//    call.ended) → the receipt of call.ended by a fast receiver; p50 and p99 of
//    BENCH_LATENCY_EVENTS calls ended at BENCH_RATE per second. Also what recording the event
//    costs completeCall itself: its duration for a team with an endpoint and for one without,
//    alternating; and the terminal write alone, nothing delivered: the row's one statement
//    against the transaction that also records the event (no subscriber, one subscriber).
// 2. Throughput: BENCH_THROUGHPUT_EVENTS events recorded as fast as BENCH_CONCURRENCY lanes
//    allow, to one fast receiver: deliveries per second, first event to last receipt.
// 3. Isolation: the same terminal-status → receipt latency of a healthy endpoint, in two
//    teams whose second endpoint answers at once and in one whose second endpoint never
//    answers (every attempt to it hangs for the full 10 s, then is retried), so all make the
//    same deliveries per event; BENCH_ISOLATION_ROUNDS rounds of BENCH_ISOLATION_EVENTS calls
//    per team at BENCH_ISOLATION_RATE (default half of BENCH_RATE), the teams taking turns;
//    the ratio of the p99s, and the same ratio between the two answering teams (the noise).
//
//   npx tsx bench/webhooks.ts       (starts its own embedded Postgres and Temporal dev server)
//   DATABASE_URL=postgres://... TEMPORAL_ADDRESS=host:7233 npx tsx bench/webhooks.ts
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import os from 'node:os';
import { Worker as Thread } from 'node:worker_threads';
import { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, withTransaction, type Pool } from '../src/db/pool.js';
import { completeCall as completeCallRow, insertCall, markCallInProgress } from '../src/db/repositories/calls.js';
import { upsertContactByPhone } from '../src/db/repositories/contacts.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { insertTeam } from '../src/db/repositories/teams.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { createLogger } from '../src/logging/logger.js';
import { createWebhookEndpoint } from '../src/services/webhookEndpoints.js';
import { callEvent, hookRunFailedEvent, recordWebhookEvents, withWebhookEvents } from '../src/services/webhookEvents.js';
import { createWebhookWorker, createWorker } from '../src/temporal/worker.js';
import { benchConfig, benchTempDir, connectBenchTemporal, openBenchDatabase, runBenchmark, startBenchPostgres } from './support/environment.js';
import { median, out, quantile } from './support/stats.js';

const RATE = Number(process.env.BENCH_RATE ?? 10);
// Each isolation event makes two deliveries.
const ISOLATION_RATE = Number(process.env.BENCH_ISOLATION_RATE ?? RATE / 2);
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 300);
const THROUGHPUT_EVENTS = Number(process.env.BENCH_THROUGHPUT_EVENTS ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ISOLATION_ROUNDS = Number(process.env.BENCH_ISOLATION_ROUNDS ?? 10);
const ISOLATION_EVENTS = Number(process.env.BENCH_ISOLATION_EVENTS ?? 30);
const TRANSACTION_SAMPLES = Number(process.env.BENCH_TRANSACTION_SAMPLES ?? 200);
/** Which parts run: any of latency, throughput, isolation (comma-separated). */
const PARTS = new Set((process.env.BENCH_PARTS ?? 'latency,throughput,isolation').split(',').map((p) => p.trim()));
const TASK_QUEUE = 'bench-webhooks';

/** Wall-clock milliseconds with sub-millisecond precision, comparable across threads. */
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

interface Receipt {
  server: 'fast' | 'other' | 'hang';
  id: string;
  callId: string | null;
  at: number;
}

/** Three receivers on their own thread: `fast` and `other` answer 200 at once, `hang` never answers. */
function startReceivers(): Promise<{ fast: number; other: number; hang: number; onReceipt(fn: (r: Receipt) => void): void; stop(): Promise<number> }> {
  const source = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
function serve(name) {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = performance.timeOrigin + performance.now();
      let body = {};
      try { body = JSON.parse(Buffer.concat(chunks).toString()); } catch {}
      parentPort.postMessage({ kind: 'receipt', server: name, id: body.id, callId: body.data && body.data.call ? body.data.call.id : null, at });
      if (name !== 'hang') { res.writeHead(200); res.end('ok'); }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}
Promise.all([serve('fast'), serve('other'), serve('hang')]).then(([fast, other, hang]) => parentPort.postMessage({ kind: 'listening', fast, other, hang }));
`;
  const thread = new Thread(source, { eval: true });
  const listeners: ((r: Receipt) => void)[] = [];
  return new Promise((resolve) => {
    thread.on('message', (m: { kind: string } & Receipt & { fast: number; other: number; hang: number }) => {
      if (m.kind === 'receipt') for (const fn of listeners) fn(m);
      else resolve({ fast: m.fast, other: m.other, hang: m.hang, onReceipt: (fn) => listeners.push(fn), stop: () => thread.terminate() });
    });
  });
}

interface BenchTeam {
  id: string;
  scriptId: string;
  contactId: string;
}

async function newTeam(pool: Pool, name: string): Promise<BenchTeam> {
  const team = await insertTeam(pool, { name, maxConcurrent: 10_000 });
  const script = await insertScript(pool, { teamId: team.id, name: 'bench', definition: DEMO_SCRIPT });
  const { contact } = await upsertContactByPhone(pool, team.id, { phone_number: '+14155550123', first_name: 'Bench' });
  return { id: team.id, scriptId: script.id, contactId: contact.id };
}

/** A call already in progress (written directly: no events), ready to be ended. */
async function openCall(pool: Pool, team: BenchTeam): Promise<string> {
  const id = randomUUID();
  await insertCall(pool, {
    id,
    teamId: team.id,
    contactId: team.contactId,
    scriptId: team.scriptId,
    type: 'outbound',
    fromNumber: '+14155550100',
    toNumber: '+14155550123',
    scheduledTime: new Date(),
    progress: 'dialling',
  });
  await markCallInProgress(pool, id, new Date(), 'in_conversation');
  return id;
}

async function main(): Promise<void> {
  const dir = benchTempDir('bench-webhooks-');
  const database = await openBenchDatabase(dir, (d) => startBenchPostgres(d, ['max_connections=100']));
  const pool = createPool(database.url, 20);
  await migrate(pool);
  const temporal = await connectBenchTemporal();
  const config = benchConfig(database.url, { TEMPORAL_TASK_QUEUE: TASK_QUEUE, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
  const deps = { config, pool, logger: createLogger('silent'), temporal: temporal.client };
  const connection = temporal.env?.nativeConnection ?? (await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! }));
  const queue = { connection, namespace: config.TEMPORAL_NAMESPACE, taskQueue: TASK_QUEUE, deps };
  const workers = [await createWorker(queue), await createWebhookWorker(queue)];
  const runs = workers.map((w) => w.run());
  const activities = createActivities(deps);
  const receivers = await startReceivers();
  out(
    `event webhooks, ${database.embedded ? 'embedded Postgres' : 'DATABASE_URL'}, ${temporal.env ? 'Temporal dev server' : 'TEMPORAL_ADDRESS'}, ` +
      `${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}`,
  );

  // Receipts of the fast receiver by event id; waiters by call id.
  const waiting = new Map<string, (at: number) => void>();
  let fastReceipts = 0;
  let hangReceipts = 0;
  let onFast: (() => void) | undefined;
  receivers.onReceipt((r) => {
    if (r.server === 'hang') hangReceipts += 1;
    if (r.server !== 'fast') return;
    fastReceipts += 1;
    onFast?.();
    if (r.callId) waiting.get(r.callId)?.(r.at);
  });
  const fastUrl = `http://127.0.0.1:${receivers.fast}/hooks`;
  const otherUrl = `http://127.0.0.1:${receivers.other}/hooks`;
  const hangUrl = `http://127.0.0.1:${receivers.hang}/hooks`;
  const subscribe = (team: BenchTeam, url: string, events?: ('call.ended' | 'hook_run.failed')[]) => createWebhookEndpoint(deps, { teamId: team.id, url, events });

  /**
   * Ends the calls at `rate` per second (open loop), in the order given; for each call whose
   * team has an endpoint, the time from just before its completeCall to the receipt of its
   * call.ended; for every call, how long completeCall took (by whether an endpoint waits).
   */
  async function endCalls(calls: { callId: string; subscribed: boolean }[], rate = RATE): Promise<{ latency: number[]; complete: number[]; completeQuiet: number[] }> {
    const latency: number[] = [];
    const complete: number[] = [];
    const completeQuiet: number[] = [];
    const started = now();
    await Promise.all(
      calls.map(async ({ callId, subscribed }, i) => {
        await sleep(started + (i * 1000) / rate - now());
        const received = subscribed ? new Promise<number>((resolve) => waiting.set(callId, resolve)) : undefined;
        const t0 = now();
        await activities.completeCall({ callId, status: 'completed', endReason: 'agent_hangup', endTime: new Date().toISOString() });
        (subscribed ? complete : completeQuiet).push(now() - t0);
        if (!received) return;
        const timeout = sleep(60_000).then(() => NaN);
        latency.push((await Promise.race([received, timeout])) - t0);
        waiting.delete(callId);
      }),
    );
    const lost = latency.filter(Number.isNaN).length;
    if (lost) throw new Error(`${lost} call.ended never arrived within 60 s`);
    return { latency, complete, completeQuiet };
  }

  const openCalls = async (team: BenchTeam, n: number) =>
    (await Promise.all(Array.from({ length: n }, () => openCall(pool, team)))).map((callId) => ({ callId, subscribed: true }));

  // Warm-up: bundles, first workflow tasks, connections.
  const warm = await newTeam(pool, 'warm-up');
  await subscribe(warm, fastUrl, ['call.ended']);
  await endCalls(await openCalls(warm, 20));

  if (PARTS.has('latency')) {
    // 1. Latency, and what recording the event adds to completeCall.
    out(`# 1. terminal status → receipt of call.ended: ${LATENCY_EVENTS} calls, alternating with as many of a team without endpoints, ${RATE} calls/s`);
    const subscribed = await newTeam(pool, 'latency');
    await subscribe(subscribed, fastUrl, ['call.ended']);
    const quiet = await newTeam(pool, 'no endpoints');
    // Alternating, so both kinds of call see the same background load (deliveries in flight).
    const subscribedCalls = await openCalls(subscribed, LATENCY_EVENTS);
    const quietCalls = (await openCalls(quiet, LATENCY_EVENTS)).map((c) => ({ ...c, subscribed: false }));
    const measured = await endCalls(subscribedCalls.flatMap((c, i) => [c, quietCalls[i]]));
    const withEndpoint = { latency: measured.latency, complete: measured.complete };
    const withoutEndpoint = { complete: measured.completeQuiet };
    out(`latency: p50 ${fmt(quantile(withEndpoint.latency, 0.5))}, p99 ${fmt(quantile(withEndpoint.latency, 0.99))}, max ${fmt(Math.max(...withEndpoint.latency))} (targets: p50 ≤ 250 ms, p99 ≤ 1000 ms)`);
    out(
      `completeCall activity: median ${fmt(median(withEndpoint.complete))} with an endpoint, ${fmt(median(withoutEndpoint.complete))} without` +
        ` (ratio ${(median(withEndpoint.complete) / median(withoutEndpoint.complete)).toFixed(2)})`,
    );

    // 1b. The change's own transaction, nothing delivered (the rows are left undispatched).
    const rowCalls = await openCalls(quiet, TRANSACTION_SAMPLES);
    const plainCalls = await openCalls(quiet, TRANSACTION_SAMPLES);
    const recordedCalls = await openCalls(subscribed, TRANSACTION_SAMPLES);
    const outcome = { status: 'completed', endReason: 'agent_hangup', progress: 'analysing' };
    const rowOnly: number[] = [];
    const noSubscriber: number[] = [];
    const oneSubscriber: number[] = [];
    const inTransaction = (callId: string) =>
      withTransaction(pool, async (tx) => {
        const { call } = await completeCallRow(tx, callId, { ...outcome, endTime: new Date() });
        await recordWebhookEvents(tx, [callEvent('call.ended', call)]);
      });
    for (let i = 0; i < TRANSACTION_SAMPLES; i++) {
      let t0 = now();
      await completeCallRow(pool, rowCalls[i].callId, { ...outcome, endTime: new Date() });
      rowOnly.push(now() - t0);
      t0 = now();
      await inTransaction(plainCalls[i].callId);
      noSubscriber.push(now() - t0);
      t0 = now();
      await inTransaction(recordedCalls[i].callId);
      oneSubscriber.push(now() - t0);
    }
    out(
      `the terminal write, median of ${TRANSACTION_SAMPLES}: the row alone (one statement) ${fmt(median(rowOnly))}; ` +
        `with the event, no endpoint subscribed ${fmt(median(noSubscriber))} (×${(median(noSubscriber) / median(rowOnly)).toFixed(2)}); ` +
        `one endpoint subscribed ${fmt(median(oneSubscriber))} (×${(median(oneSubscriber) / median(rowOnly)).toFixed(2)})`,
    );
  }

  if (PARTS.has('throughput')) {
    // 2. Throughput to one fast receiver.
    out(`# 2. throughput: ${THROUGHPUT_EVENTS} events, ${CONCURRENCY} lanes recording them`);
    const busy = await newTeam(pool, 'throughput');
    await subscribe(busy, fastUrl, ['hook_run.failed']);
    const target = fastReceipts + THROUGHPUT_EVENTS;
    const allReceived = new Promise<void>((resolve) => {
      onFast = () => {
        if (fastReceipts >= target) resolve();
      };
    });
    const throughputStart = now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < THROUGHPUT_EVENTS) {
          next += 1;
          const event = hookRunFailedEvent({ runId: randomUUID(), hookId: randomUUID(), teamId: busy.id, error: 'bench' });
          await withWebhookEvents(deps, async () => ({ result: undefined, events: [event] }));
        }
      }),
    );
    const recordedMs = now() - throughputStart;
    await allReceived;
    onFast = undefined;
    const throughputMs = now() - throughputStart;
    out(`recorded in ${fmt(recordedMs)} (${((THROUGHPUT_EVENTS / recordedMs) * 1000).toFixed(0)} events/s); all received after ${fmt(throughputMs)}: ${((THROUGHPUT_EVENTS / throughputMs) * 1000).toFixed(1)} deliveries/s`);
  }

  if (PARTS.has('isolation')) {
    // 3. Isolation. Every team sends each event to the healthy endpoint and to a second one, so
    // all make the same deliveries; the second answers at once in two teams (the second of
    // them is the control: its ratio to the first is this machine's noise) and never in one.
    out(`# 3. isolation: ${ISOLATION_ROUNDS} rounds × ${ISOLATION_EVENTS} calls per mode at ${ISOLATION_RATE}/s, two deliveries each`);
    const modes = [
      { name: 'the other endpoint answering', url: otherUrl, samples: [] as number[] },
      { name: 'the other endpoint answering (control)', url: otherUrl, samples: [] as number[] },
      { name: 'the other endpoint never answering', url: hangUrl, samples: [] as number[] },
    ];
    const teams = [];
    for (const mode of modes) {
      const team = await newTeam(pool, mode.name);
      await subscribe(team, fastUrl, ['call.ended']);
      await subscribe(team, mode.url, ['call.ended']);
      teams.push(team);
    }
    for (let round = 0; round < ISOLATION_ROUNDS; round++) {
      // Each round starts with another mode, so none always follows the same one.
      for (let k = 0; k < modes.length; k++) {
        const m = (round + k) % modes.length;
        modes[m].samples.push(...(await endCalls(await openCalls(teams[m], ISOLATION_EVENTS), ISOLATION_RATE)).latency);
      }
    }
    for (const mode of modes) out(`healthy endpoint, ${mode.name}: p50 ${fmt(quantile(mode.samples, 0.5))}, p95 ${fmt(quantile(mode.samples, 0.95))}, p99 ${fmt(quantile(mode.samples, 0.99))}`);
    const [answering, control, dead] = modes.map((m) => quantile(m.samples, 0.99));
    out(`the dead endpoint received ${hangReceipts} requests, none answered`);
    out(`p99 ratio, never answering / answering: ${(dead / answering).toFixed(3)} (target ≤ 1.10); control / answering: ${(control / answering).toFixed(3)}`);
  }

  for (const w of workers) w.shutdown();
  await Promise.race([Promise.all(runs), sleep(15_000)]);
  await receivers.stop();
  await pool.end();
  await temporal.close();
  await database.embedded?.stop();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

runBenchmark(main);
