// Converse turns as the call workflow and the edge's turn code meet (issue 29), over the
// time-skipping server, the model being the local fake:
// - the caller hangs up during a turn: the words of the model's answer that the caller heard
//   before the end are in the transcript, though the turn's activity failed and so never
//   returned them. The stand-in edge's converseTurn is the edge's real activity
//   (createMediaEdgeActivities) over a conversation engine on an in-memory channel paced at
//   20 ms, Festival speaking; the caller hangs up once the answer's first sentence has played;
// - the edge asks each next model turn early, as soon as the caller's answer is recognised:
//   the workflow's next turn must ask exactly that (else the early answer is cancelled and the
//   model asked again). The stand-in edge runs the edge's turn code over a scripted caller.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ChatCompletionsClient } from '../../src/llm/chatCompletions.js';
import { createLogger } from '../../src/logging/logger.js';
import { createMediaEdgeActivities } from '../../src/mediaEdge/activities.js';
import { runConverseTurn } from '../../src/mediaEdge/conversation/converseTurn.js';
import { EarlyModelTurns } from '../../src/mediaEdge/conversation/earlyModelTurns.js';
import { ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import { LiveCalls } from '../../src/mediaEdge/liveCalls.js';
import { FestivalSynthesizer } from '../../src/mediaEdge/speech/festival.js';
import { PocketsphinxRecognizer } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { conversationOf } from '../../src/mediaEdge/voiceEdge.js';
import { createTestTeam } from '../support/app.js';
import { callRow, callTestConfig } from '../support/calls.js';
import { callWorkflowEnv } from '../support/callWorkflowEnv.js';
import { startFakeChatCompletions, type FakeChatCompletions, type FakeReply } from '../support/fakeChatCompletions.js';
import { LoopbackChannel } from '../support/loopbackChannel.js';
import { storeCheckedScript } from '../support/scripts.js';
import { answerOnEdge, scheduleWebCall, scriptedCallerVoice, startStandInEdge } from '../support/standInEdge.js';
import type { ConverseTurnInput } from '../../workflows/converseContracts.js';

const FIRST_SENTENCE = 'We have openings on Monday at nine in the morning.';
const ANSWER = `${FIRST_SENTENCE} We also have Tuesday at two in the afternoon, and Wednesday at four, and Thursday at ten. Which of these suits you best?`;

const calls = callWorkflowEnv(callTestConfig({ SIMULATOR_CALL_SECONDS: '1' }));
/** The model's answers for the early-turn test's call, in order (the call id is in its system prompt); every other call: ANSWER. */
const scripted = new Map<string, FakeReply[]>();
const synthesizer = new FestivalSynthesizer();
const recognizer = new PocketsphinxRecognizer();
let fake: FakeChatCompletions;

before(async () => {
  await Promise.all([synthesizer.warmUp(), recognizer.warmUp()]);
  fake = await startFakeChatCompletions({
    reply: (request) => {
      const callId = /on call (\S+)\./.exec(String(request.body.messages[0]?.content ?? ''))?.[1];
      return (callId && scripted.get(callId)?.shift()) || { text: ANSWER };
    },
    firstTokenMs: 300,
    tokensPerSecond: 40,
  });
});
after(async () => {
  await fake?.close();
  await Promise.all([synthesizer.close(), recognizer.close()]);
});

test("the caller hangs up while the model's answer plays: what they heard of it is in the transcript", async () => {
  const live = new LiveCalls();
  let channel: LoopbackChannel | undefined;
  const edge = await startStandInEdge(calls.env, {}, () =>
    createMediaEdgeActivities({ calls: live, logger: createLogger('silent'), converse: { llm: new ChatCompletionsClient({ baseUrl: fake.baseUrl, model: 'fake-model', timeoutMs: 20_000 }), checkArguments: () => undefined } }),
  );
  try {
    const team = await createTestTeam(calls.pool);
    const scriptId = await storeCheckedScript(calls.pool, team.teamId, {
      name: 'Hang-up mid-answer',
      steps: [{ id: 'talk', type: 'converse', instructions: 'You book appointments.', tools: [{ name: 'book', description: 'Books it.', parameters: { type: 'object', properties: {} }, next: 'done' }] }, { id: 'done', type: 'end', text: 'Goodbye.' }],
    });
    const callId = await scheduleWebCall(calls.deps, team.teamId, scriptId);
    channel = new LoopbackChannel({ backgroundDbfs: -65 });
    const engine = new ConversationEngine({ channel, synthesizer, recognizer });
    live.add({ callId, channel, conversation: conversationOf(engine, () => []), hangUp: async () => channel?.close('local_hangup') });
    await answerOnEdge(calls.env, callId, edge);

    // The first sentence's frames: Festival's rendering of it, played; then the caller hangs up.
    const firstSentenceFrames = await (async () => {
      let frames = 0;
      for await (const frame of synthesizer.synthesize(FIRST_SENTENCE)) frames += frame.length > 0 ? 1 : 0;
      return frames;
    })();
    await channel.agentFrames(firstSentenceFrames + 10);
    channel.close('remote_hangup');
    engine.close();

    const result = await calls.result(callId);
    assert.ok(result.status, 'the call ended');
    const conversation = (await callRow(calls.pool, callId)).conversation.map((t) => `${t.role}: ${t.text}`);
    const agent = conversation.filter((line) => line.startsWith('agent: '));
    assert.equal(agent.length, 1, `one agent line: ${conversation.join(' | ')}`);
    const said = agent[0].slice('agent: '.length);
    assert.ok(said.startsWith(FIRST_SENTENCE), `the first sentence, heard whole: "${said}"`);
    assert.ok(said.length < ANSWER.length, 'not the words that never played');
  } finally {
    channel?.close();
    await edge.stop();
  }
});

test('the edge asks each next model turn as soon as the caller has answered, exactly as the workflow then asks it: one model request a turn', async () => {
  const lines = ['Monday please.', 'Ten in the morning.'];
  let askedEarly = 0;
  const earlyTurns = new EarlyModelTurns();
  const llm = new ChatCompletionsClient({ baseUrl: fake.baseUrl, model: 'fake-model', timeoutMs: 20_000 });
  const voice = scriptedCallerVoice(lines);
  const edge = await startStandInEdge(calls.env, {}, () => ({
    async converseTurn(input: ConverseTurnInput) {
      const result = await runConverseTurn({ llm, checkArguments: () => undefined, earlyTurns }, voice, input, new AbortController().signal);
      if (result.timings?.askedEarlyMs !== undefined) askedEarly++;
      return result;
    },
  }));
  try {
    const team = await createTestTeam(calls.pool);
    const scriptId = await storeCheckedScript(calls.pool, team.teamId, {
      name: 'Early turns',
      steps: [
        {
          id: 'talk',
          type: 'converse',
          instructions: 'You book appointments on call {{call.id}}.',
          first_line: 'Hello, when would you like to come in?',
          tools: [{ name: 'book', description: 'Books it.', parameters: { type: 'object', properties: {} }, next: 'done' }],
        },
        { id: 'done', type: 'end', text: 'Goodbye.' },
      ],
    });
    const callId = await scheduleWebCall(calls.deps, team.teamId, scriptId);
    scripted.set(callId, [{ text: 'Monday works. What time?' }, { toolCalls: [{ name: 'book', arguments: '{}' }] }]);
    const before = fake.requests.length;
    await answerOnEdge(calls.env, callId, edge);
    const result = await calls.result(callId);
    assert.equal(result.status, 'completed', JSON.stringify(result));
    const requests = fake.requests.slice(before).filter((r) => String(r.body.messages[0]?.content ?? '').includes(callId));
    assert.equal(requests.length, 2, 'two model turns, one request each: each turn took the answer asked early for it');
    assert.equal(askedEarly, 2, 'both model turns were asked early (after the first line, after the first answer)');
    assert.deepEqual(
      requests[1].body.messages.map((m: { role: string }) => m.role),
      ['system', 'assistant', 'user', 'assistant', 'user'],
      'the second turn asked after the whole conversation so far',
    );
  } finally {
    await edge.stop();
  }
});
