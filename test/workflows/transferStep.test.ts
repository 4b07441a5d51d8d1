// The transfer step in the call workflow (docs/scripts.md, "Transfer"), in the time-skipping
// environment with the real call activities over the test database: on the simulator (the
// simulated person answers unless the target's last four digits refuse), and on the media
// path with a typed stand-in for the edge's activities (the edge's own side is tested with
// real phones in test/e2e/phoneTransfer.test.ts). A transfer that reaches the person ends the
// call completed / transferred with a System Note naming the target; one that does not goes
// on at on_failure, or at the next step.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import type { ScriptDefinitionInput } from '../../src/domain/scripts/definition.js';
import { scheduleCall, type CallServiceDeps } from '../../src/services/calls.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import type { MediaEdgeTransferActivities, TransferCallerInput, TransferCallerResult } from '../../workflows/transferContracts.js';
import { createTestTeam } from '../support/app.js';
import { callRow, calleeNumber, callTestConfig } from '../support/calls.js';
import { callWorkflowEnv } from '../support/callWorkflowEnv.js';
import { storeCheckedScript } from '../support/scripts.js';
import { answerOnEdge, scheduleWebCall, startStandInEdge, type StandInEdge } from '../support/standInEdge.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;
let deps: CallServiceDeps;
const calls = callWorkflowEnv(callTestConfig({ SIMULATOR_CALL_SECONDS: '1' }), (started) => ({ env, pool, plain, deps } = started));

/** Greets, transfers to `to`; on failure says sorry (when `onFailure`), else goes on to the goodbye. */
function transferScript(to: string, extra: { onFailure?: boolean; mode?: 'bridge' | 'refer'; ringTimeoutSeconds?: number } = {}): ScriptDefinitionInput {
  return {
    name: 'Transfer',
    steps: [
      { id: 'greet', type: 'say', text: 'Hello, let me put you through.' },
      {
        id: 'handoff',
        type: 'transfer',
        to,
        ...(extra.mode ? { mode: extra.mode } : {}),
        announcement: 'A caller for {{contact.first_name}}.',
        ...(extra.onFailure ? { on_failure: 'sorry' } : {}),
        ...(extra.ringTimeoutSeconds ? { ring_timeout_seconds: extra.ringTimeoutSeconds } : {}),
      },
      { id: 'bye', type: 'end', text: 'Goodbye.' },
      { id: 'sorry', type: 'end', text: 'Sorry, nobody can take your call now.' },
    ],
  };
}

const result = (callId: string) => calls.result(callId, 60_000);
const transcript = async (callId: string) => (await callRow(pool, callId)).conversation.map((t) => `${t.role}: ${t.text}`);

describe('the transfer step on the simulator', () => {
  async function simulatedCall(script: ScriptDefinitionInput): Promise<string> {
    const team = await createTestTeam(pool);
    const scriptId = await storeCheckedScript(pool, team.teamId, script);
    const call = await scheduleCall(deps, { teamId: team.teamId, fromNumber: team.fromNumber, scriptId, contact: { phone_number: calleeNumber('9001'), first_name: 'Ada' } });
    return call.callId;
  }

  test('a person who answers: completed / transferred, with a System Note naming the target', async () => {
    const callId = await simulatedCall(transferScript('+14155559876', { onFailure: true }));
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'transferred' });
    assert.deepEqual(await transcript(callId), ['agent: Hello, let me put you through.'], 'no step after the transfer ran');
    const note = (await callRow(pool, callId)).system_notes.find((n) => n.kind === 'transfer');
    assert.ok(note, 'a transfer System Note');
    assert.match(note.text, /transferred to \+14155559876/);
    assert.equal((note.data as { announcement?: string }).announcement, 'A caller for Ada.', 'the announcement is filled from the contact');
  });

  test('a person who does not answer (target ending 0001): the script goes on at on_failure', async () => {
    const callId = await simulatedCall(transferScript('sip:+14155550001@pbx.example.com', { onFailure: true }));
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    assert.deepEqual(await transcript(callId), ['agent: Hello, let me put you through.', 'agent: Sorry, nobody can take your call now.']);
    const note = (await callRow(pool, callId)).system_notes.find((n) => n.kind === 'transfer_failed');
    assert.ok(note, 'a transfer_failed System Note');
    assert.match(note.text, /did not reach the person: the person did not answer; the script goes on at step "sorry"/);
  });

  test('a person who declines, without on_failure: the script goes on at the next step', async () => {
    const callId = await simulatedCall(transferScript('+14155550003'));
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    assert.deepEqual(await transcript(callId), ['agent: Hello, let me put you through.', 'agent: Goodbye.']);
  });
});

