// test-runner: foreground (silence timeouts measured against the wall clock)
// The conversation engine over an in-memory channel paced at 20 ms, with the real offline
// engines: Festival speaks for the agent and (through text2wave) for the caller, pocketsphinx
// listens. Asking, barge-in, silence, and the turn latency figures.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FRAME_MS } from '../../src/mediaEdge/media/channel.js';
import { ChannelClosedError, ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import type { CallConversation } from '../../src/mediaEdge/liveCalls.js';
import { findExecutable } from '../../src/mediaEdge/speech/engineProcess.js';
import { FestivalSynthesizer } from '../../src/mediaEdge/speech/festival.js';
import { PocketsphinxRecognizer } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { LoopbackChannel } from '../support/loopbackChannel.js';
import { spoken } from '../support/spokenAudio.js';

const LONG_LINE = 'Thank you for calling the clinic. Your appointment is on Monday at nine in the morning. Please bring your insurance card and arrive ten minutes early.';

describe('conversation engine', () => {
  const synthesizer = new FestivalSynthesizer();
  const recognizer = new PocketsphinxRecognizer();
  let channel: LoopbackChannel;
  let engine: ConversationEngine;

  before(async () => {
    await Promise.all([synthesizer.warmUp(), recognizer.warmUp(), spoken('Yes, that is correct.'), spoken('stop please')]);
  });
  after(async () => {
    await Promise.all([synthesizer.close(), recognizer.close()]);
  });

  function open(options: { backgroundDbfs?: number } = {}): void {
    channel = new LoopbackChannel(options);
    engine = new ConversationEngine({ channel, synthesizer, recognizer });
  }
  afterEach(() => {
    engine.close();
    channel.close();
  });

  /** Resolves once the agent's audio has started and then all been sent. */
  async function agentFinishes(): Promise<void> {
    await channel.agentFrames(1);
    await channel.drained();
  }

  it('asks, hears the answer spoken into the channel, and times the turn to the next line', async () => {
    open({ backgroundDbfs: -65 });
    const asking = engine.ask('Is your date of birth April third, nineteen eighty five?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 4000 });
    await agentFinishes();
    const promptFrames = channel.sent.length;
    assert.ok(promptFrames * FRAME_MS > 1500, `prompt of ${promptFrames * FRAME_MS} ms`);
    await sleep(300);
    const answerEnds = channel.callerSays(await spoken('Yes, that is correct.')).then(() => performance.timeOrigin + performance.now());
    const heard = await asking;
    assert.equal(heard.kind, 'utterance');
    assert.ok(heard.kind === 'utterance');
    assert.equal(heard.text, 'yes that is correct');
    const spokenUntil = await answerEnds;
    assert.ok(Math.abs(heard.speechEndedAt - spokenUntil) < 150, `speech end off by ${(heard.speechEndedAt - spokenUntil).toFixed(0)} ms`);
    assert.ok(heard.recognitionMs >= 500 && heard.recognitionMs < 1200, `recognised ${heard.recognitionMs.toFixed(0)} ms after the speech ended`);

    const reply = await engine.speak('Thank you.');
    assert.equal(reply.interrupted, false);
    assert.equal(engine.turnLatencies.length, 1);
    const [turn] = engine.turnLatencies;
    assert.equal(turn.firstFrameAt, reply.firstFrameAt);
    assert.ok(turn.turnMs > heard.recognitionMs && turn.turnMs < 1500, `turn of ${turn.turnMs.toFixed(0)} ms`);
  });

  it('barge-in: the caller speaking stops the agent within a few frames and drops the rest', async () => {
    open();
    const speaking = engine.speak(LONG_LINE, { bargeIn: true });
    await channel.agentFrames(25);
    const sentAtBargeIn = channel.sent.length;
    const callerDone = channel.callerSays(await spoken('stop please'));
    const result = await speaking;
    assert.equal(result.interrupted, true);
    // Start detection takes 100 ms (5 frames); a frame or two more may be on the way.
    const sentAfter = channel.sent.length - sentAtBargeIn;
    assert.ok(sentAfter <= 9, `${sentAfter} frames sent after the caller started`);
    assert.equal(result.playedMs, channel.sent.length * FRAME_MS);
    await callerDone;
    assert.equal(channel.sent.length - sentAtBargeIn, sentAfter, 'nothing more was sent');
  });

  it('without barge-in the caller speaking does not stop the line', async () => {
    open();
    const speaking = engine.speak('Please hold while I check your details.', { bargeIn: false });
    await channel.agentFrames(10);
    const callerDone = channel.callerSays(await spoken('stop please'));
    const result = await speaking;
    assert.equal(result.interrupted, false);
    assert.ok(result.playedMs > 1500, `played ${result.playedMs} ms`);
    await callerDone;
  });

  it('the caller answering during the prompt cuts it short and is heard as the answer', async () => {
    open();
    const asking = engine.ask(LONG_LINE, { expect: 'yes_no' }, { noSpeechTimeoutMs: 3000 });
    await channel.agentFrames(15);
    void channel.callerSays(await spoken('Yes, that is correct.'));
    const heard = await asking;
    assert.deepEqual(heard.kind === 'utterance' && heard.text, 'yes that is correct');
    assert.ok(channel.sent.length * FRAME_MS < 2000, 'the prompt stopped early');
  });

  it('silence: no speech within the timeout is a silence outcome, counted from the end of the prompt', async () => {
    open({ backgroundDbfs: -55 });
    const started = performance.now();
    const heard = await engine.listen({ hint: { expect: 'digits' }, timeoutMs: 600 });
    const waited = performance.now() - started;
    assert.deepEqual(heard, { kind: 'silence' });
    assert.ok(waited >= 590 && waited < 1500, `waited ${waited.toFixed(0)} ms`);

    const askStarted = performance.now();
    const asked = await engine.ask('Hello?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 400 });
    assert.deepEqual(asked, { kind: 'silence' });
    const promptMs = channel.sent.length * FRAME_MS;
    assert.ok(performance.now() - askStarted >= promptMs + 390, 'the timeout started after the prompt');
  });

  it('an answer no recogniser takes within POCKETSPHINX_MAX_WAIT_MS counts as not heard: silence, so the workflow asks again', async () => {
    const busy = new PocketsphinxRecognizer({ maxProcesses: 1, maxWaitMs: 100 });
    await busy.warmUp();
    // Another call, still waiting for its caller's answer, holds the only recogniser.
    const otherCall = busy.start({ hint: { expect: 'yes_no' } });
    channel = new LoopbackChannel();
    engine = new ConversationEngine({ channel, synthesizer, recognizer: busy });
    try {
      const asking = engine.ask('Is that right?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 1500 });
      await agentFinishes();
      await channel.callerSays(await spoken('Yes, that is correct.'));
      assert.deepEqual(await asking, { kind: 'silence' });
      assert.ok(busy.slots.stats.refused >= 1, 'the utterance was refused a recogniser');
      assert.equal(busy.slots.stats.peak, 1);
    } finally {
      otherCall.abort();
      await busy.close();
    }
  });

  it('a call that ends while the engine listens rejects with the close reason, and a speak after it too', async () => {
    open();
    const listening = engine.listen({ timeoutMs: 5000 });
    await sleep(60);
    channel.close('remote_hangup');
    await assert.rejects(listening, (err: Error) => err instanceof ChannelClosedError && err.reason === 'remote_hangup');
    await assert.rejects(engine.speak('Hello'), ChannelClosedError);
  });

  it('an aborted speak stops playback and rejects with the abort reason', async () => {
    open();
    const abort = new AbortController();
    const speaking = engine.speak(LONG_LINE, { signal: abort.signal });
    await channel.agentFrames(5);
    abort.abort(new Error('activity cancelled'));
    await assert.rejects(speaking, /activity cancelled/);
    const sent = channel.sent.length;
    await sleep(100);
    assert.equal(channel.sent.length, sent);
  });

  it('is what the media edge activities call a CallConversation', () => {
    open();
    const conversation: CallConversation = engine;
    assert.equal(typeof conversation.ask, 'function');
  });
});

describe('the caller pausing inside an answer', () => {
  // Warm pocketsphinx decoders answer when asked for the text so far (a process per utterance cannot).
  const recognizer = new PocketsphinxRecognizer({ python: findExecutable(process.env.PYTHON3 ?? 'python3'), warmDecoders: 1 });
  let channel: LoopbackChannel;
  let engine: ConversationEngine;
  before(async () => {
    await Promise.all([recognizer.warmUp(), spoken('my name is john smith')]);
  });
  after(() => recognizer.close());
  afterEach(() => {
    engine.close();
    channel.close();
  });

  it('tells the words so far at the pause before the end, a hangover before the answer: the same words as the answer', async () => {
    channel = new LoopbackChannel({ backgroundDbfs: -65 });
    engine = new ConversationEngine({ channel, synthesizer: new FestivalSynthesizer(), recognizer });
    const pauses: { text: string; at: number }[] = [];
    const now = () => performance.timeOrigin + performance.now();
    const listening = engine.listen({ hint: { expect: 'free', latency: 'low' }, timeoutMs: 5000, endSilenceMs: 600, onPause: (text) => pauses.push({ text, at: now() }) });
    await sleep(200);
    void channel.callerSays(await spoken('my name is john smith'));
    const heard = await listening;
    const answeredAt = now();
    assert.ok(heard.kind === 'utterance');
    assert.equal(heard.text, 'my name is john smith');
    const last = pauses.at(-1);
    assert.ok(last, 'a pause was told');
    assert.equal(last.text, heard.text, 'the words at the pause before the end are the answer');
    assert.ok(answeredAt - last.at >= 300, `told ${(answeredAt - last.at).toFixed(0)} ms before the answer (hangover 600 ms, pause 150 ms)`);
  });
});
