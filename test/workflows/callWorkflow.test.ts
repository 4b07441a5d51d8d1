// test-runner: foreground (a result read within the 3 s before analysis)
// The call workflow end to end in the time-skipping environment: real activities over the
// test database, the simulator as voice provider. This file holds the tests that run calls
// in real time (a call's length is read from its timers, not the wall clock: bench/campaignScale.ts
// prints how long simulated calls take on a busy machine); the rest of the call workflow's life (scheduling, cancel, retry, the ceiling,
// web calls, crashes, replay) is in callWorkflowLifecycle.test.ts, which shares the machine.
//
// Time is driven explicitly: results are awaited through a plain client (which leaves time
// skipping locked, so calls run in real time and can be looked at mid-way), and long waits
// are skipped with env.sleep(). Automatic skipping is avoided on purpose: with several
// workflows and activities in flight it fires timers (activity timeouts among them) out of turn.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { callResultView } from '../../src/services/callViews.js';
import type { Pool } from '../../src/db/pool.js';
import { countLiveSlots } from '../../src/db/repositories/concurrencySlots.js';
import type { CallServiceDeps } from '../../src/services/calls.js';
import { CALL_ID, CALL_STATUS, CALL_TYPE, TEAM_ID } from '../../src/temporal/searchAttributes.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { ANALYSIS_DELAY_MS } from '../../workflows/callWorkflow.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig, historyStep, waitForCall } from '../support/calls.js';
import { callWorkflowEnv, scheduleSimulatedCall } from '../support/callWorkflowEnv.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: CallServiceDeps;
const calls = callWorkflowEnv(callTestConfig(), (started) => ({ env, pool, deps } = started));
const schedule = (team: TestTeam, lastFour: string) => scheduleSimulatedCall(deps, team, lastFour);
/** A call that has not ended within a minute fails the test with its row and last workflow events. */
const result = (callId: string) => calls.result(callId, 60_000);
const { steps } = calls;
const SIMULATOR_CALL_SECONDS = callTestConfig().SIMULATOR_CALL_SECONDS;

/** The timers the call's workflow started before completeCall (the simulated plan's ring and talk), in ms. */
async function conversationTimersMs(callId: string): Promise<number[]> {
  const events = (await calls.plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory()).events ?? [];
  const end = events.findIndex((e) => historyStep(e) === 'completeCall');
  return events.slice(0, end).flatMap((e) => {
    const fire = e.timerStartedEventAttributes?.startToFireTimeout;
    return fire ? [Number(fire.seconds ?? 0) * 1000 + Math.round((fire.nanos ?? 0) / 1e6)] : [];
  });
}

