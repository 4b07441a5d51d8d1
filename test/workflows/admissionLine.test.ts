// The admission line with the call workflow (docs/calls.md, "Admission"), in the time-skipping
// environment with the real activities over the test database: calls scheduled ahead sleep in
// their workflow until the admission pacer grants them a slot (one slotGranted signal each),
// in line order and no faster than its rate; releases wake the sleeping calls next in line;
// cancel-call ends a sleeping call; a lost wake-up is covered by the call's own timer past its
// due time; the histories replay.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import proto from '@temporalio/proto';
import { Worker as ReplayWorker } from '@temporalio/worker';
import type { Pool } from '../../src/db/pool.js';
import { admissionLineTeams, admitFromLine, countLiveSlots } from '../../src/db/repositories/concurrencySlots.js';
import { LIVE_BACKLOG_LIMIT, startAdmissionPacer, type AdmissionPacer } from '../../src/services/admissionPacer.js';
import { cancelCall, type CallServiceDeps } from '../../src/services/calls.js';
import { createLogger } from '../../src/logging/logger.js';
import { workflowBundle } from '../../src/temporal/worker.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig } from '../support/calls.js';
import { dueTogether as dueTogetherOf, lineOfThisFile as lineOfThisFileOf } from '../support/admissionLine.js';
import { callWorkflowEnv, scheduleSimulatedCall } from '../support/callWorkflowEnv.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Client } from '@temporalio/client';

const { History } = proto.temporal.api.history.v1;
const HISTORIES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'callHistories');
// RECORD_CALL_HISTORIES=1 (or a comma-separated list of names) records this file's histories.
const RECORD = process.env.RECORD_CALL_HISTORIES ?? '';
const SAFETY_NET_S = 3600;

let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: CallServiceDeps;
let plain: Client;
const calls = callWorkflowEnv(callTestConfig({ ADMISSION_SAFETY_NET_SECONDS: String(SAFETY_NET_S), SIMULATOR_CALL_SECONDS: '1' }), (started) => ({ env, pool, deps, plain } = started));
const result = (callId: string) => calls.result(callId, 90_000);

async function record(callId: string, name: string): Promise<void> {
  if (RECORD !== '1' && !RECORD.split(',').includes(name)) return;
  mkdirSync(HISTORIES_DIR, { recursive: true });
  const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
  writeFileSync(path.join(HISTORIES_DIR, `call-${name}.bin`), History.encode(history).finish());
}

async function withPacer<T>(ratePerSecond: number, body: () => Promise<T>): Promise<T> {
  await lineOfThisFile();
  const pacer: AdmissionPacer = startAdmissionPacer({ pool, temporal: env.client }, { ratePerSecond });
  try {
    return await body();
  } finally {
    await pacer.stop();
  }
}

/** The steps of the call's history other than timers. */
const stepsBesideTimers = async (callId: string) => (await calls.steps(callId)).filter((s) => !s.startsWith('timer'));

/**
 * The test database's pool, counting the queries for the admission line's teams (each still
 * runs on Postgres).
 */
