// The converse step in the call workflow (docs/agents.md), in the time-skipping environment with
// the real call activities over the test database, and a stand-in media edge on a queue of its
// own whose converseTurn is the edge's real turn (src/mediaEdge/conversation/converseTurn.ts:
// the real chat-completions client streaming from the local fake service, sentences split as
// they come) over a scripted caller: every sentence is "played" at once, and the caller's
// answers come in order. The edge's own speech and barge-in are tested in
// test/mediaEdge/converseTurn.test.ts and end to end in test/e2e/converseCall.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import type { ScriptDefinitionInput } from '../../src/domain/scripts/definition.js';
import { ChatCompletionsClient } from '../../src/llm/chatCompletions.js';
import { checkJson } from '../../src/llm/jsonSchema.js';
import { runConverseTurn } from '../../src/mediaEdge/conversation/converseTurn.js';
import { EarlyModelTurns } from '../../src/mediaEdge/conversation/earlyModelTurns.js';
import { callResultView } from '../../src/services/callViews.js';
import type { CallServiceDeps } from '../../src/services/calls.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import type { ConverseTurnInput, MediaEdgeConverseActivities } from '../../workflows/converseContracts.js';
import { createTestTeam } from '../support/app.js';
import { callRow, callTestConfig } from '../support/calls.js';
import { callWorkflowEnv } from '../support/callWorkflowEnv.js';
import { startFakeChatCompletions, type FakeChatCompletions, type FakeChatRequest, type FakeReply } from '../support/fakeChatCompletions.js';
import { storeCheckedScript } from '../support/scripts.js';
import { answerOnEdge, scheduleWebCall, scriptedCallerVoice, startStandInEdge, type StandInEdge } from '../support/standInEdge.js';

const API_KEY = 'sk-test-converse-0123456789';
let env: TestWorkflowEnvironment;
let pool: Pool;
let plain: Client;
let deps: CallServiceDeps;
let fake: FakeChatCompletions;
/** What the fake model answers next, per call (the call id is in the system prompt). */
const replies = new Map<string, Array<FakeReply | ((request: FakeChatRequest) => FakeReply)>>();
const calls = callWorkflowEnv(callTestConfig({ SIMULATOR_CALL_SECONDS: '1' }), (started) => ({ env, pool, plain, deps } = started));

before(async () => {
  fake = await startFakeChatCompletions({
    apiKey: API_KEY,
    reply: (request) => {
      const system = String(request.body.messages[0]?.content ?? '');
      const callId = /call (\S+)\./.exec(system)?.[1] ?? '';
      const next = replies.get(callId)?.shift();
      if (!next) return { status: 500 };
      return typeof next === 'function' ? next(request) : next;
    },
  });
});

after(async () => {
  await fake?.close();
});

type StandIn = StandInEdge<{ turns: ConverseTurnInput[]; askedEarly: number }>;

/**
 * A stand-in edge: converseTurn is the edge's real turn over a caller who answers `callerLines` in
 * order (silence after), with the edge's early answers: a turn whose request differs from what the
 * edge asked early shows as a model request more.
 */
async function startConverseEdge(callerLines: string[], model: ChatCompletionsClient | null = modelClient()): Promise<StandIn> {
  const llm = model ?? undefined;
  const earlyTurns = new EarlyModelTurns();
  return startStandInEdge(env, { turns: [] as ConverseTurnInput[], askedEarly: 0 }, (state): MediaEdgeConverseActivities => {
    const voice = scriptedCallerVoice(callerLines, state.spoken);
    return {
      async converseTurn(input) {
        state.turns.push(input);
        const result = await runConverseTurn(
          { llm, checkArguments: (schema, value) => { const c = checkJson(schema, value); return c.ok ? undefined : c.message; }, retryDelayMs: 10, earlyTurns },
          voice,
          input,
          new AbortController().signal,
        );
        if (result.timings?.askedEarlyMs !== undefined) state.askedEarly++;
        return result;
      },
    };
  });
}

