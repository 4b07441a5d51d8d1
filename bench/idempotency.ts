// The cost of the Idempotency-Key header on POST /api/v1/create-contact: throughput with
// a fresh key on every request against throughput without the header, in one run.
//
//   npx tsx bench/idempotency.ts            (starts its own embedded Postgres)
//   DATABASE_URL=postgres://... npx tsx bench/idempotency.ts
//
// The two modes alternate in short chunks (pairs), so that the load of a shared machine,
// which changes over seconds, hits both alike; the headline is the median of the pairs'
// throughput ratios. With its own Postgres it also reports CPU per request (the API's
// main thread plus every Postgres process), which contention on the machine distorts far
// less than wall-clock time: its ratio is what the header costs once the service is
// CPU-bound.
//
// Knobs (environment): BENCH_PAIRS (default 20), BENCH_CHUNK requests per chunk (default
// 200), BENCH_CONCURRENCY (default 16), BENCH_SYNCHRONOUS_COMMIT for the embedded Postgres
// (default on: every commit waits for its WAL flush, as a durable server does).
// Rate limits are off: they would cap the request rate, and they cost the same either way.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { insertTeamWithKey, startBenchApi, type BenchApi } from './support/api.js';
import { API_BENCH_SETTINGS, benchConfig, benchTempDir, openBenchDatabase, startBenchPostgres, undialledTemporalClient, runBenchmark } from './support/environment.js';
import { startLoadThread, type LoadThread } from './support/loadThread.js';
import { median } from './support/stats.js';

const PAIRS = Number(process.env.BENCH_PAIRS ?? 20);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const SYNCHRONOUS_COMMIT = process.env.BENCH_SYNCHRONOUS_COMMIT ?? 'on';

// One create-contact request of the load generator's thread, answered 201 when created.
const CREATE_CONTACT_REQUEST = `
let seq = workerData.firstNumber;
function phone() {
  const n = seq++;
  return '+1212' + String(200 + Math.floor(n / 10000)) + String(n % 10000).padStart(4, '0');
}
function request({ withKey, run }) {
  const body = JSON.stringify({ phone_number: phone(), first_name: 'Bench', last_name: 'Mark', email: 'bench@example.com' });
  const headers = { Authorization: 'Bearer ' + workerData.apiKey, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
  if (withKey) headers['Idempotency-Key'] = 'bench-' + run + '-' + seq;
  return post('/api/v1/create-contact', headers, body);
}
`;

/** utime + stime (clock ticks) of /proc/<path>/stat, 0 when it is gone. */
function cpuTicks(statPath: string): { ppid: number; ticks: number } {
  try {
    const fields = readFileSync(statPath, 'utf8').split(') ')[1].split(' ');
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return { ppid: -1, ticks: 0 };
  }
}

/** CPU ticks of the postmaster and all its children (the backends serving the API). */
function postgresTicks(postmasterPid: number): number {
  let total = cpuTicks(`/proc/${postmasterPid}/stat`).ticks;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = cpuTicks(`/proc/${entry}/stat`);
    if (stat.ppid === postmasterPid) total += stat.ticks;
  }
  return total;
}