/** What the stand-in edge answers to transferCaller. */
type TransferMove = TransferCallerResult | { callerHangsUp: true };

type StandIn = StandInEdge<{ transfers: TransferCallerInput[] }>;

/** A stand-in edge on a queue of its own: speaks instantly, answers the transfer with `move`. */
function startTransferEdge(move: TransferMove): Promise<StandIn> {
  return startStandInEdge(env, { transfers: [] as TransferCallerInput[] }, (state): MediaEdgeTransferActivities => ({
    async transferCaller(input) {
      state.transfers.push(input);
      if ('callerHangsUp' in move) {
        const { ApplicationFailure } = await import('@temporalio/activity');
        throw ApplicationFailure.create({ message: 'The caller hung up', type: 'CallerHungUp', nonRetryable: true, details: [{ started: true }] });
      }
      return move;
    },
  }));
}

describe('the transfer step on the media edge', () => {
  /** A browser-only web call (no number of its own) of a team with one number, answered on `edge`. */
  async function mediaCall(script: ScriptDefinitionInput, edge: StandIn): Promise<{ callId: string; teamNumber: string }> {
    const team = await createTestTeam(pool);
    const callId = await scheduleWebCall(deps, team.teamId, await storeCheckedScript(pool, team.teamId, script));
    await answerOnEdge(env, callId, edge);
    return { callId, teamNumber: team.fromNumber };
  }

  test('a bridge that ran: completed / transferred, the bridged lines in the transcript, the transfer attempted once', async () => {
    const edge = await startTransferEdge({
      outcome: 'transferred',
      mode: 'bridge',
      referRefused: 603,
      endedBy: 'person',
      turns: [
        { role: 'user', text: 'hello is anyone there' },
        { role: 'agent', text: 'yes this is the help desk' },
      ],
    });
    try {
      const { callId, teamNumber } = await mediaCall(transferScript('sip:desk@127.0.0.1:5070', { mode: 'refer', onFailure: true }), edge);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'transferred' });
      assert.equal(edge.transfers.length, 1);
      const { announcement, ...asked } = edge.transfers[0];
      // A browser-only call has no number: the person sees the team's, not "anonymous"; the edge rings its default time.
      assert.deepEqual(asked, { callId, stepId: 'handoff', to: 'sip:desk@127.0.0.1:5070', mode: 'refer', from: teamNumber });
      assert.match(announcement ?? '', /^A caller for/, 'the announcement goes to the edge, filled');
      assert.deepEqual(await transcript(callId), ['agent: Hello, let me put you through.', 'user: hello is anyone there', 'agent: yes this is the help desk']);
      const note = (await callRow(pool, callId)).system_notes.find((n) => n.kind === 'transfer');
      assert.ok(note);
      assert.match(note.text, /transferred to sip:desk@127\.0\.0\.1:5070 .*after the REFER was refused \(603\)/);
      const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
      const scheduled = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : []));
      const transfer = scheduled.filter((a) => a.activityType?.name === 'transferCaller');
      assert.equal(transfer.length, 1, 'one transfer activity');
      assert.equal(transfer[0].retryPolicy?.maximumAttempts, 1, 'never retried: the person is dialled at most once');
      assert.equal(transfer[0].taskQueue?.name, edge.taskQueue, 'on the edge that holds the call');
    } finally {
      await edge.stop();
    }
  });

  test('a person who does not answer: the script goes on at on_failure, and the agent hangs up at its end', async () => {
    const edge = await startTransferEdge({ outcome: 'not_answered', reason: 'the person was busy (486 Busy Here)', status: 486 });
    try {
      const { callId } = await mediaCall(transferScript('+14155559876', { onFailure: true, ringTimeoutSeconds: 45 }), edge);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      assert.equal(edge.transfers[0]?.ringTimeoutMs, 45_000, "the step's ring_timeout_seconds goes to the edge");
      assert.deepEqual(edge.spoken, ['Hello, let me put you through.', 'Sorry, nobody can take your call now.']);
      assert.equal(edge.hangUps, 1);
      const note = (await callRow(pool, callId)).system_notes.find((n) => n.kind === 'transfer_failed');
      assert.ok(note);
      assert.equal((note.data as { status?: number }).status, 486);
    } finally {
      await edge.stop();
    }
  });

  test('the caller who hangs up while the person is dialled: hang-up / User Hangup', async () => {
    const edge = await startTransferEdge({ callerHangsUp: true });
    try {
      const { callId } = await mediaCall(transferScript('+14155559876', { onFailure: true }), edge);
      assert.deepEqual(await result(callId), { callId, status: 'hang-up', endReason: 'User Hangup' });
    } finally {
      await edge.stop();
    }
  });
});