describe('call workflow: outcomes', () => {
  const cases: [string, string, string, boolean][] = [
    ['1234', 'completed', 'agent_hangup', true],
    ['0001', 'rang-out', 'no_answer', false],
    ['0002', 'voicemail', 'voicemail', true],
    ['0003', 'User rejected', 'declined', false],
    ['0004', 'failed', 'provider_error', false],
    ['0005', 'User unavailable', 'unreachable', false],
    ['0006', 'hang-up', 'User Hangup', true],
    ['0007', 'dropout', 'connection_lost', true],
  ];
  test('every simulator outcome: scheduled → in-progress → its terminal status and end_reason, then analysed', async () => {
    const team = await createTestTeam(pool);
    // All eight at once (real time): each lasts SIMULATOR_CALL_SECONDS, then analysis.
    const calls = await Promise.all(cases.map(([lastFour]) => schedule(team, lastFour)));
    const outcomes = await Promise.all(calls.map((c) => result(c.callId)));
    for (const [i, [lastFour, status, endReason, spoke]] of cases.entries()) {
      const label = `number ending ${lastFour}`;
      const call = calls[i];
      assert.equal(call.status, 'scheduled');
      assert.deepEqual(outcomes[i], { callId: call.callId, status, endReason }, label);
      const row = await callRow(pool, call.callId);
      assert.equal(row.status, status, label);
      assert.equal(row.end_reason, endReason, label);
      assert.ok(row.actual_time && row.end_time && row.end_time > row.actual_time, label);
      // duration: whole seconds from actual_time to end_time; never less than the plan (timers do not fire early).
      const seconds = (row.end_time.getTime() - row.actual_time.getTime()) / 1000;
      assert.ok(Math.abs(row.duration! - seconds) <= 0.501, `${label}: duration ${row.duration} is end_time - actual_time (${seconds} s)`);
      assert.ok(row.duration! >= SIMULATOR_CALL_SECONDS, `${label}: a simulated call lasts at least SIMULATOR_CALL_SECONDS (${row.duration})`);
      // The plan as the workflow played it: a ring timer, then (answered) a talk timer, SIMULATOR_CALL_SECONDS in all.
      const timers = await conversationTimersMs(call.callId);
      if (!spoke) assert.deepEqual(timers, [SIMULATOR_CALL_SECONDS * 1000], `${label}: rings out its whole time`);
      else if (status !== 'completed') assert.deepEqual(timers, [1000, (SIMULATOR_CALL_SECONDS - 1) * 1000], `${label}: rings 1 s, talks the rest`);
      else {
        // The script's steps run first; the talk timer waits out what is left of the talk time.
        assert.equal(timers.length, 2, `${label}: ${timers.join(', ')} ms`);
        assert.equal(timers[0], 1000, label);
        assert.ok(timers[1] > 0 && timers[1] <= (SIMULATOR_CALL_SECONDS - 1) * 1000, `${label}: talk timer ${timers[1]} ms`);
      }
      assert.equal(row.progress, 'done', label);
      assert.ok(row.analysed_at, `${label}: analysed`);
      assert.ok(row.call_summary && row.call_summary.length > 0, label);
      assert.equal(row.structured_data?.outcome, status, label);
      assert.equal(row.transcript_json?.length, row.conversation.length, label);
      if (spoke) {
        assert.ok((row.transcript ?? '').length > 0, `${label}: has a transcript`);
        for (const line of (row.transcript ?? '').split('\n')) assert.match(line, /^(Agent|User): .+/, label);
        assert.ok(row.recording_url, label);
      } else {
        assert.equal(row.transcript, '', label);
        assert.equal(row.recording_url, null, label);
      }
      assert.deepEqual(row.objectives?.map((o) => o.objective), ['Greet the contact', 'Verify the caller'], label);
    }
    assert.equal(await countLiveSlots(pool, team.teamId), 0, 'every slot is free again');
  });

  test('the workflow carries the search attributes TeamId, CallId, CallType and CallStatus (upserted)', async () => {
    const team = await createTestTeam(pool);
    const call = await schedule(team, '4321');
    await result(call.callId);
    const description = await env.client.workflow.getHandle(callWorkflowId(call.callId)).describe();
    assert.equal(description.typedSearchAttributes.get(TEAM_ID), team.teamId);
    assert.equal(description.typedSearchAttributes.get(CALL_ID), call.callId);
    assert.equal(description.typedSearchAttributes.get(CALL_TYPE), 'outbound');
    assert.equal(description.typedSearchAttributes.get(CALL_STATUS), 'completed');
  });
});

describe('call workflow: results arrive after the terminal status', () => {
  test('result fields are empty right after the terminal status and filled a few seconds later', async () => {
    const team = await createTestTeam(pool);
    const call = await schedule(team, '7777');
    // Not awaiting the result: time runs normally, so the gap can be observed.
    const ended = await waitForCall(pool, call.callId, (c) => c.status !== 'scheduled' && c.status !== 'in-progress');
    assert.equal(ended.status, 'completed');
    assert.equal(ended.progress, 'analysing');
    const early = callResultView(ended);
    assert.equal(early.call_summary, '');
    assert.equal(early.transcript, '');
    assert.deepEqual(early.transcript_json, []);
    assert.deepEqual(early.structured_data, {});
    assert.deepEqual(early.objectives, []);
    await result(call.callId);
    const late = callResultView(await callRow(pool, call.callId));
    assert.notEqual(late.call_summary, '');
    assert.match(late.transcript, /^Agent: /);
    assert.ok(late.transcript_json.length > 0);
    assert.equal(late.objectives.length, 2);
    const names = await steps(call.callId);
    const complete = names.indexOf('completeCall');
    assert.deepEqual(names.slice(complete, complete + 3), ['completeCall', `timer ${ANALYSIS_DELAY_MS / 1000}s`, 'analyseCall'], 'analysed seconds after the end, never before');
  });
});
