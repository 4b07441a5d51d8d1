// Calls at scale, through the real API (docs/benchmarks.md). Not a timed test: it prints figures.
//
//  1. POST /api/v1/create-phone-call throughput end to end: each request upserts the
//     contact, writes the call row and starts its workflow `call-<id>` on a Temporal dev
//     server (no worker runs, so the calls stay scheduled). Calls per second at a few
//     concurrency levels, with latency quantiles; then every row is checked to have its
//     workflow started.
//  2. GET /api/v1/calls page latency in a team of 100,000 calls: the first page and a page
//     deep inside (about the 90,000th call), printed as the ratio of the two medians (flat
//     = keyset paging; OFFSET would grow with the depth), with the query plan.
//
//   npx tsx bench/calls.ts        (starts its own embedded Postgres and Temporal dev server)
//   DATABASE_URL=postgres://... TEMPORAL_ADDRESS=host:7233 npx tsx bench/calls.ts
//
// Knobs (environment): BENCH_CREATE_CALLS (default 400) calls per concurrency level,
// BENCH_CONCURRENCY (default "1,8,32"), BENCH_BIG_TEAM (default 100000) calls in the
// paging team, BENCH_PAGE_ROUNDS (default 15) rounds of 10 requests per page, alternating
// first and deep pages. Rate limits are off.
import { rmSync } from 'node:fs';
import os from 'node:os';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { addPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { encodeCursor } from '../src/domain/cursor.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { callWorkflowId } from '../workflows/contracts.js';
import { insertTeamWithKey, jsonRequester, startBenchApi, type BenchApi } from './support/api.js';
import { API_BENCH_SETTINGS, benchConfig, benchTempDir, connectBenchTemporal, openBenchDatabase, runBenchmark } from './support/environment.js';
import { median, quantile } from './support/stats.js';

const CREATE_CALLS = Number(process.env.BENCH_CREATE_CALLS ?? 400);
const CONCURRENCY = (process.env.BENCH_CONCURRENCY ?? '1,8,32').split(',').map(Number);
const BIG_TEAM = Number(process.env.BENCH_BIG_TEAM ?? 100_000);
const PAGE_ROUNDS = Number(process.env.BENCH_PAGE_ROUNDS ?? 15);
const TASK_QUEUE = 'bench-calls-no-worker';

const ms = (v: number) => `${v.toFixed(1)} ms`;

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-calls-');
  const { url: databaseUrl, embedded } = await openBenchDatabase(tmp);
  const server = await connectBenchTemporal();
  const { client: temporal, env } = server;
  const config = benchConfig(databaseUrl, { ...API_BENCH_SETTINGS, TEMPORAL_TASK_QUEUE: TASK_QUEUE });
  const pool = createPool(databaseUrl, 20);
  let served: BenchApi | undefined;
  try {
    await migrate(pool);
    const newTeam = async (name: string) => {
      const team = await insertTeamWithKey(pool, name);
      const script = await insertScript(pool, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
      const number = await addPhoneNumber(pool, team.id, '+12125550100');
      return { id: team.id, key: team.key, scriptId: script.id, from: number.phone_number };
    };
    served = await startBenchApi(config, pool, temporal);
    const request = jsonRequester(served.base);
    process.stdout.write(
      `${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}, ${embedded ? 'embedded Postgres' : 'DATABASE_URL'}, ${env ? 'Temporal dev server (in memory)' : 'TEMPORAL_ADDRESS'}\n\n`,
    );

    // ------------------------------------------------------------ 1. create-phone-call
    const caller = await newTeam('bench caller');
    let seq = 0;
    const createOne = async () => {
      const n = seq++;
      const started = performance.now();
      const json = await request(caller.key, 'POST', '/api/v1/create-phone-call', {
        from_number: caller.from,
        script_id: caller.scriptId,
        contact: { phone_number: `+1628${2_000_000 + n}`, first_name: 'Bench', last_name: `N${n}` },
        // An hour ahead: nothing would dial even if a worker were there.
        scheduled_time: new Date(Date.now() + 3600_000).toISOString(),
      });
      return { ms: performance.now() - started, callId: json.call_id as string };
    };
    for (let i = 0; i < 20; i++) await createOne(); // warm-up: JIT, pool connections, plans
    process.stdout.write('POST /api/v1/create-phone-call end to end (contact upserted, row written, workflow started)\n');
    const created: string[] = [];
    for (const concurrency of CONCURRENCY) {
      const latencies: number[] = [];
      let next = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < CREATE_CALLS) {
            next += 1;
            const r = await createOne();
            latencies.push(r.ms);
            created.push(r.callId);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      process.stdout.write(
        `  concurrency ${String(concurrency).padStart(2)}: ${(CREATE_CALLS / seconds).toFixed(0).padStart(4)} calls/s   p50 ${ms(median(latencies))}   p95 ${ms(quantile(latencies, 0.95))}   p99 ${ms(quantile(latencies, 0.99))}\n`,
      );
    }
    const { rows: unstarted } = await pool.query('SELECT count(*)::int AS n FROM calls WHERE id = ANY($1::uuid[]) AND workflow_started_at IS NULL', [created]);
    const sample = created.filter((_, i) => i % Math.max(1, Math.floor(created.length / 20)) === 0);
    const described = await Promise.all(sample.map((id) => temporal.workflow.getHandle(callWorkflowId(id)).describe()));
    process.stdout.write(
      `  ${created.length} calls: ${unstarted[0].n} rows without a started workflow; ${described.filter((d) => d.status.name === 'RUNNING').length}/${sample.length} sampled workflows running\n\n`,
    );

    // ------------------------------------------------------------ 2. paging
    const pager = await newTeam('bench pager');
    const { call_id: seedCall } = await request(pager.key, 'POST', '/api/v1/create-phone-call', {
      from_number: pager.from,
      script_id: pager.scriptId,
      contact: { phone_number: '+16282999999', first_name: 'Seed' },
      scheduled_time: new Date(Date.now() + 3600_000).toISOString(),
    });
    const { rows: seedRows } = await pool.query('SELECT contact_id FROM calls WHERE id = $1', [seedCall]);
    const loadStarted = performance.now();
    // 100,000 calls over about a day, ten sharing each timestamp.
    for (let offset = 0; offset < BIG_TEAM; offset += 20_000) {
      await pool.query(
        `INSERT INTO calls (id, team_id, contact_id, script_id, type, from_number, to_number, scheduled_time, status, progress,
                            end_reason, duration, created_at, workflow_started_at)
         SELECT gen_random_uuid(), $1, $2, $3, 'outbound', $4, '+16282999999', ts, 'completed', 'done', 'agent_hangup', 3, ts, ts
           FROM (SELECT timestamptz '2026-01-01T00:00:00Z' + ((g / 10) * interval '1 second') AS ts
                   FROM generate_series($5::int, $6::int) AS g) AS t`,
        [pager.id, seedRows[0].contact_id, pager.scriptId, pager.from, offset, Math.min(offset + 20_000, BIG_TEAM) - 1],
      );
    }
    await pool.query('ANALYZE calls');
    process.stdout.write(`GET /api/v1/calls in a team of ${BIG_TEAM.toLocaleString('en')} calls (loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s)\n`);
    const depth = Math.floor(BIG_TEAM * 0.9);
    const { rows: deepRows } = await pool.query(
      `SELECT (extract(epoch FROM created_at) * 1000000)::bigint::text AS us, seq FROM calls WHERE team_id = $1
        ORDER BY created_at DESC, seq DESC OFFSET $2 LIMIT 1`,
      [pager.id, depth],
    );
    const deepCursor = encodeCursor(BigInt(deepRows[0].us), deepRows[0].seq);
    const firstPath = '/api/v1/calls?limit=100';
    const deepPath = `/api/v1/calls?limit=100&cursor=${encodeURIComponent(deepCursor)}`;
    const check = await request(pager.key, 'GET', deepPath);
    if (check.calls.length !== 100 || check.meta.total !== BIG_TEAM + 1) throw new Error(`unexpected deep page: ${check.calls.length} calls, total ${check.meta.total}`);
    for (let i = 0; i < 10; i++) {
      await request(pager.key, 'GET', firstPath);
      await request(pager.key, 'GET', deepPath);
    }
    const first: number[] = [];
    const deep: number[] = [];
    for (let round = 0; round < PAGE_ROUNDS; round++) {
      for (const [p, into] of [
        [firstPath, first],
        [deepPath, deep],
      ] as const) {
        for (let i = 0; i < 10; i++) {
          const started = performance.now();
          await request(pager.key, 'GET', p);
          into.push(performance.now() - started);
        }
      }
    }
    process.stdout.write(`  first page (100 calls):                 median ${ms(median(first))}   p95 ${ms(quantile(first, 0.95))}\n`);
    process.stdout.write(`  page after call ${depth.toLocaleString('en')} (100 calls):   median ${ms(median(deep))}   p95 ${ms(quantile(deep, 0.95))}\n`);
    const ratio = median(deep) / median(first);
    process.stdout.write(`  deep / first ratio: ${ratio.toFixed(2)} (target under 1.5: ${ratio < 1.5 ? 'met' : 'NOT met'})\n`);
    const plan = await pool.query(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
       SELECT * FROM calls WHERE team_id = $1 AND (created_at, seq) < ($2::timestamptz, $3::bigint) ORDER BY created_at DESC, seq DESC LIMIT 101`,
      [pager.id, new Date(Number(BigInt(deepRows[0].us) / 1000n)).toISOString(), deepRows[0].seq],
    );
    process.stdout.write(`  plan of the deep page:\n${plan.rows.map((r) => `    ${r['QUERY PLAN']}`).join('\n')}\n`);
  } finally {
    await served?.api.close();
    await pool.end();
    await server.close();
    await embedded?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
