// Batches at scale (docs/benchmarks.md): does the cost of a batch's tick and of reading its progress
// stay flat from 1,000 to 100,000 contacts?
//
//  1. Intake: list members taken in per second (1,000-row pages, one transaction each).
//  2. Steady-state ticks (window full, no call ended): median tick time of a 100,000-contact
//     batch against a 1,000-contact batch, interleaved. Ratio ~1 means the tick costs
//     O(window), not O(contacts).
//  3. Churn ticks: each round ends CHURN calls of each batch (as the call engine would),
//     then ticks, which records them done and hands out CHURN new calls (scheduleCall and a
//     workflow start each). Median tick time, both batches, and per call handed out.
//  4. Progress: the counters (batch_counts) against counting batch_contacts with GROUP BY,
//     on the 100,000-contact batch.
//
//   npx tsx bench/batches.ts   (starts its own embedded Postgres and Temporal dev server)
//   DATABASE_URL=postgres://... TEMPORAL_ADDRESS=host:7233 npx tsx bench/batches.ts
//
// No worker polls the task queue: the batch and call workflows are started but never run;
// the bench drives the ticks itself (advanceBatch, exactly what the activity runs) and ends
// calls by updating their rows. Knobs: BENCH_BIG (100000), BENCH_SMALL (1000),
// BENCH_TICKS (40) steady ticks per batch, BENCH_CHURN_ROUNDS (20), BENCH_CHURN (5),
// BENCH_CEILING (10) team ceiling (window = ceiling × BATCH_WINDOW_FACTOR = 20).
import { rmSync } from 'node:fs';
import os from 'node:os';
import { migrate } from '../src/db/migrate.js';
import { createPool, withTransaction, type Pool } from '../src/db/pool.js';
import { batchCounts, intakeListMembers } from '../src/db/repositories/batches.js';
import { addContactsToList, insertList } from '../src/db/repositories/lists.js';
import { addPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { insertTeam } from '../src/db/repositories/teams.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { advanceBatch, batchCallId } from '../src/services/batchEngine.js';
import { createBatch, showBatch, type BatchServiceDeps } from '../src/services/batches.js';
import { benchConfig, benchTempDir, connectBenchTemporal, openBenchDatabase, runBenchmark } from './support/environment.js';
import { median, out } from './support/stats.js';

const BIG = Number(process.env.BENCH_BIG ?? 100_000);
const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
const TICKS = Number(process.env.BENCH_TICKS ?? 40);
const CHURN_ROUNDS = Number(process.env.BENCH_CHURN_ROUNDS ?? 20);
const CHURN = Number(process.env.BENCH_CHURN ?? 5);
const CEILING = Number(process.env.BENCH_CEILING ?? 10);

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

interface Subject {
  label: string;
  size: number;
  teamId: string;
  batchId: string;
}

/** A team with a list of `size` new contacts and a batch over it (its workflow never runs). */
async function subject(deps: BatchServiceDeps, label: string, size: number, block: number): Promise<Subject> {
  const pool = deps.pool;
  const team = await insertTeam(pool, { name: `bench ${label}`, maxConcurrent: CEILING });
  const script = await insertScript(pool, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  const from = `+1628${5_000_000 + block}`;
  await addPhoneNumber(pool, team.id, from);
  const list = await insertList(pool, team.id, label);
  for (let i = 0; i < size; i += 5000) {
    const chunk = Array.from({ length: Math.min(5000, size - i) }, (_, j) => ({ phone_number: `+1415${2_000_000 + i + j}` }));
    await withTransaction(pool, (tx) => addContactsToList(tx, team.id, list.id, chunk));
  }
  // Starts scheduled far ahead, so the first real tick below decides when it runs.
  const batch = await createBatch(deps, { teamId: team.id, listId: list.id, scriptId: script.id, fromNumber: from, startAt: new Date(Date.now() + 86_400_000) });
  return { label, size, teamId: team.id, batchId: batch.id };
}

/** Ends `n` of the batch's calls that are still scheduled, as the call engine would. */
async function endCalls(pool: Pool, s: Subject, n: number): Promise<void> {
  await pool.query(
    `UPDATE calls SET status = 'completed', end_reason = 'agent_hangup', end_time = now(), progress = 'done'
      WHERE id IN (SELECT c.id FROM batch_contacts bc JOIN calls c ON c.id = bc.call_id
                    WHERE bc.batch_id = $1 AND bc.state = 'calling' AND c.status = 'scheduled' LIMIT $2)`,
    [s.batchId, n],
  );
}

async function main(): Promise<void> {
  const tmp = benchTempDir('bench-batches-');
  const { url: databaseUrl, embedded } = await openBenchDatabase(tmp);
  const server = await connectBenchTemporal();
  const { client: temporal, env } = server;
  const config = benchConfig(databaseUrl, { TEMPORAL_TASK_QUEUE: 'bench-batches-idle' });
  const pool = createPool(databaseUrl, 10);
  const deps: BatchServiceDeps = { pool, temporal, config };
  try {
    await migrate(pool);
    out(`bench/batches: ${embedded ? 'embedded Postgres' : 'DATABASE_URL'}, ${env ? 'Temporal dev server' : 'TEMPORAL_ADDRESS'}, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)}`);
    out(`window ${CEILING * config.BATCH_WINDOW_FACTOR} calls (ceiling ${CEILING} × BATCH_WINDOW_FACTOR ${config.BATCH_WINDOW_FACTOR})\n`);
    const small = await subject(deps, 'small', SMALL, 1);
    const big = await subject(deps, 'big', BIG, 2);

    // 1. Intake of the big list, page by page, as the tick does it.
    let taken = 0;
    const t0 = process.hrtime.bigint();
    for (;;) {
      const page = await withTransaction(pool, (tx) => intakeListMembers(tx, big.batchId, 1000, (c) => batchCallId(big.batchId, c)));
      taken += page.added;
      if (page.caughtUp) break;
    }
    const intakeMs = ms(t0);
    out(`1. intake: ${taken} members in ${(intakeMs / 1000).toFixed(2)} s = ${Math.round(taken / (intakeMs / 1000))} members/s (${(intakeMs / (taken / 1000)).toFixed(1)} ms per 1,000-row page)`);

    // First ticks: start, take in the small list, fill both windows.
    for (const s of [small, big]) await advanceBatch(deps, s.batchId, { start: true });

    // 2. Steady state: nothing ended, window full.
    const steady: Record<string, number[]> = { small: [], big: [] };
    for (let i = 0; i < TICKS; i += 1) {
      for (const s of i % 2 ? [big, small] : [small, big]) {
        const t = process.hrtime.bigint();
        await advanceBatch(deps, s.batchId, { start: true });
        steady[s.label].push(ms(t));
      }
    }
    const steadyRatio = median(steady.big) / median(steady.small);
    out(`2. steady tick (window full): ${SMALL} contacts ${median(steady.small).toFixed(2)} ms, ${BIG} contacts ${median(steady.big).toFixed(2)} ms, ratio ${steadyRatio.toFixed(2)}`);

    // 3. Churn: CHURN calls end, the tick records them and hands out CHURN more.
    const churn: Record<string, number[]> = { small: [], big: [] };
    let handedOut = 0;
    for (let i = 0; i < CHURN_ROUNDS; i += 1) {
      for (const s of i % 2 ? [big, small] : [small, big]) {
        await endCalls(pool, s, CHURN);
        const t = process.hrtime.bigint();
        const tick = await advanceBatch(deps, s.batchId, { start: true });
        churn[s.label].push(ms(t));
        handedOut += tick.dispatched;
      }
    }
    const churnRatio = median(churn.big) / median(churn.small);
    out(
      `3. churn tick (${CHURN} ended, ${CHURN} handed out): ${SMALL} contacts ${median(churn.small).toFixed(2)} ms, ${BIG} contacts ${median(churn.big).toFixed(2)} ms, ratio ${churnRatio.toFixed(2)}; ` +
        `${(median([...churn.small, ...churn.big]) / CHURN).toFixed(2)} ms per call handed out (${handedOut} calls in all)`,
    );

    // 4. Progress on the big batch: counters against a GROUP BY over its rows.
    const counters: number[] = [];
    const grouped: number[] = [];
    for (let i = 0; i < 30; i += 1) {
      let t = process.hrtime.bigint();
      await showBatch(deps, big.batchId);
      counters.push(ms(t));
      t = process.hrtime.bigint();
      await pool.query(
        `SELECT CASE WHEN state = 'done' THEN 'done:' || call_status ELSE state END AS bucket, count(*) FROM batch_contacts WHERE batch_id = $1 GROUP BY 1`,
        [big.batchId],
      );
      grouped.push(ms(t));
    }
    const view = await showBatch(deps, big.batchId);
    const exact = JSON.stringify(await batchCounts(pool, big.batchId));
    out(
      `4. progress of ${BIG} contacts: counters (batches show) ${median(counters).toFixed(2)} ms, GROUP BY count ${median(grouped).toFixed(2)} ms, ratio ${(median(grouped) / median(counters)).toFixed(1)}` +
        ` (pending ${view.progress.pending}, calling ${view.progress.calling}, done ${view.progress.done_total}; counters ${exact})`,
    );
  } finally {
    await pool.end();
    await server.close();
    await embedded?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runBenchmark(main);
