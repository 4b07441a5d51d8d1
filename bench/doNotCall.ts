// The do-not-call check of create-phone-call (docs/calls.md, "The do-not-call list"; figures
// in docs/benchmarks.md): its cost with 1,000,000 list entries against 1,000 (target: a
// ratio of at most 1.1). Two databases on one Postgres, identical but for the size of the
// do_not_call table, each with its own API; measured in rounds that alternate the two:
//
//  1. the check itself, as create-phone-call runs it (assertNotOnDoNotCall: one probe of the
//     primary key (team_id, phone_number)), for numbers on the list and numbers not on it;
//  2. POST /api/v1/create-phone-call end to end (check, contact upsert, call row, workflow
//     start on a Temporal dev server without a worker), for numbers not on the list, and
//     the 409 of numbers on it.
//
//   npx tsx bench/doNotCall.ts
//
// Knobs: BENCH_BIG (1000000) and BENCH_SMALL (1000) entries, BENCH_ROUNDS (10), BENCH_CHECKS
// (500 checks per round and database), BENCH_REQUESTS (40 create-phone-call per round and database).
import os from 'node:os';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { addPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { assertNotOnDoNotCall } from '../src/services/doNotCall.js';
import { insertTeamWithKey, startBenchApi, type BenchApi } from './support/api.js';
import { API_BENCH_SETTINGS, benchConfig, benchTempDir, connectBenchTemporal, runBenchmark, startBenchPostgres } from './support/environment.js';
import { median, out } from './support/stats.js';

const BIG = Number(process.env.BENCH_BIG ?? 1_000_000);
const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 500);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 40);
const TASK_QUEUE = 'bench-dnc-no-worker';

interface Side {
  name: string;
  entries: number;
  pool: Pool;
  api: BenchApi;
  team: { id: string; key: string; scriptId: string; from: string };
  /** µs per check, per round: listed numbers, unlisted numbers. */
  listed: number[];
  unlisted: number[];
  /** ms per request, every request: create-phone-call 201, and the 409 of listed numbers. */
  created: number[];
  refused: number[];
}

/** The listed number i of the team's list (E.164, area code 628). */
const listedNumber = (i: number) => `+1628${String(1_000_000 + i).padStart(7, '0')}`;
/** Numbers never listed (area code 629). */
let fresh = 0;
const unlistedNumber = () => `+1629${String(1_000_000 + (fresh += 1)).padStart(7, '0')}`;

async function prepare(name: string, url: string, entries: number, temporal: Parameters<typeof startBenchApi>[2]): Promise<Side> {
  const pool = createPool(url, 10);
  await migrate(pool);
  const t = await insertTeamWithKey(pool, `dnc ${name}`);
  const script = await insertScript(pool, { teamId: t.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  const from = (await addPhoneNumber(pool, t.id, '+12125550100')).phone_number;
  const started = performance.now();
  // One statement per 100,000 entries, as an import would write them.
  for (let offset = 0; offset < entries; offset += 100_000) {
    await pool.query(
      `INSERT INTO do_not_call (team_id, phone_number, source, reason)
       SELECT $1, '+1628' || lpad((1000000 + g)::text, 7, '0'), 'api', 'bench' FROM generate_series($2::int, $3::int) g`,
      [t.id, offset, Math.min(entries, offset + 100_000) - 1],
    );
  }
  await pool.query('VACUUM ANALYZE do_not_call');
  const { rows } = await pool.query<{ size: string }>(`SELECT pg_size_pretty(pg_relation_size('do_not_call_pkey')) AS size`);
  out(`  ${name}: ${entries.toLocaleString('en-US')} entries written in ${((performance.now() - started) / 1000).toFixed(1)} s; primary key index ${rows[0].size}`);
  const config = benchConfig(url, { ...API_BENCH_SETTINGS, TEMPORAL_TASK_QUEUE: TASK_QUEUE });
  const api = await startBenchApi(config, pool, temporal);
  return { name, entries, pool, api, team: { id: t.id, key: t.key, scriptId: script.id, from }, listed: [], unlisted: [], created: [], refused: [] };
}

/** µs per check over `n` checks of the given numbers. */
async function timeChecks(side: Side, numbers: string[]): Promise<number> {
  const started = performance.now();
  for (const n of numbers) {
    try {
      await assertNotOnDoNotCall(side.pool, side.team.id, n);
    } catch {
      // listed: the conflict is the answer
    }
  }
  return ((performance.now() - started) * 1000) / numbers.length;
}

async function createCall(side: Side, phone: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await fetch(`${side.api.base}/api/v1/create-phone-call`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${side.team.key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ from_number: side.team.from, script_id: side.team.scriptId, contact: { phone_number: phone } }),
  });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - started };
}

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-dnc-');
  const pg = await startBenchPostgres(tmp);
  const server = await connectBenchTemporal();
  const admin = createPool(pg.url, 2);
  const sides: Side[] = [];
  try {
    await admin.query('CREATE DATABASE bench_small');
    const small = pg.url.replace(/\/bench$/, '/bench_small');
    out(`Do-not-call check: ${BIG.toLocaleString('en-US')} against ${SMALL.toLocaleString('en-US')} entries, ${ROUNDS} alternating rounds; ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    sides.push(await prepare('big', pg.url, BIG, server.client));
    sides.push(await prepare('small', small, SMALL, server.client));
    // Warm both: caches, prepared plans, connections.
    for (const side of sides) {
      await timeChecks(side, Array.from({ length: 200 }, (_, i) => listedNumber((i * 7919) % side.entries)));
      await createCall(side, unlistedNumber());
    }
    for (let round = 0; round < ROUNDS; round += 1) {
      // Alternate which side goes first, so drift in the machine's load falls on both.
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const listed = Array.from({ length: CHECKS }, () => listedNumber(Math.floor(Math.random() * side.entries)));
        const unlisted = Array.from({ length: CHECKS }, () => unlistedNumber());
        side.listed.push(await timeChecks(side, listed));
        side.unlisted.push(await timeChecks(side, unlisted));
        for (let i = 0; i < REQUESTS; i += 1) {
          const created = await createCall(side, unlistedNumber());
          if (created.status !== 201) throw new Error(`create-phone-call answered ${created.status}`);
          side.created.push(created.ms);
          const refused = await createCall(side, listedNumber(Math.floor(Math.random() * side.entries)));
          if (refused.status !== 409) throw new Error(`a listed number answered ${refused.status}`);
          side.refused.push(refused.ms);
        }
      }
    }
    const [big, smallSide] = sides;
    const row = (what: string, b: number[], s: number[], unit: string) =>
      out(`  ${what.padEnd(44)} ${median(b).toFixed(unit === 'µs' ? 0 : 2).padStart(7)} ${unit}  ${median(s).toFixed(unit === 'µs' ? 0 : 2).padStart(7)} ${unit}   ratio ${(median(b) / median(s)).toFixed(3)}`);
    out('');
    out(`  ${''.padEnd(44)} ${'1M'.padStart(10)} ${'1k'.padStart(10)}`);
    row('the check, number on the list (median/round)', big.listed, smallSide.listed, 'µs');
    row('the check, number not on it (median/round)', big.unlisted, smallSide.unlisted, 'µs');
    row('create-phone-call, 201 (median request)', big.created, smallSide.created, 'ms');
    row('create-phone-call, 409 listed (median request)', big.refused, smallSide.refused, 'ms');
    out(`  load average at the end ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  } finally {
    for (const side of sides) {
      await side.api.api.close();
      await side.pool.end();
    }
    await admin.end();
    await server.close();
    await pg.stop();
  }
}

runBenchmark(main);
