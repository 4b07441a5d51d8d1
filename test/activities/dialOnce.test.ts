// One dial per call (docs/reliability.md, "One dial per call"): the call activities claim a call's
// dial before the voice provider dials, so a placeCall retried after its worker died
// mid-dial (the chaos run's double dial) does not dial again. Real Postgres; the provider is
// the simulator, counted.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { createActivities } from '../../activities/index.js';
import { DIAL_ALREADY_CLAIMED_FAILURE } from '../../activities/dialClaim.js';
import type { Pool } from '../../src/db/pool.js';
import { createLogger } from '../../src/logging/logger.js';
import { SimulatorProvider } from '../../src/telephony/simulator.js';
import type { VoiceProvider } from '../../src/telephony/provider.js';
import { testConfig, testPool } from '../support/app.js';
import { insertCallRowTeam, insertPhoneCalls, type CallRowTeam } from '../support/callRows.js';

let pool: Pool;
let team: CallRowTeam;
const dialled: string[] = [];
let activities: ReturnType<typeof createActivities>;

before(async () => {
  pool = await testPool();
  team = await insertCallRowTeam(pool, 5);
  const config = testConfig();
  const simulator = new SimulatorProvider(config.SIMULATOR_CALL_SECONDS);
  const counting: VoiceProvider = {
    name: simulator.name,
    placeCall: (request) => {
      dialled.push(request.callId);
      return simulator.placeCall(request);
    },
  };
  // The dial activity never reaches Temporal: a client that is never dialled.
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  activities = createActivities({ config, pool, logger: createLogger('silent'), temporal, voiceProvider: counting });
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
