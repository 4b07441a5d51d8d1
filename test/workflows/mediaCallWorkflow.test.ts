// A browser call whose media a media edge holds, in the time-skipping environment: the real
// call activities over the test database, and a typed stand-in for the edge's activities
// on an edge task queue of its own. The stand-in plays a scripted caller: what they answer
// to each prompt, when they stay silent, when they hang up, when the edge is lost.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import type { SystemNote } from '../../src/domain/calls.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import type { CallServiceDeps } from '../../src/services/calls.js';
import {
  CALL_MEDIA_LOST,
  callEventSignal,
  callWorkflowId,
  type AskCallerInput,
  type AskCallerResult,
} from '../../workflows/contracts.js';
import { REPROMPT_PREFIX } from '../../workflows/mediaConversation.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig, historySteps, waitForCall } from '../support/calls.js';
import { callWorkflowEnv } from '../support/callWorkflowEnv.js';
import { answerOnEdge, scheduleWebCall, startStandInEdge } from '../support/standInEdge.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;
let deps: CallServiceDeps;
const calls = callWorkflowEnv(callTestConfig(), (started) => ({ env, pool, plain, deps } = started));

const VERIFY_SCRIPT = {
  name: 'Verify by digits',
  steps: [
    { id: 'greet', type: 'say', text: 'Hello, this is your assistant.' },
    { id: 'ask_pin', type: 'ask', question: 'Please say your account number, one digit at a time.', variable: 'answers.pin', expect: 'digits' },
    { id: 'ask_ok', type: 'ask', question: 'Is this a good time to talk?', variable: 'answers.ok', expect: 'yes_no' },
    {
      id: 'verify',
      type: 'tool',
      tool: 'Auth | Check',
      settings: { record_array: ['19850403'], check_array: ['{{answers.pin}}'], required_match_count: '', exact: 'Yes' },
    },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
  ],
};

/** What the stand-in caller does at one askCaller call (`systemNotes`: what the edge's answer carries). */
type CallerMove = { say: string; systemNotes?: SystemNote[] } | { key: string } | { silence: true } | { hangUpDuringPrompt: true } | { mediaLost: true };

/** A stand-in edge on a queue of its own: speaks instantly, answers `moves` in order. */
function startCallerEdge(moves: CallerMove[]) {
  const state = { prompts: [] as string[], hints: [] as AskCallerInput['hint'][], cancelledAsks: 0 };
  return startStandInEdge(env, state, () => ({
    async askCaller(input: AskCallerInput): Promise<AskCallerResult> {
      state.prompts.push(input.prompt);
      state.hints.push(input.hint);
      const move = moves.shift() ?? { silence: true };
      if ('key' in move) return { kind: 'utterance', text: move.key, recognitionMs: 0, keyed: true };
      if ('say' in move) return { kind: 'utterance', text: move.say, recognitionMs: 120, ...(move.systemNotes ? { systemNotes: move.systemNotes } : {}) };
      if ('silence' in move) return { kind: 'silence' };
      if ('mediaLost' in move) throw ApplicationFailure.nonRetryable('ICE connection failed', CALL_MEDIA_LOST);
      // The caller hangs up while the prompt plays: the edge keeps heartbeating until the workflow cancels.
      const ctx = Context.current();
      for (;;) {
        try {
          ctx.heartbeat();
          await ctx.sleep(200);
        } catch (err) {
          state.cancelledAsks++;
          throw err;
        }
      }
    },
  }));
}

async function webCall(team: TestTeam, definition: object = VERIFY_SCRIPT): Promise<string> {
  const script = await insertScript(pool, { teamId: team.teamId, name: 'verify', definition });
  return scheduleWebCall(deps, team.teamId, script.id);
}

const answer = (callId: string, taskQueue: string) => answerOnEdge(env, callId, { taskQueue });

const result = (callId: string) => calls.result(callId, 60_000);

