// Contacts and lists at scale, through the real API (docs/benchmarks.md):
//
//  1. POST /api/v1/lists/{id}/contacts with 1, 10, 100 and 500 contacts: the number of SQL
//     statements per request (the same whatever the count: no statement per contact) and
//     the median time of a 500-contact request (new numbers, and numbers the team already
//     has, half of them already in the list).
//  2. GET /api/v1/get-contact/{phone_number} in a team of 1,000 contacts and in a team of
//     1,000,000: the ratio of the two medians (flat = an index lookup, not a scan), with
//     the query plan.
//
//   npx tsx bench/contacts.ts            (starts its own embedded Postgres in a temp folder)
//   DATABASE_URL=postgres://... npx tsx bench/contacts.ts
//
// Knobs (environment): BENCH_ADD_RUNS (default 30) 500-contact requests per kind,
// BENCH_BIG_TEAM (default 1000000) contacts in the big team, BENCH_GET_ROUNDS (default 10)
// rounds of BENCH_GET_CHUNK (default 200) lookups per team, alternating teams so that the
// load of a shared machine hits both alike. Rate limits are off.
import { rmSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { wakeListBatches } from '../src/services/batches.js';
import { addToList } from '../src/services/lists.js';
import { insertTeamWithKey, jsonRequester, startBenchApi, type BenchApi } from './support/api.js';
import { API_BENCH_SETTINGS, benchConfig, benchTempDir, openBenchDatabase, undialledTemporalClient, runBenchmark } from './support/environment.js';
import { median, quantile } from './support/stats.js';

const ADD_RUNS = Number(process.env.BENCH_ADD_RUNS ?? 30);
const BIG_TEAM = Number(process.env.BENCH_BIG_TEAM ?? 1_000_000);
const SMALL_TEAM = 1_000;
const GET_ROUNDS = Number(process.env.BENCH_GET_ROUNDS ?? 10);
const GET_CHUNK = Number(process.env.BENCH_GET_CHUNK ?? 200);

// Every statement any pg client sends (pool.query goes through a client too).
let statements = 0;
const clientQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements += 1;
  return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pg.Client.prototype.query;


/** Numbers for list additions: block b (0-7999), n-th number (0-999); 628 is a San Francisco area code. */
const phone = (block: number, n: number) => `+1628${2_000_000 + block * 1000 + n}`;
/** Numbers of the lookup teams: the n-th (0-999999) of area code 415. */
const lookupPhone = (n: number) => `+1415${2_000_000 + n}`;

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-contacts-');
  const { url: databaseUrl, embedded } = await openBenchDatabase(tmp);
  const config = benchConfig(databaseUrl, API_BENCH_SETTINGS);
  const pool = createPool(databaseUrl, config.DATABASE_POOL_SIZE);
  // These endpoints never reach Temporal.
  const temporal = undialledTemporalClient();
  let served: BenchApi | undefined;
  try {
    await migrate(pool);
    const newTeam = (name: string) => insertTeamWithKey(pool, name);
    served = await startBenchApi(config, pool, temporal);
    const request = jsonRequester(served.base);
    process.stdout.write(`${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)}, ${embedded ? 'embedded Postgres' : 'DATABASE_URL'}\n\n`);

    // ------------------------------------------------------------ 1. add to list
    const adder = await newTeam('bench adder');
    const newList = async () => (await request(adder.key, 'POST', '/api/v1/lists', { name: 'bench' })).list_id as string;
    let block = 0;
    const contactsOf = (count: number, b: number, offset = 0) => Array.from({ length: count }, (_, i) => ({ phone_number: phone(b, offset + i), first_name: 'Bench', last_name: `N${i}` }));
    // Warm-up: JIT, pool connections, plans.
    for (let i = 0; i < 3; i++) await request(adder.key, 'POST', `/api/v1/lists/${await newList()}/contacts`, { contacts: contactsOf(500, block++) });

    process.stdout.write('POST /api/v1/lists/{id}/contacts: SQL statements per request (auth included)\n');
    const perCount: [number, number][] = [];
    for (const count of [1, 10, 100, 500]) {
      const listId = await newList();
      const before = statements;
      await request(adder.key, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: contactsOf(count, block++) });
      perCount.push([count, statements - before]);
      process.stdout.write(`  ${String(count).padStart(3)} contacts: ${statements - before} statements\n`);
    }
    const fixed = new Set(perCount.map(([, n]) => n)).size === 1;
    process.stdout.write(`  fixed whatever the count: ${fixed ? 'yes' : 'NO'}\n\n`);

    const timesNew: number[] = [];
    const timesExisting: number[] = [];
    const timesDb: number[] = [];
    for (let run = 0; run < ADD_RUNS; run++) {
      // 500 new numbers to a fresh list.
      const listId = await newList();
      const b = block++;
      let started = performance.now();
      const fresh = await request(adder.key, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: contactsOf(500, b) });
      timesNew.push(performance.now() - started);
      if (fresh.newContactsCount !== 500 || fresh.totalContactsAdded !== 500) throw new Error('unexpected counts');
      // The same 500 numbers (existing contacts) to a list that already has half of them.
      const other = await newList();
      await request(adder.key, 'POST', `/api/v1/lists/${other}/contacts`, { contacts: contactsOf(250, b) });
      started = performance.now();
      const again = await request(adder.key, 'POST', `/api/v1/lists/${other}/contacts`, { contacts: contactsOf(500, b) });
      timesExisting.push(performance.now() - started);
      if (again.existingContactsCount !== 500 || again.alreadyInListCount !== 250) throw new Error('unexpected counts');
      // The database part alone: the service call the route makes, numbers already E.164.
      const direct = await newList();
      const contacts = contactsOf(500, block++);
      started = performance.now();
      await addToList({ pool, contactsAdded: wakeListBatches({ pool, temporal }) }, adder.id, direct, { contacts });
      timesDb.push(performance.now() - started);
    }
    process.stdout.write(`500 contacts per request, ${ADD_RUNS} requests each, end to end through HTTP:\n`);
    process.stdout.write(`  new numbers:                          median ${median(timesNew).toFixed(1)} ms, p90 ${quantile(timesNew, 0.9).toFixed(1)} ms\n`);
    process.stdout.write(`  existing numbers, half already listed: median ${median(timesExisting).toFixed(1)} ms, p90 ${quantile(timesExisting, 0.9).toFixed(1)} ms\n`);
    process.stdout.write(`  of which the database (addToList, new numbers): median ${median(timesDb).toFixed(1)} ms, p90 ${quantile(timesDb, 0.9).toFixed(1)} ms\n`);
    process.stdout.write(`  under 100 ms median: ${median(timesNew) < 100 && median(timesExisting) < 100 ? 'yes' : 'NO'}\n\n`);

    // ------------------------------------------------------------ 2. get by phone
    const small = await newTeam('bench small');
    const big = await newTeam('bench big');
    const fill = async (teamId: string, count: number) => {
      const started = performance.now();
      for (let from = 0; from < count; from += 200_000) {
        const n = Math.min(200_000, count - from);
        await pool.query(
          `INSERT INTO contacts (team_id, phone_number, first_name, last_name)
           SELECT $1, '+1415' || (2000000 + g)::text, 'Bench', 'C' || g
           FROM generate_series($2::int, $2::int + $3::int - 1) g`,
          [teamId, from, n],
        );
      }
      return performance.now() - started;
    };
    const smallMs = await fill(small.id, SMALL_TEAM);
    const bigMs = await fill(big.id, BIG_TEAM);
    await pool.query('ANALYZE contacts');
    process.stdout.write(`GET /api/v1/get-contact/{phone}: teams of ${SMALL_TEAM} and ${BIG_TEAM} contacts (filled in ${(smallMs / 1000).toFixed(1)} s and ${(bigMs / 1000).toFixed(1)} s)\n`);
    const plan = await pool.query(`EXPLAIN SELECT * FROM contacts WHERE team_id = $1 AND phone_number = $2`, [big.id, lookupPhone(12345)]);
    process.stdout.write(`  plan: ${plan.rows.map((r) => r['QUERY PLAN'].trim()).join(' / ')}\n`);

    const lookup = async (team: { key: string }, size: number, chunk: number, out: number[]) => {
      for (let i = 0; i < chunk; i++) {
        const n = Math.floor(Math.random() * size);
        const started = performance.now();
        const res = await request(team.key, 'GET', `/api/v1/get-contact/${encodeURIComponent(lookupPhone(n))}`);
        out.push(performance.now() - started);
        if (res.contact.phone_number !== lookupPhone(n)) throw new Error('wrong contact');
      }
    };
    const warm: number[] = [];
    await lookup(small, SMALL_TEAM, 200, warm);
    await lookup(big, BIG_TEAM, 200, warm);
    const smallTimes: number[] = [];
    const bigTimes: number[] = [];
    for (let round = 0; round < GET_ROUNDS; round++) {
      const order = round % 2 === 0 ? ([small, big] as const) : ([big, small] as const);
      for (const team of order) await lookup(team, team === small ? SMALL_TEAM : BIG_TEAM, GET_CHUNK, team === small ? smallTimes : bigTimes);
    }
    const ms = median(smallTimes);
    const mb = median(bigTimes);
    process.stdout.write(`  ${SMALL_TEAM} contacts: median ${(ms * 1000).toFixed(0)} µs (p90 ${(quantile(smallTimes, 0.9) * 1000).toFixed(0)} µs), ${smallTimes.length} lookups\n`);
    process.stdout.write(`  ${BIG_TEAM} contacts: median ${(mb * 1000).toFixed(0)} µs (p90 ${(quantile(bigTimes, 0.9) * 1000).toFixed(0)} µs), ${bigTimes.length} lookups\n`);
    process.stdout.write(`  ratio of medians (big / small): ${(mb / ms).toFixed(2)}\n`);
  } finally {
    await served?.api.close();
    await pool.end();
    await embedded?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