function modelClient(): ChatCompletionsClient {
  return new ChatCompletionsClient({ baseUrl: fake.baseUrl, apiKey: API_KEY, model: 'fake-model', timeoutMs: 10_000 });
}

const BOOKING_TOOLS = [
  {
    name: 'book_appointment',
    description: 'Books the appointment once the caller agreed on a day and a time.',
    parameters: {
      type: 'object',
      properties: { day: { type: 'string' }, time: { type: 'string', pattern: '^\\d{2}:\\d{2}$' } },
      required: ['day', 'time'],
      additionalProperties: false,
    },
    next: 'booked',
    variable: 'answers.booking',
  },
  {
    name: 'transfer_to_staff',
    description: 'The caller wants a person.',
    parameters: { type: 'object', properties: {} },
    next: 'staff',
  },
];

function bookingScript(extra: { maxTurns?: number; onError?: boolean; onMaxTurns?: boolean; modelLimits?: { turns_per_call?: number; tokens_per_call?: number } } = {}): ScriptDefinitionInput {
  return {
    name: 'Booking',
    ...(extra.modelLimits ? { model_limits: extra.modelLimits } : {}),
    structured_data: { day: 'answers.booking.day', time: 'answers.booking.time' },
    steps: [
      {
        id: 'talk',
        type: 'converse',
        // The test's fake model finds its call by the id in the prompt.
        instructions: 'You book appointments at the clinic for {{contact.first_name}} on call {{call.id}}. Be brief.',
        first_line: 'Hello {{contact.first_name}}, this is the clinic. When would you like to come in?',
        ...(extra.maxTurns ? { max_turns: extra.maxTurns } : {}),
        tools: BOOKING_TOOLS,
        ...(extra.onError ? { on_error: 'sorry' } : {}),
        ...(extra.onMaxTurns ? { on_max_turns: 'later' } : {}),
      },
      { id: 'booked', type: 'end', text: 'You are booked on {{steps.talk.tool.arguments.day}} at {{answers.booking.time}}. Goodbye.' },
      { id: 'staff', type: 'end', text: 'Let me find someone for you.' },
      { id: 'later', type: 'end', text: 'We will call you back to find a time.' },
      { id: 'sorry', type: 'end', text: 'Sorry, something went wrong. We will call you back.' },
    ],
  };
}

/** A web call of a new team answered on `edge`; the fake answers it with `script` in order. */
async function converseCall(definition: ScriptDefinitionInput, edge: StandIn, script: Array<FakeReply | ((request: FakeChatRequest) => FakeReply)>): Promise<string> {
  const team = await createTestTeam(pool);
  const callId = await scheduleWebCall(deps, team.teamId, await storeCheckedScript(pool, team.teamId, definition), 'Ada');
  replies.set(callId, [...script]);
  await answerOnEdge(env, callId, edge);
  return callId;
}

const result = (callId: string) => calls.result(callId, 60_000);
const transcript = async (callId: string) => (await callRow(pool, callId)).conversation.map((t) => `${t.role}: ${t.text}`);
const requestsOf = (callId: string) => fake.requests.filter((r) => String(r.body.messages[0]?.content ?? '').includes(callId));
const notesOf = async (callId: string, kind: string) => (await callRow(pool, callId)).system_notes.filter((n) => n.kind === kind);

