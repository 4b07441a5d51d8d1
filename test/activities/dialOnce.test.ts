// One dial per call (docs/reliability.md, "One dial per call"): the call activities claim a call's
// dial before the voice provider dials, so a placeCall retried after its worker died
// mid-dial (the chaos run's double dial) does not dial again. Real Postgres; the provider is
// the simulator, counted. A dial slower than its local activity's timeout (a worker under
// load) is retried by the same workflow run: the retry goes on with the one dial, on a real
// Temporal server and worker.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index.js';
import { DIAL_ALREADY_CLAIMED_FAILURE } from '../../activities/dialClaim.js';
import type { Pool } from '../../src/db/pool.js';
import { createLogger } from '../../src/logging/logger.js';
import { SimulatorProvider } from '../../src/telephony/simulator.js';
import type { VoiceProvider } from '../../src/telephony/provider.js';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { cachedWorkflowBundle, TEST_WORKFLOW_BUNDLES_DIR } from '../../src/temporal/workflowBundleCache.js';
import { testConfig, testPool } from '../support/app.js';
import { insertCallRowTeam, insertPhoneCalls, type CallRowTeam } from '../support/callRows.js';
import { createLocalEnv } from '../support/temporal.js';

let pool: Pool;
let team: CallRowTeam;
const dialled: string[] = [];
/** How long the provider takes to answer the first dial of a call (a worker under load), by call id. */
const slowFirstDial = new Map<string, number>();
let activities: ReturnType<typeof createActivities>;
let env: TestWorkflowEnvironment | undefined;
let worker: Worker | undefined;
let running: Promise<void> | undefined;

before(async () => {
  pool = await testPool();
  team = await insertCallRowTeam(pool, 5);
  const config = testConfig();
  const simulator = new SimulatorProvider(config.SIMULATOR_CALL_SECONDS);
  const counting: VoiceProvider = {
    name: simulator.name,
    placeCall: async (request) => {
      dialled.push(request.callId);
      const holdMs = slowFirstDial.get(request.callId);
      slowFirstDial.delete(request.callId);
      if (holdMs) await delay(holdMs);
      return simulator.placeCall(request);
    },
  };
  // The dial activity never reaches Temporal: a client that is never dialled.
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  activities = createActivities({ config, pool, logger: createLogger('silent'), temporal, voiceProvider: counting });
});

after(async () => {
  worker?.shutdown();
  await running;
  await env?.teardown();
});

/** A real server and a worker running slowDialWorkflow with the counted activities (started once). */
async function slowDialClient(): Promise<Client> {
  if (!env) {
    env = await createLocalEnv();
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue: 'slow-dial',
      workflowBundle: await cachedWorkflowBundle(
        { workflowsPath: path.join(PROJECT_ROOT, 'test', 'activities', 'slowDialWorkflow.ts'), logger: new DefaultLogger('WARN') },
        TEST_WORKFLOW_BUNDLES_DIR,
      ),
      activities,
    });
    running = worker.run();
  }
  return env.client;
}

/** A call in progress whose first dial takes `holdMs`, dialled by slowDialWorkflow retrying after `retryAfterMs`. */
async function dialSlowly(holdMs: number, retryAfterMs: number): Promise<{ callId: string; result: { mode: string; providerCallId: string } }> {
  const client = await slowDialClient();
  const [callId] = await insertPhoneCalls(pool, team, 1);
  await pool.query(`UPDATE calls SET status = 'in-progress', progress = 'dialling' WHERE id = $1`, [callId]);
  slowFirstDial.set(callId, holdMs);
  const result = await client.workflow.execute('slowDialWorkflow', { taskQueue: 'slow-dial', workflowId: `slow-dial-${callId}`, args: [callId, retryAfterMs] });
  return { callId, result };
}

test('a dial that outlasts its local activity timeout: the retry joins the dial still running, the call goes on, one dial', async () => {
  // The first attempt times out at 1 s, after it claimed; the retry starts at about 1.1 s, while it still dials.
  const { callId, result } = await dialSlowly(1_600, 100);
  assert.equal(result.mode, 'simulated');
  assert.deepEqual(dialled.filter((id) => id === callId), [callId], 'dialled once');
  const { rows } = await pool.query<{ provider_call_id: string; progress: string }>('SELECT provider_call_id, progress FROM calls WHERE id = $1', [callId]);
  assert.equal(rows[0].provider_call_id, result.providerCallId);
  assert.equal(rows[0].progress, 'ringing');
});

test('a dial that answered after its attempt timed out: the retry goes on with that answer, without dialling again', async () => {
  // The first attempt times out at 1 s and its dial answers at 1.3 s; the retry starts at about 2 s.
  const { callId, result } = await dialSlowly(1_300, 1_000);
  assert.equal(result.mode, 'simulated');
  assert.deepEqual(dialled.filter((id) => id === callId), [callId], 'dialled once');
  const { rows } = await pool.query<{ provider_call_id: string }>('SELECT provider_call_id FROM calls WHERE id = $1', [callId]);
  assert.equal(rows[0].provider_call_id, result.providerCallId);
});

test('placeCall run again for the same call (a retry after its worker died) does not dial a second time', async () => {
  const [callId] = await insertPhoneCalls(pool, team, 1);
  await pool.query(`UPDATE calls SET status = 'in-progress', progress = 'dialling' WHERE id = $1`, [callId]);
  const placed = await activities.placeCall({ callId });
  assert.equal(placed.mode, 'simulated');
  await assert.rejects(activities.placeCall({ callId }), (err: unknown) => {
    assert.ok(err instanceof ApplicationFailure);
    assert.equal(err.type, DIAL_ALREADY_CLAIMED_FAILURE);
    assert.equal(err.nonRetryable, true);
    return true;
  });
  assert.deepEqual(dialled.filter((id) => id === callId), [callId]);
});

test('placeCall for a call no longer in progress (cancelled meanwhile) does not dial', async () => {
  const [callId] = await insertPhoneCalls(pool, team, 1);
  await pool.query(`UPDATE calls SET status = 'cancelled', progress = 'done' WHERE id = $1`, [callId]);
  await assert.rejects(activities.placeCall({ callId }), (err: unknown) => err instanceof ApplicationFailure && err.type === DIAL_ALREADY_CLAIMED_FAILURE);
  assert.equal(dialled.includes(callId), false);
});