function countingLineLooks(real: Pool, counted: () => void): Pool {
  return new Proxy(real, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === 'query') {
        return (...args: unknown[]) => {
          if (typeof args[0] === 'string' && args[0].includes('admission_line_teams')) counted();
          return Reflect.apply(target.query, target, args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const lineOfThisFile = lineOfThisFileOf(() => deps);
const dueTogether = (team: TestTeam, n: number, at: Date) => dueTogetherOf(deps, team, n, at);

describe('admission line', () => {
  test('calls due at once sleep in the line and are admitted in line order, no faster than the rate, each woken by one grant', async () => {
    await lineOfThisFile();
    const team = await createTestTeam(pool, { maxConcurrent: 10 });
    const ids = await dueTogether(team, 5, new Date(Date.now() + 4000));
    const written = await Promise.all(ids.map((id) => callRow(pool, id)));
    assert.deepEqual(written.map((c) => c.wakes_on_grant), Array(5).fill(true), `written at ${written.map((c) => c.created_at.toISOString())}, due ${written[0].scheduled_time.toISOString()}`);
    const outcomes = await withPacer(2, () => Promise.all(ids.map(result)));
    assert.deepEqual(outcomes.map((o) => o.status), Array(5).fill('completed'));
    const granted = await Promise.all(ids.map(async (id) => (await callRow(pool, id)).slot_granted_at!.getTime()));
    for (let i = 1; i < granted.length; i++) assert.ok(granted[i - 1] < granted[i], `granted in line order: ${granted}`);
    // Two a second: five grants span about two seconds, not the few milliseconds of a burst (a
    // bound below, whatever the load; slack for when each step's transaction began).
    assert.ok(granted[4] - granted[0] >= 1000, `five grants over ${granted[4] - granted[0]} ms`);
    for (const id of ids) {
      assert.deepEqual((await stepsBesideTimers(id)).slice(0, 3), ['signal slotGranted', 'admitCall', 'placeCall']);
      assert.deepEqual(await calls.admissions(id), ['started'], 'its slot was held when it asked');
    }
    await record(ids[0], 'admitted-by-the-line');
  });

  test('under a ceiling of 2, four calls due at once start two at a time in line order: the pacer admits two, each release wakes the next', async () => {
    await lineOfThisFile();
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const ids = await dueTogether(team, 4, new Date(Date.now() + 4000));
    const outcomes = await withPacer(20, () => Promise.all(ids.map(result)));
    assert.deepEqual(outcomes.map((o) => o.status), Array(4).fill('completed'));
    const rows = await Promise.all(ids.map((id) => callRow(pool, id)));
    const granted = rows.map((r) => r.slot_granted_at!.getTime());
    // Two releases at once each hand on a slot under the team's lock, in line order; a grant's
    // time is when its transaction began, so the later grant may read a few ms earlier.
    for (let i = 1; i < granted.length; i++) assert.ok(granted[i - 1] <= granted[i] + 250, `granted in line order: ${granted}`);
    assert.ok(Math.min(granted[2], granted[3]) >= Math.max(granted[0], granted[1]), `the first two went first: ${granted}`);
    const edges = rows.flatMap((r) => [
      { t: r.actual_time!.getTime(), d: 1 },
      { t: r.end_time!.getTime(), d: -1 },
    ]);
    edges.sort((a, b) => a.t - b.t || a.d - b.d);
    let live = 0;
    let peak = 0;
    for (const e of edges) peak = Math.max(peak, (live += e.d));
    assert.equal(peak, 2, 'never more than the ceiling');
    for (const id of ids) {
      const steps = await stepsBesideTimers(id);
      assert.equal(steps.filter((s) => s === 'signal slotGranted').length, 1, `one wake-up: ${steps}`);
      assert.deepEqual(await calls.admissions(id), ['started']);
    }
    assert.equal(await countLiveSlots(pool, team.teamId), 0);
  });

  test('cancel-call while a call sleeps in the line ends it cancelled, never granted', async () => {
    const team = await createTestTeam(pool);
    const [id] = await dueTogether(team, 1, new Date(Date.now() + 3600_000));
    await plain.workflow.getHandle(callWorkflowId(id)).describe();
    const cancelled = await withPacer(20, async () => {
      await cancelCall(deps, team.teamId, id);
      return result(id);
    });
    assert.equal(cancelled.status, 'cancelled');
    const row = await callRow(pool, id);
    assert.deepEqual([row.status, row.slot_granted_at], ['cancelled', null]);
    assert.deepEqual(await stepsBesideTimers(id), ['signal cancelCall', 'admitCall'], 'woken by the cancel, not by a grant');
    assert.deepEqual(await calls.admissions(id), ['not_scheduled']);
    await record(id, 'cancelled-in-the-line');
  });

  test('the pacer holds while the live-call queue is behind: nothing is admitted until its backlog falls, then the line moves; while holding it looks at the line only when it asks for the backlog again, and an empty line no more often', async () => {
    await lineOfThisFile();
    const team = await createTestTeam(pool, { maxConcurrent: 5 });
    const ids = await dueTogether(team, 3, new Date(Date.now() + 3000));
    let backlog = LIVE_BACKLOG_LIMIT + 1;
    let asked = 0;
    let lineLooks = 0;
    const liveBacklog = async () => {
      asked++;
      return backlog;
    };
    const pacer = startAdmissionPacer({ pool: countingLineLooks(pool, () => lineLooks++), temporal: env.client }, { ratePerSecond: 20, liveBacklog });
    try {
      // Due after three seconds (sleeping in the line), in the database's clock.
      for (;;) {
        const { rows } = await pool.query<{ due: boolean }>('SELECT scheduled_time <= now() AS due FROM calls WHERE id = $1', [ids[2]]);
        if (rows[0].due) break;
        await delay(100);
      }
      asked = 0;
      lineLooks = 0;
      // Ten ticks a second, but the backlog is asked every 500 ms, and the line only then.
      await delay(2000);
      assert.ok(asked >= 1, 'the backlog was asked again while holding');
      // One look may be in flight, its ask not yet made.
      assert.ok(lineLooks <= asked + 1, `the line looked at ${lineLooks} times for ${asked} asks of the backlog`);
      for (const id of ids) assert.equal((await callRow(pool, id)).slot_granted_at, null, 'not admitted while the live calls are behind');
      // The line empties while holding (its calls put back an hour, as if admitted elsewhere):
      // the empty line too is looked at only every 500 ms, and the backlog is not asked.
      const putBack = (by: string) => pool.query('UPDATE calls SET scheduled_time = scheduled_time + $2::interval, dial_after = dial_after + $2::interval WHERE id = ANY($1::uuid[])', [ids, by]);
      await putBack('1 hour');
      asked = 0;
      lineLooks = 0;
      const emptySince = performance.now();
      await delay(2000);
      const emptyLooks = lineLooks;
      const emptyFor = performance.now() - emptySince;
      assert.equal(asked, 0, 'an empty line: the backlog is not asked');
      assert.ok(emptyLooks <= Math.ceil(emptyFor / 500) + 1, `the empty line looked at ${emptyLooks} times in ${Math.round(emptyFor)} ms`);
      await putBack('-1 hour');
      backlog = LIVE_BACKLOG_LIMIT;
      const outcomes = await Promise.all(ids.map(result));
      assert.deepEqual(outcomes.map((o) => o.status), Array(3).fill('completed'));
    } finally {
      await pacer.stop();
    }
  });

  test('the pacer asks Temporal for the live-call backlog only while due calls wait; a backlog it cannot give is warned once for the outage and once on its recovery', async () => {
    await lineOfThisFile();
    const lines: { level: number; msg: string }[] = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line)) });
    let asked = 0;
    const liveBacklog = async () => {
      if (++asked <= 2) throw new Error('DescribeTaskQueue unavailable');
      return 0;
    };
    // One call a second, and one ask each: the line is still due at the third ask, before the
    // first call ends (a release hands its slot on without the pacer).
    const pacer = startAdmissionPacer({ pool, temporal: env.client, logger }, { ratePerSecond: 1, liveBacklog });
    try {
      // An empty line: ten ticks a second, and Temporal is not asked.
      await delay(1000);
      assert.equal(asked, 0, 'no call due: no DescribeTaskQueue');
      const team = await createTestTeam(pool, { maxConcurrent: 10 });
      const ids = await dueTogether(team, 5, new Date(Date.now() + 1500));
      const outcomes = await Promise.all(ids.map(result));
      assert.deepEqual(outcomes.map((o) => o.status), Array(5).fill('completed'), 'the line moved at the rate while the backlog was unknown');
      const asks = asked;
      assert.ok(asks > 2, `asked ${asks} times`);
      await delay(1000);
      assert.equal(asked, asks, 'the line empty again: not asked');
    } finally {
      await pacer.stop();
    }
    const about = (text: string) => lines.filter((l) => l.msg.includes(text));
    assert.equal(about('backlog unknown').length, 1, `one warning for two failed asks: ${JSON.stringify(lines)}`);
    assert.equal(about('backlog unknown')[0].level, 40);
    assert.equal(about('backlog known again').length, 1, 'one line when Temporal answers again');
  });

  // Last: it skips the test server's clock far ahead.
  test('a lost wake-up: the call granted without its signal starts when its own timer past its due time fires', async () => {
    await lineOfThisFile();
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const [id] = await dueTogether(team, 1, new Date(Date.now() + 3000));
    // Due in the database's clock, then granted there without the signal (as if the worker died between the two).
    for (;;) {
      const { rows } = await pool.query<{ due: boolean }>('SELECT scheduled_time <= now() AS due FROM calls WHERE id = $1', [id]);
      if (rows[0].due) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual((await admitFromLine(pool, team.teamId, 1)).granted, [id]);
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal((await callRow(pool, id)).status, 'scheduled', 'it sleeps on: nobody woke it');
    await env.sleep(1.5 * SAFETY_NET_S * 1000 + 60_000);
    assert.equal((await result(id)).status, 'completed');
    assert.ok(!(await stepsBesideTimers(id)).includes('signal slotGranted'));
    assert.deepEqual(await calls.admissions(id), ['started'], 'its slot was held: it started at once');
    await record(id, 'woken-by-its-safety-net');
  });

  test('the recorded histories of calls in the admission line replay against the current workflow code', async () => {
    const files = readdirSync(HISTORIES_DIR).filter((f) => /^call-(admitted-by-the-line|cancelled-in-the-line|woken-by-its-safety-net)\.bin$/.test(f));
    assert.equal(files.length, 3, `recorded histories in ${HISTORIES_DIR}`);
    const bundle = await workflowBundle();
    for (const file of files) await ReplayWorker.runReplayHistory({ workflowBundle: bundle }, History.decode(readFileSync(path.join(HISTORIES_DIR, file))), file);
  });
});
