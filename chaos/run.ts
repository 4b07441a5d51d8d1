// One chaos run (docs/reliability.md): start the service as separate processes, set up a
// team through the public API (and the operator's services for what has no public API: the
// hook, the batch), drive the load for `minutes` while faults drawn from `seed` hit every
// part, let the service settle, check the invariants and print the report.
import { rmSync } from 'node:fs';
import os from 'node:os';
import { Client, Connection } from '@temporalio/client';
import { loadConfig, secretBox } from '../src/config/index.js';
import { createPool, type Pool } from '../src/db/pool.js';
import { addPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { createLogger } from '../src/logging/logger.js';
import { createBatch } from '../src/services/batches.js';
import { createHook } from '../src/services/hooks.js';
import { insertTeamWithKey } from '../bench/support/api.js';
import { benchTempDir } from '../bench/support/environment.js';
import { SpokenAnswers } from './browserCaller.js';
import { Cluster } from './cluster.js';
import { FaultInjector, planFaults, type FaultKind } from './faults.js';
import { checkInvariants, type InvariantResult } from './invariants.js';
import { Ledger } from './ledger.js';
import { ApiClient, Load, type LoadTeam } from './load.js';
import { SeededRandom } from './seededRandom.js';

export interface ChaosOptions {
  minutes: number;
  seed: number;
  /** Browser calls talking at once (default 1). */
  browserCalls?: number;
  /** Keep the temp folder (logs of every part). */
  keep?: boolean;
  /** The longest the whole run may take: recovery and settling waits are cut short to end within it. */
  budgetMs?: number;
  out?: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  held: boolean;
  invariants: InvariantResult[];
  faults: Array<{ kind: FaultKind; count: number; recovered: number; p50Ms?: number; maxMs?: number; restartP50Ms?: number; restartMaxMs?: number }>;
  dir: string;
}

/**
 * The team's concurrency ceiling: low enough that calls wait for slots at times (bursts,
 * outages), high enough that the line drains between them. At 8, the 30-minute run's load
 * (about 1.3 calls a second) against calls stretched to 7-16 s by the faults built a line that
 * only grew: calls ended up to 900 s after due for want of slots, not because of a fault.
 */
const MAX_CONCURRENT = 16;
/** The browser-call team's: a few browser calls and the sessions left to expire. */
const BROWSER_MAX_CONCURRENT = 4;

type CanaryTeam = Pick<LoadTeam, 'key' | 'scriptId' | 'from'>;
/** The longest the run waits, after the load, for every call, session and delivery to settle. */
const SETTLE_MS = 5 * 60_000;
/** Web sessions expire two minutes after minting (docs/web-calls.md). */
const SESSION_LIFETIME_MS = 120_000;

/** A browser call's script: a greeting question answered "yes", then goodbye. */
const VOICE_SCRIPT = {
  name: 'Chaos voice',
  steps: [
    { id: 'ask_time', type: 'ask', question: 'Hello, this is the chaos line. Is this a good time to talk?', variable: 'answers.time', expect: 'yes_no' },
    { id: 'bye', type: 'end', text: 'Thank you. Goodbye.' },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const out = opts.out ?? ((line: string) => process.stdout.write(`${line}\n`));
  const random = new SeededRandom(opts.seed);
  const dir = benchTempDir('chaos-');
  const runStart = Date.now();
  const budgetEnd = runStart + (opts.budgetMs ?? Infinity);
  out(`chaos run: ${opts.minutes} min, seed ${opts.seed} (replay: npm run chaos -- --minutes ${opts.minutes} --seed ${opts.seed}), load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}, parts' logs in ${dir}/logs`);
  const cluster = await Cluster.start(dir);
  // A run stopped from outside (Ctrl-C, a test runner's timeout) leaves no part running.
  const abort = () => {
    cluster.killAll();
    if (!opts.keep) cluster.removeMemoryData();
    process.exit(1);
  };
  const onExit = () => cluster.killAll();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  process.once('exit', onExit);
  let pool: Pool | undefined;
  let connection: Connection | undefined;
  let stopSampling = () => {};
  try {
    pool = createPool(cluster.databaseUrl, 4);
    connection = await Connection.connect({ address: cluster.temporalAddress });
    const temporal = new Client({ connection });
    const ledger = new Ledger();
    const api = new ApiClient(cluster.apiBase, ledger);
    const { team, teamIds, canary } = await setUp(pool, temporal, api, cluster);
    out(`service up: API ${cluster.apiBase}, Temporal ${cluster.temporalAddress}, media edge ws://127.0.0.1:${cluster.edgePort}/ws; teams ${teamIds.join(', ')} (max_concurrent ${MAX_CONCURRENT}, ${BROWSER_MAX_CONCURRENT})`);
    const answers = await SpokenAnswers.prepare(['yes']);

    stopSampling = sampleSlots(pool, teamIds, ledger);
    const loadMs = opts.minutes * 60_000;
    const start = Date.now();
    // A part that cannot start (Temporal unreachable) is retried through the load and the settling.
    cluster.superviseUntil(Math.min(budgetEnd - 120_000, start + loadMs + SETTLE_MS));
    const faults = new FaultInjector(cluster, api, ledger, canary, random, budgetEnd - 120_000);
    const load = new Load(api, ledger, team, random, answers, start + Math.max(15_000, loadMs - SESSION_LIFETIME_MS - 30_000), (d) => faults.browserCallLive(d));
    const plan = planFaults(random, opts.minutes, 15_000, Math.max(20_000, loadMs - 10_000));
    out(`faults planned: ${plan.length} (${plan.map((f) => `${(f.at / 1000).toFixed(0)}s ${f.kind}`).join('; ')})`);
    load.start(3, opts.browserCalls ?? 1);
    const injecting = faults.run(plan, start);
    // Awaited after the load; until then a failed fault must not end the process unhandled.
    injecting.catch(() => {});
    await sleep(loadMs);
    out(`load stopped after ${seconds(Date.now() - start)}; waiting for the faults still under way and the service to settle`);
    await load.stop();
    await injecting;
    const settledIn = await settle(pool, teamIds, Math.min(SETTLE_MS, budgetEnd - 60_000 - Date.now()));
    stopSampling();
    out(`settled ${settledIn === undefined ? 'NOT within the time left' : `in ${seconds(settledIn)}`} after the last fault`);

    const { results } = await checkInvariants(pool, temporal, teamIds, ledger, cluster, faults);
    const report: ChaosReport = { seed: opts.seed, held: results.every((r) => r.held), invariants: results, faults: faultTable(faults), dir };
    printReport(out, report, opts, Date.now() - start);
    return report;
  } finally {
    process.off('SIGINT', abort);
    process.off('SIGTERM', abort);
    process.off('exit', onExit);
    stopSampling();
    await connection?.close().catch(() => {});
    await pool?.end().catch(() => {});
    await cluster.stop();
    if (!opts.keep) {
      cluster.removeMemoryData();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** The team, its numbers and scripts, the webhook endpoint, the hook, the list and its batch. */
async function setUp(pool: Pool, temporal: Client, api: ApiClient, cluster: Cluster): Promise<{ team: LoadTeam; teamIds: string[]; canary: CanaryTeam }> {
  const { id: teamId, key } = await insertTeamWithKey(pool, 'chaos');
  await pool.query('UPDATE teams SET max_concurrent = $2 WHERE id = $1', [teamId, MAX_CONCURRENT]);
  const script = await insertScript(pool, { teamId, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  const from = (await addPhoneNumber(pool, teamId, '+12125550142')).phone_number;
  // Web sessions and browser calls in a team of their own: the phone load keeps its team at the ceiling.
  const browser = await insertTeamWithKey(pool, 'chaos browser calls');
  await pool.query('UPDATE teams SET max_concurrent = $2 WHERE id = $1', [browser.id, BROWSER_MAX_CONCURRENT]);
  const voiceScript = await insertScript(pool, { teamId: browser.id, name: VOICE_SCRIPT.name, definition: VOICE_SCRIPT });
  // The canaries' team: the recovery they measure is not the load's line for slots.
  const canaryTeam = await insertTeamWithKey(pool, 'chaos canaries');
  const canaryScript = await insertScript(pool, { teamId: canaryTeam.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  const canaryFrom = (await addPhoneNumber(pool, canaryTeam.id, '+12125550143')).phone_number;
  const must = async (what: string, answer: Promise<{ status: number | 'no-answer'; json: any }>) => {
    const a = await answer;
    if (typeof a.status !== 'number' || a.status >= 300) throw new Error(`set-up: ${what} answered ${a.status}: ${JSON.stringify(a.json)}`);
    return a.json;
  };
  for (const k of [key, browser.key]) await must('webhook endpoint', api.request('set-up', 'POST', '/api/v1/webhook-endpoints', { key: k, body: { url: `http://127.0.0.1:${cluster.receiver.port}/events` } }));
  const list = await must('list', api.request('set-up', 'POST', '/api/v1/lists', { key, body: { name: 'chaos batch' } }));
  await must(
    'list contacts',
    api.request('set-up', 'POST', `/api/v1/lists/${list.list_id}/contacts`, { key, body: { contacts: ['+16285550900', '+16285550901', '+16285550001'].map((phone_number) => ({ phone_number, first_name: 'Batch' })) } }),
  );
  const config = loadConfig({ ...cluster.serviceEnv(), LOG_LEVEL: 'silent' });
  const hookSecret = 'chaos-hook-signing-secret-0123456789';
  const hook = await createHook(pool, { teamId, secret: hookSecret, automation: { kind: 'schedule_call', script_id: script.id, from_number: from } }, secretBox(config));
  await createBatch({ pool, temporal, config, logger: createLogger('silent') }, { teamId, listId: list.list_id, scriptId: script.id, fromNumber: from, callingWindow: null });
  return {
    teamIds: [teamId, browser.id],
    team: { key, browserKey: browser.key, scriptId: script.id, voiceScriptId: voiceScript.id, from, listId: list.list_id, hookPath: hook.path, hookSecret },
    canary: { key: canaryTeam.key, scriptId: canaryScript.id, from: canaryFrom },
  };
}

/** Samples the teams' live slots every second against each one's ceiling (skipping samples while Postgres is down). */
function sampleSlots(pool: Pool, teamIds: string[], ledger: Ledger): () => void {
  let stopped = false;
  void (async () => {
    while (!stopped) {
      try {
        const { rows } = await pool.query<{ live: number; ceiling: number }>(
          `SELECT t.max_concurrent AS ceiling,
                  (SELECT count(*)::int FROM concurrency_slots s WHERE s.team_id = t.id AND (
                    (s.kind = 'session' AND s.expires_at > clock_timestamp())
                    OR (s.kind = 'call' AND EXISTS (SELECT 1 FROM calls c WHERE c.id = s.call_id AND c.status IN ('scheduled', 'in-progress'))))) AS live
             FROM teams t WHERE t.id = ANY($1)`,
          [teamIds],
        );
        ledger.slotSamples += 1;
        for (const r of rows) {
          ledger.maxSlots = Math.max(ledger.maxSlots, r.live);
          if (r.live > r.ceiling) ledger.slotOverruns += 1;
        }
      } catch {
        // Postgres restarting: no sample.
      }
      await sleep(1000);
    }
  })();
  return () => {
    stopped = true;
  };
}

/** Waits until no call is open or unanalysed, no session unused, no event delivery pending; the time it took, or undefined. */
async function settle(pool: Pool, teamIds: string[], withinMs: number): Promise<number | undefined> {
  const start = Date.now();
  while (Date.now() - start < withinMs) {
    try {
      const { rows } = await pool.query<{ open: number }>(
        `SELECT (SELECT count(*) FROM calls WHERE team_id = ANY($1) AND (status IN ('scheduled', 'in-progress') OR progress <> 'done'))
              + (SELECT count(*) FROM web_sessions WHERE team_id = ANY($1) AND status = 'minted')
              + (SELECT count(*) FROM webhook_deliveries WHERE team_id = ANY($1) AND status IN ('pending', 'retrying')) AS open`,
        [teamIds],
      );
      if (Number(rows[0].open) === 0) return Date.now() - start;
    } catch {
      // retried
    }
    await sleep(2000);
  }
  return undefined;
}

function faultTable(faults: FaultInjector): ChaosReport['faults'] {
  const kinds = new Map<FaultKind, number[]>();
  const restarts = new Map<FaultKind, number[]>();
  const counts = new Map<FaultKind, number>();
  for (const f of faults.injected) {
    counts.set(f.kind, (counts.get(f.kind) ?? 0) + 1);
    if (f.recoveryMs !== undefined) kinds.set(f.kind, [...(kinds.get(f.kind) ?? []), f.recoveryMs]);
    if (f.restartMs !== undefined) restarts.set(f.kind, [...(restarts.get(f.kind) ?? []), f.restartMs]);
  }
  const p50 = (times: number[]) => times[Math.floor((times.length - 1) / 2)];
  return [...counts].map(([kind, count]) => {
    const times = (kinds.get(kind) ?? []).sort((a, b) => a - b);
    const restartTimes = (restarts.get(kind) ?? []).sort((a, b) => a - b);
    return { kind, count, recovered: times.length, p50Ms: p50(times), maxMs: times.at(-1), restartP50Ms: p50(restartTimes), restartMaxMs: restartTimes.at(-1) };
  });
}

function printReport(out: (line: string) => void, report: ChaosReport, opts: ChaosOptions, ms: number): void {
  out('');
  out(`Faults injected (seed ${report.seed}); recovery = from the part back to the end of a canary call created then (the call itself takes ~3 s); restart = a killed Node part's spawn to its ready line`);
  out('| fault | injected | recovered | recovery p50 | recovery max | restart p50 | restart max |');
  out('|---|---:|---:|---:|---:|---:|---:|');
  for (const f of report.faults) out(`| ${f.kind} | ${f.count} | ${f.recovered} | ${seconds(f.p50Ms)} | ${seconds(f.maxMs)} | ${seconds(f.restartP50Ms)} | ${seconds(f.restartMaxMs)} |`);
  out('');
  out('| invariant | held | checked over |');
  out('|---|---|---|');
  for (const r of report.invariants) out(`| ${r.name} | ${r.held ? 'held' : 'BROKEN'} | ${r.count} |`);
  for (const r of report.invariants.filter((i) => !i.held)) for (const b of r.broken) out(`  ${r.name}: ${b}`);
  out('');
  out(`${report.held ? 'ALL INVARIANTS HELD' : 'INVARIANTS BROKEN'}: ${opts.minutes} min of load, ${seconds(ms)} in all, seed ${report.seed}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}