/** CPU ticks of this process's main thread (the API), not the load generator's thread. */
const apiThreadTicks = () => cpuTicks(`/proc/self/task/${process.pid}/stat`).ticks;

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-idempotency-');
  const { url: databaseUrl, embedded } = await openBenchDatabase(tmp, (dir) => startBenchPostgres(dir, [`synchronous_commit=${SYNCHRONOUS_COMMIT}`]));
  const config = benchConfig(databaseUrl, API_BENCH_SETTINGS);
  const pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE);
  // create-contact never reaches Temporal.
  const temporal = undialledTemporalClient();
  let load: LoadThread | undefined;
  let served: BenchApi | undefined;
  try {
    await migrate(pool);
    const team = await insertTeamWithKey(pool, 'bench');
    served = await startBenchApi(config, pool, temporal);
    const thread = startLoadThread(CREATE_CONTACT_REQUEST, 201, { port: served.port, apiKey: team.key, concurrency: CONCURRENCY, firstNumber: 0 });
    load = thread;
    const run = (withKey: boolean, requests: number, round: number) => thread.run({ withKey, requests, run: round });

    const pgPid = embedded?.pid;
    process.stdout.write(
      `create-contact, ${PAIRS} pairs of ${CHUNK}-request chunks, concurrency ${CONCURRENCY}, ` +
        `${embedded ? `embedded Postgres (synchronous_commit=${SYNCHRONOUS_COMMIT})` : 'DATABASE_URL'}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}\n`,
    );
    // Warm-up: JIT, connection pool, caches.
    await run(false, 300, -1);
    await run(true, 300, -1);

    type Totals = { ms: number; n: number; apiTicks: number; pgTicks: number };
    const total: Record<'without' | 'with', Totals> = {
      without: { ms: 0, n: 0, apiTicks: 0, pgTicks: 0 },
      with: { ms: 0, n: 0, apiTicks: 0, pgTicks: 0 },
    };
    const pairRatios: number[] = [];
    for (let pair = 0; pair < PAIRS; pair++) {
      // Alternate which mode goes first so neither always runs on a warmer (or busier) machine.
      const order = pair % 2 === 0 ? [false, true] : [true, false];
      const rate: Record<string, number> = {};
      for (const withKey of order) {
        const pgBefore = pgPid ? postgresTicks(pgPid) : 0;
        const apiBefore = apiThreadTicks();
        const r = await run(withKey, CHUNK, pair);
        const apiAfter = apiThreadTicks();
        const pgAfter = pgPid ? postgresTicks(pgPid) : 0;
        if (r.failed) throw new Error(`${r.failed} requests did not answer 201`);
        const t = total[withKey ? 'with' : 'without'];
        t.ms += r.ms;
        t.n += CHUNK;
        t.apiTicks += apiAfter - apiBefore;
        t.pgTicks += pgAfter - pgBefore;
        rate[withKey ? 'with' : 'without'] = (CHUNK / r.ms) * 1000;
      }
      pairRatios.push(rate.with / rate.without);
      process.stdout.write(`  pair ${String(pair + 1).padStart(2)}: without ${rate.without.toFixed(0).padStart(5)} req/s, with key ${rate.with.toFixed(0).padStart(5)} req/s, ratio ${(rate.with / rate.without).toFixed(2)}\n`);
    }
    const throughput = (t: Totals) => (t.n / t.ms) * 1000;
    const tickMs = 10; // USER_HZ is 100 on Linux
    const cpuPerRequest = (t: Totals) => ((t.apiTicks + t.pgTicks) * tickMs) / t.n;
    const ratio = median(pairRatios);
    process.stdout.write(`without Idempotency-Key: ${throughput(total.without).toFixed(0)} req/s overall\n`);
    process.stdout.write(`with Idempotency-Key:    ${throughput(total.with).toFixed(0)} req/s overall\n`);
    process.stdout.write(`throughput ratio with/without (median of ${PAIRS} pairs): ${ratio.toFixed(3)} (cost ${((1 - ratio) * 100).toFixed(1)}%, target under 20%)\n`);
    if (pgPid) {
      const cpuWithout = cpuPerRequest(total.without);
      const cpuWith = cpuPerRequest(total.with);
      process.stdout.write(
        `CPU per request (API thread + Postgres): without ${cpuWithout.toFixed(3)} ms ` +
          `(API ${((total.without.apiTicks * tickMs) / total.without.n).toFixed(3)}, Postgres ${((total.without.pgTicks * tickMs) / total.without.n).toFixed(3)}), ` +
          `with ${cpuWith.toFixed(3)} ms (API ${((total.with.apiTicks * tickMs) / total.with.n).toFixed(3)}, Postgres ${((total.with.pgTicks * tickMs) / total.with.n).toFixed(3)})\n`,
      );
      process.stdout.write(`CPU-bound throughput ratio with/without: ${(cpuWithout / cpuWith).toFixed(3)} (cost ${((1 - cpuWithout / cpuWith) * 100).toFixed(1)}%)\n`);
    }
  } finally {
    await load?.terminate();
    await served?.api.close();
    await pool.end();
    await embedded?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