describe('a call on the media edge: the workflow runs the script through the edge', () => {
  test('say and ask steps are edge activities; answers become user turns; the script end hangs up (completed / agent_hangup)', async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([{ say: 'one nine eight five zero four zero three' }, { say: 'yes that is correct' }]);
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const row = await callRow(pool, callId);
      assert.deepEqual(
        row.conversation.map((t) => `${t.role}: ${t.text}`),
        [
          'agent: Hello, this is your assistant.',
          'agent: Please say your account number, one digit at a time.',
          'user: one nine eight five zero four zero three',
          'agent: Is this a good time to talk?',
          'user: yes that is correct',
          'agent: Goodbye.',
        ],
      );
      assert.deepEqual(edge.spoken, ['Hello, this is your assistant.', 'Goodbye.']);
      assert.equal(edge.hangUps, 1, 'the agent hung up once');
      const authNote = row.system_notes.find((n) => n.kind === 'auth_check');
      assert.ok(authNote, 'an Auth Check note');
      assert.match(authNote.text, /verified/i);
      assert.equal((authNote.data as { variables: { verified: boolean } }).variables.verified, true, 'the spoken digits verify');
      const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
      const scheduled = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : []));
      const onEdge = scheduled.filter((a) => a.taskQueue?.name === edge.taskQueue).map((a) => a.activityType?.name);
      assert.deepEqual(onEdge, ['speakToCaller', 'askCaller', 'askCaller', 'speakToCaller', 'hangUpCaller'], 'every step is visible in the history, on the edge queue');
      // The transcript is written behind the conversation: each line is scheduled by the
      // workflow task that saw the previous one complete, never an activity round trip later.
      const events = history.events ?? [];
      const lines = events.filter((e) => e.activityTaskScheduledEventAttributes?.taskQueue?.name === edge.taskQueue);
      for (let i = 1; i < lines.length; i++) {
        const previous = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(lines[i - 1].eventId))!;
        const tasksBetween = events.filter((e) => e.workflowTaskCompletedEventAttributes && Number(e.eventId) > Number(previous.eventId) && Number(e.eventId) < Number(lines[i].eventId));
        assert.equal(tasksBetween.length, 1, `line ${i} is scheduled by the first workflow task after line ${i - 1} completed`);
      }
      // Row writes are local activities of the call workflow: markers, not activity tasks.
      assert.equal(historySteps(history).filter((s) => s === 'appendTranscriptTurns').length, 4, 'every turn is written all the same');
    } finally {
      await edge.stop();
    }
  });

  test('System Notes an edge answer carries (a speech engine replaced mid-call) are written to the call, with the script’s own', async () => {
    const team = await createTestTeam(pool);
    const failover: SystemNote = {
      at: '2026-11-27T14:00:00.000Z',
      kind: 'speech_engine',
      text: 'The speech recognition engine deepgram failed twice (Deepgram: no answer within 2000 ms of the end of speech); pocketsphinx took over for the rest of the call.',
      data: { stage: 'recognition', failed: 'deepgram', fallback: 'pocketsphinx' },
    };
    const edge = await startCallerEdge([{ say: 'one nine eight five zero four zero three', systemNotes: [failover] }, { say: 'yes' }]);
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const notes = (await callRow(pool, callId)).system_notes;
      assert.deepEqual(
        notes.filter((n) => n.kind === 'speech_engine'),
        [failover],
        'the note as the edge wrote it, once',
      );
      assert.ok(notes.some((n) => n.kind === 'auth_check'), 'and the script’s notes');
    } finally {
      await edge.stop();
    }
  });

  test('wrong spoken digits fail the Auth Check', async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([{ say: 'one two three four' }, { say: 'no' }]);
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      assert.equal((await result(callId)).status, 'completed');
      const note = (await callRow(pool, callId)).system_notes.find((n) => n.kind === 'auth_check');
      assert.equal((note?.data as { variables: { verified: boolean } }).variables.verified, false);
    } finally {
      await edge.stop();
    }
  });

  test("keyed digits: the ask's input reaches the edge, the digits are the user's turn and verify, and a keyed_answer System Note says they were keyed", async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([{ key: '19850403' }, { say: 'yes' }]);
    try {
      const keypadScript = { ...VERIFY_SCRIPT, steps: VERIFY_SCRIPT.steps.map((s) => (s.id === 'ask_pin' ? { ...s, input: 'dtmf' } : s)) };
      const callId = await webCall(team, keypadScript);
      await answer(callId, edge.taskQueue);
      assert.equal((await result(callId)).status, 'completed');
      assert.deepEqual(edge.hints, [{ expect: 'digits', input: 'dtmf' }, { expect: 'yes_no' }]);
      const row = await callRow(pool, callId);
      assert.ok(row.conversation.some((t) => t.role === 'user' && t.text === '19850403'));
      const keyedNotes = row.system_notes.filter((n) => n.kind === 'keyed_answer');
      assert.deepEqual(keyedNotes.map((n) => n.text), ['The caller keyed the answer to step "ask_pin" on the keypad.']);
      const auth = row.system_notes.find((n) => n.kind === 'auth_check');
      assert.equal((auth?.data as { variables: { verified: boolean } }).variables.verified, true);
    } finally {
      await edge.stop();
    }
  });

  test('silence gets one reprompt; an answer to the reprompt counts', async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([{ silence: true }, { say: 'one nine eight five zero four zero three' }, { say: 'yes' }]);
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      assert.equal((await result(callId)).status, 'completed');
      assert.equal(edge.prompts[1], `${REPROMPT_PREFIX} Please say your account number, one digit at a time.`);
      const texts = (await callRow(pool, callId)).conversation.map((t) => t.text);
      assert.ok(texts.includes(edge.prompts[1]), 'the reprompt is in the transcript');
      assert.ok(texts.includes('one nine eight five zero four zero three'));
    } finally {
      await edge.stop();
    }
  });

  test('silence after the reprompt: no user turn, a no_answer note, an empty variable, and the script goes on', async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([{ silence: true }, { silence: true }, { say: 'yes' }]);
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const row = await callRow(pool, callId);
      assert.equal(row.conversation.filter((t) => t.role === 'user').length, 1, 'only the second question was answered');
      const note = row.system_notes.find((n) => n.kind === 'no_answer');
      assert.match(note?.text ?? '', /did not answer step "ask_pin"/);
      const auth = row.system_notes.find((n) => n.kind === 'auth_check');
      assert.equal((auth?.data as { variables: { verified: boolean } }).variables.verified, false);
    } finally {
      await edge.stop();
    }
  });

  test('the caller hanging up mid-prompt cancels the prompt and ends hang-up / User Hangup', async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([{ hangUpDuringPrompt: true }]);
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      await waitForCall(pool, callId, (c) => c.conversation.length >= 1);
      while (edge.prompts.length === 0) await new Promise((r) => setTimeout(r, 50));
      await env.client.workflow.getHandle(callWorkflowId(callId)).signal(callEventSignal, { type: 'ended', reason: 'User Hangup', event_id: `bye-${callId}` });
      assert.deepEqual(await result(callId), { callId, status: 'hang-up', endReason: 'User Hangup' });
      for (let i = 0; i < 100 && edge.cancelledAsks === 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(edge.cancelledAsks, 1, 'the prompt in flight was cancelled on the edge');
      assert.equal(edge.hangUps, 0, 'the agent does not hang up a call the caller left');
      assert.deepEqual(
        (await callRow(pool, callId)).conversation.map((t) => `${t.role}: ${t.text}`),
        ['agent: Hello, this is your assistant.', 'agent: Please say your account number, one digit at a time.'],
        'the question the caller left during was said: it is in the transcript',
      );
    } finally {
      await edge.stop();
    }
  });

  test('media lost during a step ends dropout / connection_lost with a System Note', async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([{ mediaLost: true }]);
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      assert.deepEqual(await result(callId), { callId, status: 'dropout', endReason: 'connection_lost' });
      const row = await callRow(pool, callId);
      const note = row.system_notes.find((n) => n.kind === 'media');
      assert.match(note?.text ?? '', /ICE connection failed/);
      assert.equal(row.conversation.at(-1)?.text, 'Please say your account number, one digit at a time.', 'the question under way when the media went is in the transcript');
    } finally {
      await edge.stop();
    }
  });

  test('the media lost at the hang-up, after the script ran to its end: the call stays completed, and its note says so (not dropout)', async () => {
    const team = await createTestTeam(pool);
    const edge = await startStandInEdge(env, {}, () => ({
      async askCaller(input: AskCallerInput): Promise<AskCallerResult> {
        return { kind: 'utterance', text: input.hint?.expect === 'digits' ? 'one nine eight five zero four zero three' : 'yes', recognitionMs: 0 };
      },
      async hangUpCaller() {
        throw ApplicationFailure.nonRetryable('the edge went away', CALL_MEDIA_LOST);
      },
    }));
    try {
      const callId = await webCall(team);
      await answer(callId, edge.taskQueue);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const note = (await callRow(pool, callId)).system_notes.find((n) => n.kind === 'media');
      assert.match(note?.text ?? '', /^The agent's hang-up did not reach the caller: The call's media was lost \(the edge went away\); the script had already run to its end\.$/);
      assert.doesNotMatch(note?.text ?? '', /dropout/, 'a completed call is not said to be a dropout');
    } finally {
      await edge.stop();
    }
  });

  test('an edge that is gone (nobody polls its queue) ends the call dropout, never stuck in-progress', async () => {
    const team = await createTestTeam(pool);
    const edge = await startCallerEdge([]);
    await edge.stop();
    const callId = await webCall(team);
    await answer(callId, edge.taskQueue);
    await waitForCall(pool, callId, (c) => c.status === 'in-progress');
    await env.sleep(15_000);
    assert.deepEqual(await result(callId), { callId, status: 'dropout', endReason: 'connection_lost' });
    const note = (await callRow(pool, callId)).system_notes.find((n) => n.kind === 'media');
    assert.match(note?.text ?? '', /stopped answering \(speakToCaller was never picked up\)/);
  });
});
