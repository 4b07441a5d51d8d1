// One converse turn on the edge (src/mediaEdge/conversation/converseTurn.ts) over the conversation
// engine on an in-memory channel paced at 20 ms, with the real offline engines (Festival speaks,
// pocketsphinx listens) and the real chat-completions client streaming from the local fake at
// a model's pace: the first sentence plays before the model has finished; a barge-in stops the
// agent and what was said is only what played; a tool call's text is said and nothing heard.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ConversationEngine, saidOf } from '../../src/mediaEdge/conversation/engine.js';
import { runConverseTurn, type ConverseVoice } from '../../src/mediaEdge/conversation/converseTurn.js';
import { ChatCompletionsClient } from '../../src/llm/chatCompletions.js';
import { checkJson } from '../../src/llm/jsonSchema.js';
import { FestivalSynthesizer } from '../../src/mediaEdge/speech/festival.js';
import { PocketsphinxRecognizer } from '../../src/mediaEdge/speech/pocketsphinx.js';
import type { ConverseTurnInput } from '../../workflows/converseContracts.js';
import { LoopbackChannel } from '../support/loopbackChannel.js';
import { spoken } from '../support/spokenAudio.js';
import { startFakeChatCompletions, type FakeChatCompletions, type FakeReply } from '../support/fakeChatCompletions.js';

const LONG_ANSWER =
  'Thank you for calling the clinic. We have openings on Monday at nine in the morning and on Tuesday at two in the afternoon. Please tell me which of these suits you best, and I will book it for you.';

describe('a converse turn on the edge', () => {
  const synthesizer = new FestivalSynthesizer();
  const recognizer = new PocketsphinxRecognizer();
  let fake: FakeChatCompletions;
  let next: FakeReply = { text: 'Hello.' };
  let channel: LoopbackChannel;
  let engine: ConversationEngine;

  before(async () => {
    await Promise.all([synthesizer.warmUp(), recognizer.warmUp(), spoken('stop please')]);
    // A model's pace: the first token after 300 ms, then 40 tokens a second.
    fake = await startFakeChatCompletions({ reply: () => next, firstTokenMs: 300, tokensPerSecond: 40 });
  });
  after(async () => {
    await fake?.close();
    await Promise.all([synthesizer.close(), recognizer.close()]);
  });
  afterEach(() => {
    engine.close();
    channel.close();
  });

  function open(): ConverseVoice {
    channel = new LoopbackChannel({ backgroundDbfs: -65 });
    engine = new ConversationEngine({ channel, synthesizer, recognizer });
    return {
      speakSentences: (source, opts) => engine.speakSentences(source, opts),
      listen: async (opts) => {
        const heard = await engine.listen(opts);
        return heard.kind === 'utterance' && heard.text ? { kind: 'utterance', text: heard.text } : { kind: 'silence' };
      },
    };
  }

  const deps = () => ({
    llm: new ChatCompletionsClient({ baseUrl: fake.baseUrl, model: 'fake-model', timeoutMs: 20_000 }),
    checkArguments: (schema: Record<string, unknown>, value: unknown) => {
      const checked = checkJson(schema, value);
      return checked.ok ? undefined : checked.message;
    },
  });
  const input = (extra: Partial<ConverseTurnInput> = {}): ConverseTurnInput => ({
    callId: 'call-1',
    stepId: 'talk',
    turn: 1,
    messages: [{ role: 'system', content: 'You book appointments.' }],
    tools: [],
    maxTokens: 400,
    noSpeechTimeoutMs: 1500,
    ...extra,
  });

  it("speaks the first sentence while the model is still writing the rest, then hears the caller's answer (silence here)", async () => {
    const voice = open();
    next = { text: LONG_ANSWER };
    const completedBefore = fake.completed;
    const turn = runConverseTurn(deps(), voice, input(), new AbortController().signal);
    await channel.agentFrames(1);
    assert.equal(fake.completed, completedBefore, 'the agent was heard before the model finished its answer');
    const result = await turn;
    assert.equal(result.outcome, 'answered');
    assert.equal(result.interrupted, false);
    assert.equal(result.said, LONG_ANSWER, 'every sentence played');
    assert.equal(result.content, LONG_ANSWER);
    assert.deepEqual(result.heard, { kind: 'silence' });
    assert.ok(result.usage.completion_tokens > 30, 'the usage of the answer');
    const { firstTokenMs, firstSentenceMs, firstAudioMs } = result.timings ?? {};
    assert.ok(firstTokenMs !== undefined && firstSentenceMs !== undefined && firstAudioMs !== undefined);
    assert.ok(firstTokenMs <= firstSentenceMs && firstSentenceMs <= firstAudioMs, 'token, then sentence, then audio');
  });

  it('a barge-in stops the agent mid-answer: said holds only what played, and the caller is heard', async () => {
    const voice = open();
    next = { text: LONG_ANSWER };
    const turn = runConverseTurn(deps(), voice, input(), new AbortController().signal);
    await channel.agentFrames(60);
    void channel.callerSays(await spoken('stop please'));
    const result = await turn;
    assert.equal(result.outcome, 'answered');
    assert.equal(result.interrupted, true);
    assert.ok(result.said.length > 0 && result.said.length < LONG_ANSWER.length / 2, `said: "${result.said}"`);
    assert.ok(LONG_ANSWER.startsWith(result.said), 'what was said is the start of the answer');
    assert.equal(result.content, LONG_ANSWER, 'the whole answer is still known (and counted)');
    assert.equal(result.heard?.kind, 'utterance');
  });

  it('a tool call: the words before it are said, nothing is heard, the arguments are checked', async () => {
    const voice = open();
    next = { text: 'One moment.', toolCalls: [{ name: 'book', arguments: '{"day":"Monday"}' }, { name: 'book', arguments: '{"day":3}' }] };
    const tools = [{ name: 'book', description: 'Books it.', parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] } }];
    const result = await runConverseTurn(deps(), voice, input({ tools }), new AbortController().signal);
    assert.equal(result.outcome, 'tool_calls');
    assert.equal(result.said, 'One moment.');
    assert.equal(result.heard, undefined);
    assert.deepEqual(result.toolCalls[0].value, { day: 'Monday' });
    assert.equal(result.toolCalls[1].value, undefined);
    assert.match(result.toolCalls[1].error ?? '', /day: must be string/);
  });
});

describe('what a barge-in leaves said', () => {
  it('whole sentences that played, and the cut one up to its share of frames', () => {
    const spans = [
      { text: 'Thank you for calling.', frames: 40 },
      { text: 'We have openings on Monday and Tuesday.', frames: 70 },
      { text: 'Which suits you?', frames: 30 },
    ];
    assert.equal(saidOf(spans, 140), 'Thank you for calling. We have openings on Monday and Tuesday. Which suits you?');
    assert.equal(saidOf(spans, 75), 'Thank you for calling. We have openings');
    assert.equal(saidOf(spans, 40), 'Thank you for calling.');
    assert.equal(saidOf(spans, 5), '');
  });
});
