// The dialing policy in the call workflow, retry chains and the do-not-call list: a chain for
// each outcome, cancel mid-chain, the list at dial time, added mid-chain, by the callee and by a
// script step. The environment and helpers: test/support/dialingPolicy.ts (the other groups are
// in dialingPolicyWindows.test.ts and dialingPolicyPacing.test.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { cancelCall, type CallServiceDeps } from '../../src/services/calls.js';
import { createTestTeam } from '../support/app.js';
import { callRow, calleeNumber } from '../support/calls.js';
import { dialingPolicyEnv, HOUR } from '../support/dialingPolicy.js';
import { WORKFLOW_TEST } from '../support/temporal.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: CallServiceDeps;
const policy = dialingPolicyEnv((started) => ({ env, pool, deps } = started));
const { schedule, result, steps, admissions, skipTo } = policy;

describe('retry chains', () => {
  const outcomes: [string, string, string][] = [
    ['0001', 'rang-out', 'no_answer'],
    ['0002', 'voicemail', 'voicemail'],
    ['0003', 'User rejected', 'declined'],
    ['0004', 'failed', 'provider_error'],
    ['0005', 'User unavailable', 'unreachable'],
    ['0006', 'hang-up', 'User Hangup'],
    ['0007', 'dropout', 'connection_lost'],
  ];

  /** The call after `callId` in its chain, once its workflow has made it. */
  async function nextOf(callId: string): Promise<string | null> {
    return (await callRow(pool, callId)).next_attempt_call_id;
  }

  test('each retryable outcome: three attempts 60 s after each end, the same number, contact and script, then the chain ends', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 10 });
    const now = await env.currentTimeMs();
    const firsts = await Promise.all(
      outcomes.map(([lastFour, status]) => schedule(team, { at: now, lastFour, retry: { [status]: { max_attempts: 3, delay_seconds: 60 } } })),
    );
    const chains = firsts.map((c) => [c.callId]);
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const ends = await Promise.all(chains.map((chain) => result(chain[attempt - 1])));
      ends.forEach((end, i) => assert.deepEqual([end.status, end.endReason], [outcomes[i][1], outcomes[i][2]], `attempt ${attempt} of ${outcomes[i][1]}`));
      const next = await Promise.all(chains.map((chain) => nextOf(chain[attempt - 1])));
      if (attempt === 3) {
        assert.deepEqual(next, Array(outcomes.length).fill(null), 'max_attempts counts the first call: no fourth');
        break;
      }
      next.forEach((id, i) => {
        assert.ok(id, `${outcomes[i][1]} attempt ${attempt} scheduled the next`);
        chains[i].push(id);
      });
      const rows = await Promise.all(chains.map((chain) => callRow(pool, chain[attempt])));
      const previous = await Promise.all(chains.map((chain) => callRow(pool, chain[attempt - 1])));
      rows.forEach((row, i) => {
        assert.equal(row.status, 'scheduled');
        assert.equal(row.scheduled_time.getTime(), previous[i].end_time!.getTime() + 60_000, 'delay_seconds after the end');
      });
      await skipTo(Math.max(...rows.map((r) => r.scheduled_time.getTime())));
    }
    for (const chain of chains) {
      const rows = await Promise.all(chain.map((id) => callRow(pool, id)));
      assert.deepEqual(rows.map((r) => r.attempt), [1, 2, 3]);
      assert.deepEqual(rows.map((r) => r.original_call_id), [null, chain[0], chain[0]]);
      assert.deepEqual(rows.map((r) => r.next_attempt_call_id), [chain[1], chain[2], null]);
      assert.equal(new Set(rows.map((r) => `${r.to_number} ${r.contact_id} ${r.script_id} ${r.from_number}`)).size, 1);
      // Made through the workflow of the call that ended, as an activity of its own, before its end.
      const made = await steps(chain[0]);
      assert.ok(made.indexOf('scheduleNextAttempt') >= 0 && made.indexOf('scheduleNextAttempt') < made.indexOf('completeCall'), made.join(', '));
    }
  });

  test('a completed call, and an outcome the policy does not name, end their chain at once', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const policy = { 'rang-out': { max_attempts: 3, delay_seconds: 60 } };
    const completed = await schedule(team, { at: now, lastFour: '9002', retry: policy });
    const voicemail = await schedule(team, { at: now, lastFour: '0002', retry: policy });
    assert.equal((await result(completed.callId)).status, 'completed');
    assert.equal((await result(voicemail.callId)).status, 'voicemail');
    assert.equal(await nextOf(completed.callId), null);
    assert.equal(await nextOf(voicemail.callId), null);
    assert.ok(!(await steps(completed.callId)).includes('scheduleNextAttempt'), 'decided in the workflow: no activity at all');
  });

  test('cancelling the scheduled retry stops the chain', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const first = await schedule(team, { at: now, lastFour: '0001', retry: { 'rang-out': { max_attempts: 5, delay_seconds: 3600 } } });
    assert.equal((await result(first.callId)).status, 'rang-out');
    const retry = (await nextOf(first.callId))!;
    assert.ok(retry);
    await cancelCall(deps, team.teamId, retry);
    await skipTo((await callRow(pool, retry)).scheduled_time.getTime() + 60_000);
    assert.equal((await result(retry)).status, 'cancelled');
    assert.equal(await nextOf(retry), null, 'a cancelled call is not retried');
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM calls WHERE original_call_id = $1', [first.callId]);
    assert.equal(rows[0].n, 1);
  });

  test('a number put on the do-not-call list mid-chain: the retry ends failed / do_not_call at dial time and the chain stops', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const phone = calleeNumber('0001');
    const first = await schedule(team, { at: now, phone, retry: { 'rang-out': { max_attempts: 5, delay_seconds: 60 }, failed: { max_attempts: 5, delay_seconds: 60 } } });
    assert.equal((await result(first.callId)).status, 'rang-out');
    const retry = (await nextOf(first.callId))!;
    await pool.query(`INSERT INTO do_not_call (team_id, phone_number, source) VALUES ($1, $2, 'api')`, [team.teamId, phone]);
    await skipTo((await callRow(pool, retry)).scheduled_time.getTime());
    const ended = await result(retry);
    assert.deepEqual([ended.status, ended.endReason], ['failed', 'do_not_call']);
    assert.equal(await nextOf(retry), null, 'retries stop at the list, even with a policy for failed');
    const row = await callRow(pool, retry);
    assert.equal(row.actual_time, null, 'never started');
    assert.equal(row.provider_call_id, null, 'never dialled');
    assert.equal(row.system_notes[0].kind, 'do_not_call');
    const history = await steps(retry);
    assert.deepEqual(await admissions(retry), ['do_not_call'], history.join(', '));
    assert.ok(!history.includes('placeCall'), history.join(', '));
  });

  test('the callee asks not to be called again (simulator 3668): listed with source call, and the hang-up is not retried', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const now = await env.currentTimeMs();
    const phone = calleeNumber('3668');
    const call = await schedule(team, { at: now, phone, retry: { 'hang-up': { max_attempts: 3, delay_seconds: 60 } } });
    assert.equal((await result(call.callId)).status, 'hang-up');
    const { rows } = await pool.query('SELECT source, call_id FROM do_not_call WHERE team_id = $1 AND phone_number = $2', [team.teamId, phone]);
    assert.deepEqual(rows[0], { source: 'call', call_id: call.callId });
    assert.equal(await nextOf(call.callId), null);
    const row = await callRow(pool, call.callId);
    assert.match(row.conversation.map((t) => t.text).join(' '), /do not call me again/);
  });
});

