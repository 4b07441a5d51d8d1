// The cost of the rate limiter on an authenticated GET (GET /api/v1/get-contact/{phone_number}):
// requests per second and p99 latency with the limiter off, on with the Redis store and on
// with the in-process store, measured in one run, interleaved round by round so that drift
// of a shared machine hits every mode alike, and printed as ratios against "off".
//
// A fourth mode, roundTrip, splits the Redis figure: the same middleware, batching and
// script call with the same keys and arguments, but a script that counts nothing (it
// admits every check without touching a key). Its cost is what the round trip to Redis
// costs before any counting; the gap from it to "redis" is the counting itself.
//
//   npx tsx bench/rateLimit.ts       (starts its own embedded Postgres and redis-server)
//   DATABASE_URL=postgres://... REDIS_URL=redis://... npx tsx bench/rateLimit.ts
//
// Knobs (environment): BENCH_ROUNDS (default 20), BENCH_REQUESTS per round and mode (default
// 600), BENCH_CONCURRENCY (default 16), BENCH_KEYS (API keys, one team each; default 2000),
// BENCH_IPS (client addresses sent as X-Forwarded-For; default 8192), BENCH_MODES (a comma-
// separated subset of off,redis,memory,roundTrip, e.g. to profile one).
//
// The limits are the defaults (docs/rate-limits.md), and requests rotate over enough keys and client
// addresses that none is rejected (a 429 is cheaper than a 200 and would flatter the
// limiter; the run fails on any non-200): every request does the full work, its five
// buckets (IP, IP and endpoint, token and endpoint, key, team) checked in Redis, and each
// bucket holds what it would under real traffic, up to its limit.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { Config } from '../src/config/index.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { upsertContactByPhone } from '../src/db/repositories/contacts.js';
import { openRedis } from '../src/infrastructure.js';
import { createLogger } from '../src/logging/logger.js';
import { createRateLimiter } from '../src/rateLimit/limiter.js';
import { RedisRateLimitStore } from '../src/rateLimit/redisStore.js';
import { startApi, type RunningApi } from '../src/server.js';
import { RedisServer } from '../test/support/redisServer.js';
import { insertTeamWithKey } from './support/api.js';
import { API_BENCH_SETTINGS, benchConfig, openBenchDatabase, undialledTemporalClient, runBenchmark } from './support/environment.js';
import { median } from './support/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 600);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const KEYS = Number(process.env.BENCH_KEYS ?? 2000);
const IPS = Number(process.env.BENCH_IPS ?? 8192);

type Mode = 'off' | 'redis' | 'memory' | 'roundTrip';
const MODES: Mode[] = (process.env.BENCH_MODES?.split(',') as Mode[] | undefined) ?? ['off', 'redis', 'memory', 'roundTrip'];
const usesRedis = (mode: Mode) => mode === 'redis' || mode === 'roundTrip';

// Reads the consume script's ARGV (see src/rateLimit/redisStore.ts) only to shape its reply:
// every check admitted, each bucket at limit - 1. No redis.call, so no key is read or written.
const ADMIT_ALL_SCRIPT = `
local a, results = 3, {}
for r = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[a + 2])
  local result = {1}
  for i = 1, n do result[i + 1] = tonumber(ARGV[a + 4 + i]) - 1 end
  results[r] = result
  a = a + 5 + n
end
return results
`;

/** The Redis store with its script swapped for ADMIT_ALL_SCRIPT: the bare cost of the round trip. */
class RoundTripOnlyStore extends RedisRateLimitStore {
  private readonly admitAll: (numKeys: number, ...args: (string | number)[]) => Promise<number[][]>;

  constructor(redis: Redis) {
    super(redis);
    redis.defineCommand('benchAdmitAll', { lua: ADMIT_ALL_SCRIPT });
    this.admitAll = (redis as unknown as Record<string, typeof this.admitAll>).benchAdmitAll.bind(redis);
  }

  protected override runScript(keys: string[], args: (string | number)[]): Promise<number[][]> {
    return this.admitAll(keys.length, ...keys, ...args);
  }
}

