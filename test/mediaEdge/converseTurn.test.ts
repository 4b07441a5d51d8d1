// One converse turn on the edge (src/mediaEdge/conversation/converseTurn.ts) over the conversation
// engine on an in-memory channel paced at 20 ms, with the real offline engines (Festival speaks,
// pocketsphinx listens) and the real chat-completions client streaming from the local fake at
// a model's pace: the first sentence plays before the model has finished; a barge-in stops the
// agent and what was said is only what played; a tool call's text is said and nothing heard.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { ConversationEngine, saidOf } from '../../src/mediaEdge/conversation/engine.js';
import { runConverseTurn, type ConverseTurnDeps, type ConverseVoice } from '../../src/mediaEdge/conversation/converseTurn.js';
import { EarlyModelTurns } from '../../src/mediaEdge/conversation/earlyModelTurns.js';
import { ChatCompletionsClient } from '../../src/llm/chatCompletions.js';
import { checkJson } from '../../src/llm/jsonSchema.js';
import { FestivalSynthesizer } from '../../src/mediaEdge/speech/festival.js';
import { PocketsphinxRecognizer } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { conversationOf } from '../../src/mediaEdge/voiceEdge.js';
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

  it("the caller's turn ends after the converse hangover: a pause the engine's own 500 ms bridges ends it, and the next listen hears the rest; a plain listen after it hears both parts as one", async () => {
    open();
    const conversation = conversationOf(engine, () => [], { endSilenceMs: 300 });
    // The second part long enough to be still under way when the first has been recognised on a busy machine.
    const [first, second] = await Promise.all([spoken('on monday'), spoken('at ten in the morning or at eleven if ten is taken or any time after lunch on the same day')]);
    // A 450 ms pause: longer than the converse hangover, shorter than the engine's 500 ms.
    const withPause = new Int16Array(first.length + 7_200 + second.length);
    withPause.set(first);
    withPause.set(second, first.length + 7_200);
    const signal = new AbortController().signal;

    const said = channel.callerSays(withPause);
    const turn = await conversation.listen!({ timeoutMs: 3_000, signal, converseTurn: true });
    assert.equal(turn.kind, 'utterance', 'the first part was heard');
    const rest = await engine.listen({ timeoutMs: 3_000, signal });
    assert.equal(rest.kind, 'utterance', 'the part after the pause is an utterance of its own');
    await said;

    const saidAgain = channel.callerSays(withPause);
    const whole = await engine.listen({ timeoutMs: 3_000, signal });
    assert.equal(whole.kind, 'utterance');
    await saidAgain;
    assert.equal((await engine.listen({ timeoutMs: 600, signal })).kind, 'silence', "without the converse turn the engine's hangover bridged the pause: nothing was left");
  });

  /** The caller barges in on a long answer; the turn then ends with their words heard. The model's answers after it: `then`. */
  async function turnAnswered(d: ConverseTurnDeps, turnInput: ConverseTurnInput, voice: ConverseVoice, then: FakeReply) {
    next = { text: LONG_ANSWER };
    const asked = fake.requests.length;
    const turn = runConverseTurn(d, voice, turnInput, new AbortController().signal);
    await requestsReach(asked + 1);
    next = then;
    await channel.agentFrames(20);
    void channel.callerSays(await spoken('stop please'));
    const result = await turn;
    assert.equal(result.heard?.kind, 'utterance');
    return result;
  }
  const requestsReach = async (count: number) => {
    const deadline = Date.now() + 20_000;
    while (fake.requests.length < count) {
      assert.ok(Date.now() < deadline, `the model got ${fake.requests.length} requests, not ${count}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it("the next turn is asked of the model once the caller's answer is recognised: the next turn's activity, asking exactly that, takes the answer over (one request)", async () => {
    const voice = open();
    const earlyTurns = new EarlyModelTurns();
    const d = { ...deps(), earlyTurns };
    const first = input({ next: { tokensLeft: 1_000, maxReplyTokens: 400 } });
    const before = fake.requests.length;
    const result = await turnAnswered(d, first, voice, { text: 'Monday works well.' });
    assert.equal(earlyTurns.waiting, 1, 'the next turn was asked');
    const heard = result.heard?.kind === 'utterance' ? result.heard.text : '';
    const second = await runConverseTurn(
      d,
      voice,
      input({ turn: 2, messages: [...first.messages, { role: 'assistant', content: result.said }, { role: 'user', content: heard }], maxTokens: Math.min(400, 1_000 - result.usage.total_tokens), noSpeechTimeoutMs: 300 }),
      new AbortController().signal,
    );
    assert.equal(second.outcome, 'answered');
    assert.equal(second.said, 'Monday works well.');
    assert.ok(second.timings?.askedEarlyMs !== undefined, 'the answer asked early was taken');
    assert.equal(fake.requests.length, before + 2, 'two requests for the two turns: the second sent none of its own');
    assert.deepEqual(fake.requests.at(-1)?.body.messages.at(-1), { role: 'user', content: heard }, "the early request ends with the caller's words");
    assert.equal(earlyTurns.waiting, 0);
  });

  it('a next turn that asks something else (here another token cap) cancels the early answer and asks its own; none is asked without `next`', async () => {
    const voice = open();
    const earlyTurns = new EarlyModelTurns();
    const d = { ...deps(), earlyTurns };
    const first = input({ next: { tokensLeft: 1_000, maxReplyTokens: 400 } });
    const result = await turnAnswered(d, first, voice, { text: 'Monday works well.' });
    const asked = fake.requests.length;
    const heard = result.heard?.kind === 'utterance' ? result.heard.text : '';
    const second = await runConverseTurn(
      d,
      voice,
      input({ turn: 2, messages: [...first.messages, { role: 'assistant', content: result.said }, { role: 'user', content: heard }], maxTokens: 5, noSpeechTimeoutMs: 300 }),
      new AbortController().signal,
    );
    assert.equal(second.timings?.askedEarlyMs, undefined, 'not taken');
    await requestsReach(asked + 1);
    assert.equal(fake.requests.at(-1)?.body.max_tokens, 5, 'the turn asked its own');
    assert.equal(earlyTurns.waiting, 0);

    await turnAnswered(d, input(), voice, { text: 'Monday works well.' });
    assert.equal(earlyTurns.waiting, 0, 'without next no early ask');
  });

  it('a pause in the caller\'s answer asks the next turn at once: the same words at the end keep that answer (no second request), other words ask again', async () => {
    const earlyTurns = new EarlyModelTurns();
    const d = { ...deps(), earlyTurns };
    /** A caller who pauses after `atPause`, then ends the answer saying `answer`. */
    const caller = (atPause: string, answer: string): ConverseVoice => ({
      speakSentences: async (source) => {
        const said: string[] = [];
        for (let sentence = await source.next(); sentence !== undefined; sentence = await source.next()) said.push(sentence);
        return { said: said.join(' '), interrupted: false };
      },
      listen: async (opts) => {
        // The caller speaks once the agent has finished, and pauses.
        await opts.noSpeechTimerAfter;
        await new Promise((resolve) => setTimeout(resolve, 100));
        opts.onPause?.(atPause);
        // The hangover: the early request reaches the model meanwhile.
        await new Promise((resolve) => setTimeout(resolve, 200));
        return { kind: 'utterance', text: answer };
      },
    });
    const userWords = () => fake.requests.map((r) => r.body.messages.at(-1)).filter((m) => m?.role === 'user').map((m) => m?.content);
    const turnInput = input({ say: 'Which day suits you?', next: { tokensLeft: 1_000, maxReplyTokens: 400 } });

    next = { text: 'Monday works well.' };
    let asked = fake.requests.length;
    await runConverseTurn(d, caller('monday please', 'monday please'), turnInput, new AbortController().signal);
    await requestsReach(asked + 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(fake.requests.length, asked + 1, 'asked once, at the pause');
    assert.deepEqual(userWords().slice(-1), ['monday please']);
    assert.equal(earlyTurns.waiting, 1);

    asked = fake.requests.length;
    await runConverseTurn(d, caller('monday', 'monday at nine'), turnInput, new AbortController().signal);
    await requestsReach(asked + 2);
    assert.deepEqual(userWords().slice(-2), ['monday', 'monday at nine'], 'asked at the pause, then again with the whole answer');
    assert.equal(earlyTurns.waiting, 1, 'only the last is kept');
    earlyTurns.close();
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