describe('the do-not-call list at dial time', () => {
  test('a number listed after its call was scheduled: failed / do_not_call, never dialled, the check in the history, call.ended recorded', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    await pool.query(`INSERT INTO webhook_endpoints (id, team_id, url, events, secret) VALUES ($1, $2, 'https://example.com/hook', ARRAY['call.ended'], 'whsec_test')`, [randomUUID(), team.teamId]);
    const now = await env.currentTimeMs();
    const phone = calleeNumber('9003');
    const call = await schedule(team, { at: now + HOUR, phone });
    await pool.query(`INSERT INTO do_not_call (team_id, phone_number, source) VALUES ($1, $2, 'api')`, [team.teamId, phone]);
    await skipTo(now + HOUR);
    const ended = await result(call.callId);
    assert.deepEqual([ended.status, ended.endReason], ['failed', 'do_not_call']);
    const row = await callRow(pool, call.callId);
    assert.equal(row.provider_call_id, null);
    assert.equal(row.duration, 0);
    const history = await steps(call.callId);
    assert.deepEqual(await admissions(call.callId), ['do_not_call'], 'the check came with the slot, in the admission step');
    assert.ok(!history.includes('placeCall'), history.join(', '));
    const events = await pool.query(`SELECT payload FROM webhook_events WHERE call_id = $1 AND type = 'call.ended'`, [call.callId]);
    assert.equal(events.rows.length, 1, 'the same completion path: call.ended fires');
    assert.equal(events.rows[0].payload.data.call.end_reason, 'do_not_call');
  });

  test('a script step puts the callee on the list (source call, naming the call) and notes it', WORKFLOW_TEST, async () => {
    const team = await createTestTeam(pool);
    const script = await insertScript(pool, {
      teamId: team.teamId,
      name: 'Opt out',
      definition: {
        name: 'Opt out',
        steps: [
          { id: 'hello', type: 'say', text: 'Hello.' },
          { id: 'opt_out', type: 'do_not_call', text: 'We will not call you again.', reason: 'Opted out on the call' },
          { id: 'bye', type: 'end', text: 'Goodbye.' },
        ],
      },
    });
    const phone = calleeNumber('9004');
    const call = await schedule(team, { at: await env.currentTimeMs(), phone, scriptId: script.id });
    assert.equal((await result(call.callId)).status, 'completed');
    const { rows } = await pool.query('SELECT source, call_id, reason FROM do_not_call WHERE team_id = $1 AND phone_number = $2', [team.teamId, phone]);
    assert.deepEqual(rows[0], { source: 'call', call_id: call.callId, reason: 'Opted out on the call' });
    const row = await callRow(pool, call.callId);
    assert.ok(row.system_notes.some((n) => n.kind === 'do_not_call'));
    assert.ok(row.conversation.some((t) => t.text === 'We will not call you again.'));
  });
});