// The load generator is a child process (plain JS, keep-alive HTTP): the client's work shares
// neither the API's event loop nor its CPU account, so process.cpuUsage() here is the API's.
const LOAD_GENERATOR = `
const http = require('node:http');
const workerData = JSON.parse(require('node:fs').readFileSync(process.env.BENCH_WORKER_DATA, 'utf8'));
const parentPort = { on: (ev, fn) => process.on(ev, fn), postMessage: (m) => process.send(m) };
const agent = new http.Agent({ keepAlive: true, maxSockets: workerData.concurrency });
let seq = 0;
function get(port) {
  const n = seq++;
  const target = workerData.targets[n % workerData.targets.length];
  const a = n % workerData.ips;
  const ip = '10.77.' + ((a >> 8) & 255) + '.' + (a & 255);
  const headers = { Authorization: 'Bearer ' + target.apiKey, 'X-Forwarded-For': ip };
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target.path, method: 'GET', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}
parentPort.on('message', async ({ port, requests }) => {
  let next = 0;
  let failed = 0;
  const latencies = new Float64Array(requests);
  const started = performance.now();
  async function lane() {
    while (next < requests) {
      const i = next++;
      const r = await get(port);
      latencies[i] = r.ms;
      if (r.status !== 200) failed++;
    }
  }
  await Promise.all(Array.from({ length: workerData.concurrency }, lane));
  parentPort.postMessage({ ms: performance.now() - started, failed, latencies: Array.from(latencies) });
});
`;

/** CPU time (µs) used so far by the bench's own redis-server, from /proc (0 when unknown). */
function redisCpuMicros(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / 100) * 1_000_000; // utime + stime, in clock ticks of 1/100 s
  } catch {
    return 0;
  }
}

