// The admission pacer follows the live calls' pace (docs/calls.md, "Task queues", "The live
// calls' pace"): while the live calls' tasks wait long to start it lowers its rate to its
// floor, and raises it back once they start on time; waits while nothing waits in the line
// leave the rate alone; calls falling due after a quiet spell start slowly.
// The time-skipping environment with the real activities over the test database; calls of
// 20 s, so no release hands a slot on while a test watches the pacer's own grants.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { Pool } from '../../src/db/pool.js';
import { admissionRate } from '../../src/metrics/workerMetrics.js';
import { liveCallPace, startAdmissionPacer, type AdmissionPacer } from '../../src/services/admissionPacer.js';
import type { CallServiceDeps } from '../../src/services/calls.js';
import { createTestTeam } from '../support/app.js';
import { dueTogether, lineOfThisFile } from '../support/admissionLine.js';
import { callRow, callTestConfig } from '../support/calls.js';
import { callWorkflowEnv } from '../support/callWorkflowEnv.js';
import { eventually } from '../support/eventually.js';

let pool: Pool;
let deps: CallServiceDeps;
const calls = callWorkflowEnv(callTestConfig({ ADMISSION_SAFETY_NET_SECONDS: '3600', SIMULATOR_CALL_SECONDS: '20' }), (started) => ({ pool, deps } = started));
const lineToItself = lineOfThisFile(() => deps);
const RATE = 20;

const rateNow = async () => (await admissionRate.get()).values[0]?.value;

/** A pacer at RATE a second following the live calls' pace, told ten times a second that their tasks waited `lateMs()` to start. */
async function withLatePacer<T>(lateMs: () => number, body: () => Promise<T>): Promise<T> {
  await lineToItself();
  const livePace = liveCallPace();
  const firing = setInterval(() => livePace.observe(lateMs(), Date.now()), 100);
  const pacer: AdmissionPacer = startAdmissionPacer({ pool, temporal: deps.temporal }, { ratePerSecond: RATE, livePace });
  try {
    return await body();
  } finally {
    clearInterval(firing);
    await pacer.stop();
  }
}

test("live tasks waiting long while nothing waits in the line leave the rate alone: it is not the pacer's doing", async () => {
  await withLatePacer(
    () => 500,
    async () => {
      await delay(2000);
      assert.equal(await rateNow(), RATE);
    },
  );
});

test("while live tasks wait long to start and calls wait, the rate falls to its floor and the pacer grants one call a second; on time again, it returns to its rate and the line empties", async () => {
  let late = 500;
  const ids = await withLatePacer(
    () => late,
    async () => {
      const team = await createTestTeam(pool, { maxConcurrent: 100 });
      const ids = await dueTogether(deps, team, 60, new Date(Date.now() + 1500));
      const granted = async () => (await Promise.all(ids.map(async (id) => (await callRow(pool, id)).slot_granted_at?.getTime()))).filter((t) => t !== undefined);
      await eventually(async () => (await rateNow()) === 1, 'the rate at its floor (one a second; a fiftieth of 20 is less)');
      const atFloor = (await granted()).length;
      assert.ok(atFloor < ids.length, `calls still wait when the floor is reached (${atFloor} of ${ids.length} granted)`);
      // At 20 a second the line would empty within the next three seconds; at one a second (the
      // calls last 20 s, so no release grants meanwhile) it gives at most four, whatever the load.
      await delay(3000);
      const inThree = (await granted()).length - atFloor;
      assert.ok(inThree <= 4, `${inThree} granted in three seconds at the floor`);
      late = 100;
      await eventually(async () => (await rateNow()) === RATE, 'the configured rate again once the tasks start on time', { timeoutMs: 60_000 });
      await eventually(async () => (await granted()).length === ids.length, 'every call granted');
      return ids;
    },
  );
  const outcomes = await Promise.all(ids.map((id) => calls.result(id, 120_000)));
  assert.deepEqual(outcomes.map((o) => o.status), Array(ids.length).fill('completed'));
});

test('calls falling due after a quiet spell start at a quarter of the rate, doubled each step while the live calls are on time', async () => {
  const rates: number[] = [];
  const ids = await withLatePacer(
    () => 20,
    async () => {
      const watching = setInterval(() => void rateNow().then((r) => r !== undefined && rates.push(r)), 50);
      try {
        const team = await createTestTeam(pool, { maxConcurrent: 100 });
        const ids = await dueTogether(deps, team, 40, new Date(Date.now() + 1500));
        await eventually(async () => (await Promise.all(ids.map(async (id) => (await callRow(pool, id)).slot_granted_at))).every(Boolean), 'every call granted');
        return ids;
      } finally {
        clearInterval(watching);
      }
    },
  );
  const steps = rates.filter((r, i) => i === 0 || r !== rates[i - 1]);
  assert.deepEqual(steps.slice(0, 4), [RATE, RATE / 4, RATE / 2, RATE], `the rates seen: ${steps.join(', ')}`);
  const outcomes = await Promise.all(ids.map((id) => calls.result(id, 120_000)));
  assert.deepEqual(outcomes.map((o) => o.status), Array(ids.length).fill('completed'));
});