describe('the converse step', { concurrency: true }, () => {
  test('the model talks turn by turn, books through a tool, and the script goes on at its next', async () => {
    const edge = await startConverseEdge(['Monday morning would be good.', 'Ten o clock please.']);
    try {
      const callId = await converseCall(bookingScript(), edge, [
        { text: 'Monday works. What time suits you?' },
        { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Monday","time":"10:00"}' }] },
      ]);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      assert.deepEqual(await transcript(callId), [
        'agent: Hello Ada, this is the clinic. When would you like to come in?',
        'user: Monday morning would be good.',
        'agent: Monday works. What time suits you?',
        'user: Ten o clock please.',
        'agent: You are booked on Monday at 10:00. Goodbye.',
      ]);
      const requests = requestsOf(callId);
      assert.equal(requests.length, 2, 'one model request a turn');
      // What the model sees: the rendered instructions, the conversation, the tools; never the key.
      assert.deepEqual(
        requests[1].body.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`),
        [
          `system: You book appointments at the clinic for Ada on call ${callId}. Be brief.`,
          'assistant: Hello Ada, this is the clinic. When would you like to come in?',
          'user: Monday morning would be good.',
          'assistant: Monday works. What time suits you?',
          'user: Ten o clock please.',
        ],
      );
      assert.deepEqual(requests[0].body.tools.map((t: { function: { name: string } }) => t.function.name), ['book_appointment', 'transfer_to_staff']);
      assert.equal(requests[0].body.stream, true, 'streamed');
      for (const r of requests) assert.ok(!JSON.stringify(r.body).includes(API_KEY), 'the key is never in what the model reads');

      const row = await callRow(pool, callId);
      const view = callResultView(row);
      assert.equal(view.usage?.model_turns, 2);
      assert.ok((view.usage?.prompt_tokens ?? 0) > 0 && (view.usage?.completion_tokens ?? 0) > 0);
      assert.equal(view.usage?.total_tokens, (view.usage?.prompt_tokens ?? 0) + (view.usage?.completion_tokens ?? 0));
      const [note] = await notesOf(callId, 'converse');
      assert.match(note.text, /the model called book_appointment; the script goes on at step "booked"/);
      assert.deepEqual((note.data as { arguments?: unknown }).arguments, { day: 'Monday', time: '10:00' });
      const scriptResult = row.system_notes.find((n) => n.kind === 'script_result');
      assert.deepEqual((scriptResult?.data as { structured_data?: unknown }).structured_data, { day: 'Monday', time: '10:00' }, "the tool's variable feeds structured_data");

      // Each turn an activity on the edge, never retried, its prompt and answer in the history.
      const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
      const scheduled = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : []));
      const turns = scheduled.filter((a) => a.activityType?.name === 'converseTurn');
      assert.equal(turns.length, 3, 'the first line and two model turns');
      for (const t of turns) {
        assert.equal(t.taskQueue?.name, edge.taskQueue);
        assert.equal(t.retryPolicy?.maximumAttempts, 1);
      }
      assert.deepEqual(edge.turns.map((t) => t.turn), [0, 1, 2]);
      // Both model turns were asked by the edge as soon as the caller had answered, with what the workflow then asked (else a request more above).
      assert.equal(edge.askedEarly, 2, 'both model turns took the answer asked early');
      assert.deepEqual(edge.turns[0].next?.messages?.map((m) => m.role), ['system'], "the first line's next turn: the conversation before it");
    } finally {
      await edge.stop();
    }
  });

  test('an invalid tool call is answered back once as a tool error; the corrected call goes on', async () => {
    const edge = await startConverseEdge(['Tuesday at nine.']);
    try {
      const callId = await converseCall(bookingScript(), edge, [
        { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Tuesday","time":"nine"}' }] },
        { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Tuesday","time":"09:00"}' }] },
      ]);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const [first, second] = requestsOf(callId);
      assert.ok(first && second);
      const tail = second.body.messages.slice(-2);
      assert.equal(tail[0].role, 'assistant');
      assert.equal(tail[0].tool_calls[0].function.name, 'book_appointment');
      assert.equal(tail[1].role, 'tool');
      assert.equal(tail[1].tool_call_id, tail[0].tool_calls[0].id);
      assert.match(tail[1].content, /time: must match pattern/);
      assert.equal((await notesOf(callId, 'converse_tool_error')).length, 1);
      assert.deepEqual((await transcript(callId)).slice(-1), ['agent: You are booked on Tuesday at 09:00. Goodbye.']);
    } finally {
      await edge.stop();
    }
  });

  test('a second invalid call (malformed JSON) goes to on_error', async () => {
    const edge = await startConverseEdge(['Tuesday at nine.']);
    try {
      const callId = await converseCall(bookingScript({ onError: true }), edge, [
        { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Tuesday"' }] },
        { toolCalls: [{ name: 'cancel_everything', arguments: '{}' }] },
      ]);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      assert.deepEqual((await transcript(callId)).slice(-1), ['agent: Sorry, something went wrong. We will call you back.']);
      const [note] = await notesOf(callId, 'converse');
      assert.match(note.text, /called a tool wrongly again \(cancel_everything: there is no tool named cancel_everything/);
    } finally {
      await edge.stop();
    }
  });

  test('max_turns without a tool call goes to on_max_turns', async () => {
    const edge = await startConverseEdge(['Hmm.', 'Let me think.', 'Not sure.']);
    try {
      const callId = await converseCall(bookingScript({ maxTurns: 2, onMaxTurns: true }), edge, [{ text: 'Which day suits you?' }, { text: 'Any day this week?' }, { text: 'never asked' }]);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      assert.equal(requestsOf(callId).length, 2, 'no third model turn');
      assert.deepEqual((await transcript(callId)).slice(-1), ['agent: We will call you back to find a time.']);
      const [note] = await notesOf(callId, 'converse');
      assert.equal((note.data as { reached?: string }).reached, 'max_turns');
    } finally {
      await edge.stop();
    }
  });

  test("the script's model_limits cap the call's tokens: past the cap, on_max_turns", async () => {
    const edge = await startConverseEdge(['Hmm.', 'Let me think.']);
    try {
      const callId = await converseCall(bookingScript({ onMaxTurns: true, modelLimits: { tokens_per_call: 100 } }), edge, [
        { text: 'Which day suits you? '.repeat(20).trim() },
        { text: 'never asked' },
      ]);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const [request] = requestsOf(callId);
      assert.ok(request.body.max_tokens <= 100 && request.body.max_tokens >= 1, `max_tokens ${request.body.max_tokens} within the cap`);
      assert.equal(requestsOf(callId).length, 1);
      const [note] = await notesOf(callId, 'converse');
      assert.equal((note.data as { reached?: string }).reached, 'tokens_per_call');
    } finally {
      await edge.stop();
    }
  });

  test("the model service failing (500, retried once) goes to on_error; what was said before stays", async () => {
    const edge = await startConverseEdge(['Monday.']);
    try {
      const callId = await converseCall(bookingScript({ onError: true }), edge, [{ text: 'Monday is fine.' }, { status: 500 }, { status: 500 }]);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      assert.equal(requestsOf(callId).length, 3, 'the failed turn tried twice before any word was said');
      assert.deepEqual((await transcript(callId)).slice(-2), ['agent: Monday is fine.', 'agent: Sorry, something went wrong. We will call you back.']);
      const [note] = await notesOf(callId, 'converse');
      assert.match(note.text, /the model service failed \(server_error/);
      assert.equal(callResultView(await callRow(pool, callId)).usage?.model_turns, 2);
    } finally {
      await edge.stop();
    }
  });

  test('a stream cut mid-sentence without on_error: the words spoken stay, the call ends failed / provider_error with a System Note', async () => {
    const edge = await startConverseEdge([]);
    try {
      const callId = await converseCall(bookingScript(), edge, [{ text: 'Thanks for calling. We have Monday and Tuesday open.', cutAfterTokens: 5 }]);
      assert.deepEqual(await result(callId), { callId, status: 'failed', endReason: 'provider_error' });
      assert.equal(requestsOf(callId).length, 1, 'not retried once words were spoken');
      assert.deepEqual((await transcript(callId)).slice(-1), ['agent: Thanks for calling.']);
      const [note] = await notesOf(callId, 'converse');
      assert.match(note.text, /the model service failed \(stream_cut.*the script stops and the call ends/);
      assert.equal(edge.hangUps, 1, 'the agent hangs up');
    } finally {
      await edge.stop();
    }
  });

  test('no model configured on the edge: the step goes to on_error, with a System Note saying so', async () => {
    const edge = await startConverseEdge([], null);
    try {
      const callId = await converseCall(bookingScript({ onError: true }), edge, []);
      assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
      const [note] = await notesOf(callId, 'converse');
      assert.match(note.text, /not_configured: no language model is configured/);
    } finally {
      await edge.stop();
    }
  });
});