/** CPU time (µs) the whole machine has spent busy so far (every process and the kernel), from /proc/stat. */
function machineCpuMicros(): number {
  try {
    const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return ((user + nice + system + irq + softirq) / 100) * 1_000_000;
  } catch {
    return 0;
  }
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-rate-limit-'));
  const { url: databaseUrl, embedded } = await openBenchDatabase(tmp);
  const ownRedis = process.env.REDIS_URL ? undefined : await RedisServer.start();
  const redisUrl = process.env.REDIS_URL ?? ownRedis!.url;
  const configFor = (mode: Mode): Config =>
    benchConfig(databaseUrl, {
      ...API_BENCH_SETTINGS,
      REDIS_URL: usesRedis(mode) ? redisUrl : '',
      TRUST_PROXY: 'true',
      RATE_LIMITS_ENABLED: mode === 'off' ? 'false' : 'true',
    });
  const base = configFor('off');
  const pool = createPool(databaseUrl, base.DATABASE_POOL_SIZE);
  // get-contact never reaches Temporal.
  const temporal = undialledTemporalClient();
  const logger = createLogger('silent');
  const redis = openRedis(configFor('redis'), logger)!;
  const connections = [redis];
  const apis: Partial<Record<Mode, RunningApi>> = {};
  let worker: ChildProcess | undefined;
  try {
    await migrate(pool);
    const targets: { apiKey: string; path: string }[] = [];
    for (let i = 0; i < KEYS; i++) {
      const team = await insertTeamWithKey(pool, `bench ${i}`);
      const phone = `+1415555${String(1000 + i).padStart(4, '0')}`;
      await upsertContactByPhone(pool, team.id, { phone_number: phone, first_name: 'Bench', last_name: `Mark ${i}` });
      targets.push({ apiKey: team.key, path: `/api/v1/get-contact/${encodeURIComponent(phone)}` });
    }
    for (const mode of MODES) {
      const config = configFor(mode);
      // Each Redis mode has its own connection, so neither waits behind the other's replies.
      const modeRedis = usesRedis(mode) ? openRedis(config, logger)! : undefined;
      if (modeRedis) connections.push(modeRedis);
      const rateLimiter =
        mode === 'roundTrip' ? createRateLimiter({ config, redis: modeRedis, logger }, { redisStore: new RoundTripOnlyStore(modeRedis!) }) : undefined;
      apis[mode] = await startApi({ config, pool, temporal, logger, redis: modeRedis, rateLimiter, port: 0 });
    }
    const portOf = (mode: Mode) => (apis[mode]!.server.address() as AddressInfo).port;

    // Thousands of targets do not fit in one environment variable: a file carries them.
    const workerData = path.join(tmp, 'load-generator.json');
    writeFileSync(workerData, JSON.stringify({ targets, concurrency: CONCURRENCY, ips: IPS }));
    worker = spawn(process.execPath, ['-e', LOAD_GENERATOR], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, BENCH_WORKER_DATA: workerData } });
    const redisPid = ownRedis?.pid;
    // Script calls and their time inside Redis (INFO commandstats), read around each run of a Redis mode.
    const scriptStats = async () => {
      const lines = (await redis.info('commandstats')).split('\n').filter((l) => /^cmdstat_(evalsha|eval|zrem):/.test(l));
      const sum = (re: RegExp) => lines.reduce((n, l) => n + Number(re.exec(l)?.[1] ?? 0), 0);
      return { calls: sum(/calls=(\d+)/), usec: sum(/usec=(\d+)/) };
    };
    const run = async (mode: Mode, requests: number) => {
      const script = usesRedis(mode) ? await scriptStats() : undefined;
      const cpu = process.cpuUsage();
      const redisCpu = redisCpuMicros(redisPid);
      const machineCpu = machineCpuMicros();
      const r = await new Promise<{ ms: number; failed: number; latencies: number[] }>((resolve) => {
        worker!.once('message', resolve as (m: unknown) => void);
        worker!.send({ port: portOf(mode), requests });
      });
      const used = process.cpuUsage(cpu);
      const measured = {
        ...r,
        latencies: Float64Array.from(r.latencies),
        apiCpu: used.user + used.system,
        redisCpu: redisCpuMicros(redisPid) - redisCpu,
        machineCpu: machineCpuMicros() - machineCpu,
      };
      const scriptAfter = script ? await scriptStats() : undefined;
      return { ...measured, scriptCalls: scriptAfter ? scriptAfter.calls - script!.calls : 0, scriptUsec: scriptAfter ? scriptAfter.usec - script!.usec : 0 };
    };

    process.stdout.write(
      `GET /api/v1/get-contact/{phone_number}, ${ROUNDS} rounds x ${REQUESTS} requests per mode, concurrency ${CONCURRENCY}, ` +
        `${KEYS} keys, ${IPS} client IPs, ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded Postgres'}, ` +
        `${process.env.REDIS_URL ? 'REDIS_URL' : 'local redis-server'}, ${os.cpus().length} CPUs\n`,
    );
    // Warm-up: JIT, connection pools, the Lua script cache.
    for (const mode of MODES) await run(mode, Math.min(500, REQUESTS));

    type Totals = { ms: number; n: number; apiCpu: number; redisCpu: number; machineCpu: number; scriptCalls: number; scriptUsec: number; latencies: Float64Array[]; rps: number[] };
    const totals = Object.fromEntries(
      MODES.map((m) => [m, { ms: 0, n: 0, apiCpu: 0, redisCpu: 0, machineCpu: 0, scriptCalls: 0, scriptUsec: 0, latencies: [], rps: [] }]),
    ) as unknown as Record<Mode, Totals>;
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate which mode goes first so none always runs on a warmer (or busier) machine.
      const order = MODES.map((_, i) => MODES[(i + round) % MODES.length]);
      const line: string[] = [];
      for (const mode of order) {
        const r = await run(mode, REQUESTS);
        if (r.failed) throw new Error(`${mode}: ${r.failed} requests did not answer 200`);
        const t = totals[mode];
        t.ms += r.ms;
        t.n += REQUESTS;
        t.apiCpu += r.apiCpu;
        t.redisCpu += r.redisCpu;
        t.machineCpu += r.machineCpu;
        t.scriptCalls += r.scriptCalls;
        t.scriptUsec += r.scriptUsec;
        t.latencies.push(r.latencies);
        t.rps.push((REQUESTS / r.ms) * 1000);
        line.push(`${mode} ${Math.round((REQUESTS / r.ms) * 1000)} req/s p99 ${percentile(r.latencies.slice().sort(), 99).toFixed(1)} ms`);
      }
      process.stdout.write(`  round ${String(round + 1).padStart(2)}: ${line.join(' | ')}\n`);
    }

    if (!MODES.includes('off')) return;
    const summary = Object.fromEntries(
      MODES.map((mode) => {
        const t = totals[mode];
        const all = new Float64Array(t.latencies.reduce((n, l) => n + l.length, 0));
        let offset = 0;
        for (const l of t.latencies) {
          all.set(l, offset);
          offset += l.length;
        }
        all.sort();
        return [mode, { rps: (t.n / t.ms) * 1000, p50: percentile(all, 50), p99: percentile(all, 99), apiCpu: t.apiCpu / t.n, redisCpu: t.redisCpu / t.n, machineCpu: t.machineCpu / t.n }];
      }),
    ) as Record<Mode, { rps: number; p50: number; p99: number; apiCpu: number; redisCpu: number; machineCpu: number }>;
    const off = summary.off;
    const describe = (mode: Mode) => {
      const s = summary[mode];
      return `${s.rps.toFixed(0)} req/s, p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, CPU per request: API ${s.apiCpu.toFixed(0)} µs` +
        (usesRedis(mode) ? ` + redis-server ${s.redisCpu.toFixed(0)} µs` : '') +
        `, whole machine ${s.machineCpu.toFixed(0)} µs`;
    };
    process.stdout.write(`limiter off:           ${describe('off')}\n`);
    const pairedRatio: Partial<Record<Mode, number>> = {};
    for (const mode of (['redis', 'memory', 'roundTrip'] as const).filter((m) => MODES.includes(m))) {
      const s = summary[mode];
      // Paired by round: drift of a shared machine between rounds cancels out.
      pairedRatio[mode] = median(totals[mode].rps.map((rps, i) => rps / totals.off.rps[i]));
      const cpuRatio = (s.apiCpu + s.redisCpu) / off.apiCpu;
      process.stdout.write(
        `limiter on, ${mode.padEnd(9)}  ${describe(mode)}\n` +
          `  on/off ratios: throughput ${(s.rps / off.rps).toFixed(3)} overall, ${pairedRatio[mode]!.toFixed(3)} median of rounds; ` +
          `p99 ${(s.p99 / off.p99).toFixed(3)}; CPU per request ${cpuRatio.toFixed(3)} (API + redis-server), ${(s.machineCpu / off.machineCpu).toFixed(3)} (whole machine)\n`,
      );
    }
    for (const mode of MODES.filter(usesRedis)) {
      const t = totals[mode];
      process.stdout.write(`${mode}: ${(t.scriptCalls / t.n).toFixed(2)} script calls per request, ${(t.scriptUsec / Math.max(1, t.scriptCalls)).toFixed(1)} µs each inside Redis\n`);
    }
    if (!MODES.includes('redis')) return;
    const redisCost = 1 - pairedRatio.redis!;
    process.stdout.write(
      `target: the Redis limiter costs under 15% of throughput (median of rounds): ${redisCost < 0.15 ? 'met' : 'NOT met'} (${(redisCost * 100).toFixed(1)}%)\n`,
    );
    if (pairedRatio.roundTrip !== undefined) {
      const roundTripCost = 1 - pairedRatio.roundTrip;
      process.stdout.write(
        `of which: middleware, batching and the round trip ${(roundTripCost * 100).toFixed(1)}% (roundTrip mode), ` +
          `counting in Redis ${((redisCost - roundTripCost) * 100).toFixed(1)} points\n`,
      );
    }
  } finally {
    worker?.kill();
    for (const api of Object.values(apis)) await api?.close();
    for (const connection of connections) connection.disconnect();
    await pool.end();
    await embedded?.stop();
    await ownRedis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
