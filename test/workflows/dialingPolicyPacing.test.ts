// The dialing policy in the call workflow, carrier pacing and a batch's chains. The environment
// and helpers: test/support/dialingPolicy.ts (the other groups are in
// dialingPolicyWindows.test.ts and dialingPolicyRetries.test.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { updateTeamDialingPolicy } from '../../src/db/repositories/dialingPolicies.js';
import type { CallingWindow } from '../../src/domain/callingWindows.js';
import { createBatch, showBatch, wakeBatch } from '../../src/services/batches.js';
import type { CallServiceDeps } from '../../src/services/calls.js';
import { createTestTeam } from '../support/app.js';
import { listWithContacts } from '../support/batches.js';
import { waitForCall } from '../support/calls.js';
import { dialingPolicyEnv, HOUR } from '../support/dialingPolicy.js';
import { WORKFLOW_TEST } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;
let deps: CallServiceDeps;
const policy = dialingPolicyEnv((started) => ({ env, pool, plain, deps } = started));
const { schedule, result, steps, skipTo, dialTime } = policy;

describe('carrier pacing', () => {
  test('five calls due at once from one number at a team rate of 1/s: a slot each, then one dial a second, waiting_for_dial_slot meanwhile', WORKFLOW_TEST, async () => {
    // A slot first, then the dial token: waiting for it, the call is in progress (it holds its slot) and says so.
    const team = await createTestTeam(pool, { maxConcurrent: 10 });
    await updateTeamDialingPolicy(pool, team.teamId, { dial_rate: 1 });
    const now = await env.currentTimeMs();
    const batch = await Promise.all(Array.from({ length: 5 }, (_, i) => schedule(team, { at: now, lastFour: `910${i}` })));
    await Promise.race(batch.map((c) => waitForCall(pool, c.callId, (row) => row.progress === 'waiting_for_dial_slot', 30_000)));
    await Promise.all(batch.map((c) => result(c.callId)));
    // When each dial went out: the end of its dial activity (the paced ones dial at the end of their wait).
    const dials = (await Promise.all(batch.map((c) => dialTime(c.callId)))).sort((a, b) => a - b);
    for (let i = 1; i < dials.length; i += 1) assert.ok(dials[i] - dials[i - 1] >= 500, `dials a second apart: ${dials.map((d) => d - dials[0])}`);
    assert.ok(dials[4] - dials[0] >= 3_500, `five dials at 1/s span four seconds: ${dials[4] - dials[0]} ms`);
    const waited = await Promise.all(batch.map(async (c) => (await steps(c.callId)).includes('placePacedCall')));
    assert.ok(waited.filter(Boolean).length >= 3, 'the calls that found no token waited for one in their dial activity');
    const direct = await Promise.all(batch.map(async (c) => (await steps(c.callId)).includes('placeCall')));
    assert.ok(direct.some(Boolean), 'the first took a free token and dialled at once');
  });
});

describe('batches', () => {
  test('a batch counts a contact done when its chain ends, with every attempt', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 5 });
    const { listId } = await listWithContacts(pool, team.teamId, 3, '0001');
    const batch = await createBatch(deps as never, {
      teamId: team.teamId,
      listId,
      scriptId: team.scriptId,
      fromNumber: team.fromNumber,
      retryPolicy: { 'rang-out': { max_attempts: 2, delay_seconds: 60 } },
      // No poll during the test: skipping the retries' 60 s through a 2 s poll took a tick
      // (a workflow task and an activity, real time) every 2 s of it, over a minute on a busy
      // machine. The test wakes the batch once the retries have ended.
      workflow: { pollMs: HOUR },
    });
    const deadline = Date.now() + 90_000;
    let progress = (await showBatch(deps, batch.id)).progress;
    while (progress.attempts < 3 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      progress = (await showBatch(deps, batch.id)).progress;
    }
    // The first calls rang out and their retries wait 60 s: the contacts are still calling.
    const first = await pool.query(`SELECT id, next_attempt_call_id FROM calls WHERE team_id = $1 AND attempt = 1`, [team.teamId]);
    await Promise.all(first.rows.map((r) => result(r.id)));
    progress = (await showBatch(deps, batch.id)).progress;
    assert.equal(progress.done_total, 0, 'a chain with a retry ahead is not done');
    assert.equal(progress.calling, 3);
    await skipTo((await env.currentTimeMs()) + 61_000);
    const retries = await pool.query(`SELECT id FROM calls WHERE team_id = $1 AND attempt = 2`, [team.teamId]);
    assert.equal(retries.rows.length, 3, 'a retry per contact');
    await Promise.all(retries.rows.map((r) => result(r.id)));
    await wakeBatch(deps, batch.id);
    const handle = plain.workflow.getHandle(`batch-${batch.id}`);
    let timer: NodeJS.Timeout | undefined;
    // Cleared: a pending timer keeps the file's process alive after its last test (it held it 90 s).
    const ended = await Promise.race([handle.result(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('batch did not end')), 90_000)))]).finally(() =>
      clearTimeout(timer),
    );
    assert.equal(ended.status, 'completed');
    const shown = await showBatch(deps, batch.id);
    assert.deepEqual(shown.progress.done, { 'rang-out': 3 });
    assert.equal(shown.progress.attempts, 6, 'two calls per contact');
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM calls WHERE team_id = $1`, [team.teamId]);
    assert.equal(rows[0].n, 6);
  });

  test('contacts whose calling window is closed now stay pending while the others are called', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 5 });
    const hour = new Date().getUTCHours();
    const hh = (h: number) => `${String((h + 24) % 24).padStart(2, '0')}:00`;
    // Open now in UTC for three hours; nine hours ahead (Tokyo), it is closed.
    const window: CallingWindow = { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: hh(hour - 1), end: hh(hour + 2) };
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 4);
    await pool.query(`UPDATE contacts SET timezone = CASE WHEN id = ANY($2::uuid[]) THEN 'Asia/Tokyo' ELSE 'UTC' END WHERE id = ANY($1::uuid[])`, [contactIds, contactIds.slice(2)]);
    const batch = await createBatch(deps as never, { teamId: team.teamId, listId, scriptId: team.scriptId, fromNumber: team.fromNumber, callingWindow: window });
    const deadline = Date.now() + 60_000;
    let states: Record<string, string> = {};
    while (Date.now() < deadline) {
      const { rows } = await pool.query<{ contact_id: string; state: string }>('SELECT contact_id, state FROM batch_contacts WHERE batch_id = $1', [batch.id]);
      states = Object.fromEntries(rows.map((r) => [r.contact_id, r.state]));
      if (contactIds.slice(0, 2).every((id) => states[id] && states[id] !== 'pending')) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(contactIds.slice(0, 2).every((id) => states[id] === 'calling' || states[id] === 'done'), JSON.stringify(states));
    assert.deepEqual(contactIds.slice(2).map((id) => states[id]), ['pending', 'pending']);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM calls WHERE contact_id = ANY($1::uuid[])', [contactIds.slice(2)]);
    assert.equal(rows[0].n, 0, 'no call made only to wait');
    assert.equal((await showBatch(deps, batch.id)).progress.pending, 2);
    await plain.workflow.getHandle(`batch-${batch.id}`).terminate('test over');
  });
});
