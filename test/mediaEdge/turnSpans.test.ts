// Per-turn spans of the conversation engine (docs/observability.md, "Traces"), over the
// in-memory channel paced at 20 ms, with tracing installed and an in-memory exporter. The
// agent's prompt is a tone, the caller's answer a loud tone the energy endpointer hears as
// speech, and the recogniser a stand-in that answers "yes" after 120 ms. Each activity is a
// span of the test's own, as the Temporal interceptor makes one on the edge: the turn hangs
// under the activity that heard the answer, links to the one that replied, and its four
// parts tile it end to end with the engine's own measurements.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { trace, type Span } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import type { RecognitionSession, SpeechRecognizer, SpeechSynthesizer, Transcript } from '../../src/mediaEdge/speech/interfaces.js';
import { installTracing, shutdownTracing } from '../../src/tracing/tracing.js';
import { LoopbackChannel } from '../support/loopbackChannel.js';

const RECOGNITION_MS = 120;
const exporter = new InMemorySpanExporter();
const tracer = trace.getTracer('turn-spans-test');

before(async () => {
  await installTracing({ config: {}, serviceName: 'edge-test', spanProcessor: new SimpleSpanProcessor(exporter) });
});
after(() => shutdownTracing());

/** Every utterance is "yes", known RECOGNITION_MS after the audio ended. */
const slowYes: SpeechRecognizer = {
  name: 'slow-yes',
  start: (): RecognitionSession => ({
    write: () => undefined,
    onPartial: () => () => undefined,
    finish: async (): Promise<Transcript> => {
      await sleep(RECOGNITION_MS);
      return { text: 'yes' };
    },
    abort: () => undefined,
  }),
  warmUp: async () => undefined,
  close: async () => undefined,
};

/** Every line is 200 ms of a 440 Hz tone. */
const tone: SpeechSynthesizer = {
  name: 'tone',
  async *synthesize() {
    for (let f = 0; f < 10; f++) yield Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 440 * (f * FRAME_SAMPLES + i)) / SAMPLE_RATE)));
  },
  warmUp: async () => undefined,
  close: async () => undefined,
};

/** Half a second of a loud voice-band tone. */
const callerSpeech = () => Int16Array.from({ length: SAMPLE_RATE / 2 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / SAMPLE_RATE)));

class KeypadChannel extends LoopbackChannel {
  private readonly digitListeners = new Set<(digit: string) => void>();
  onDigit(listener: (digit: string) => void): () => void {
    this.digitListeners.add(listener);
    return () => this.digitListeners.delete(listener);
  }
  press(keys: string): void {
    for (const key of keys) for (const listener of this.digitListeners) listener(key);
  }
}

/** Runs `work` inside a span of its own, as an activity runs inside the interceptor's. */
async function inActivity<T>(name: string, work: () => Promise<T>): Promise<{ result: T; span: Span }> {
  return tracer.startActiveSpan(name, async (span) => {
    try {
      return { result: await work(), span };
    } finally {
      span.end();
    }
  });
}

const toMs = ([seconds, nanos]: [number, number]) => seconds * 1000 + nanos / 1e6;
const ms = (s: ReadableSpan) => toMs(s.duration);
const close = (a: number, b: number) => Math.abs(a - b) < 0.01;

/** The one turn span exported since the last reset, and its parts in order. */
function exportedTurn(): { turn: ReadableSpan; parts: ReadableSpan[] } {
  const spans = exporter.getFinishedSpans();
  const turns = spans.filter((s) => s.name === 'turn');
  assert.equal(turns.length, 1, `turn spans: ${turns.length}`);
  const [turn] = turns;
  const parts = spans.filter((s) => s.parentSpanId === turn.spanContext().spanId).sort((a, b) => toMs(a.startTime) - toMs(b.startTime));
  assert.deepEqual(
    parts.map((p) => p.name),
    ['turn.endpointing', 'turn.recognition', 'turn.workflow_step', 'turn.synthesis'],
  );
  // End to end: each part starts where the previous ended; together they are the turn.
  assert.deepEqual(parts[0].startTime, turn.startTime);
  for (let i = 1; i < parts.length; i++) assert.deepEqual(parts[i].startTime, parts[i - 1].endTime, parts[i].name);
  assert.deepEqual(parts.at(-1)!.endTime, turn.endTime);
  for (const part of parts) assert.equal(part.spanContext().traceId, turn.spanContext().traceId);
  return { turn, parts };
}

test('a spoken turn is a span under the activity that heard it, linked to the reply, its four parts measured by the engine', async () => {
  exporter.reset();
  const channel = new LoopbackChannel();
  const engine = new ConversationEngine({ channel, synthesizer: tone, recognizer: slowYes });
  try {
    const ask = await inActivity('RunActivity:askCaller', async () => {
      const asking = engine.ask('Is this a good time?', { expect: 'yes_no' }, { noSpeechTimeoutMs: 5000 });
      await channel.agentFrames(10);
      void channel.callerSays(callerSpeech());
      return asking;
    });
    assert.equal(ask.result.kind, 'utterance');
    // The call workflow's step: the answer goes to the workflow, the reply comes back as a new activity.
    await sleep(60);
    const reply = await inActivity('RunActivity:speakToCaller', () => engine.speak('Thank you.'));

    const { turn, parts } = exportedTurn();
    assert.equal(turn.parentSpanId, ask.span.spanContext().spanId, 'the turn hangs under the activity that heard the answer');
    assert.equal(turn.spanContext().traceId, ask.span.spanContext().traceId);
    assert.deepEqual(
      turn.links.map((l) => l.context.spanId),
      [reply.span.spanContext().spanId],
      'linked to the activity that replied',
    );
    const [measured] = engine.turnLatencies;
    assert.ok(close(ms(turn), measured.turnMs), `turn ${ms(turn)} ms, engine ${measured.turnMs} ms`);
    assert.equal(turn.attributes['turn.ms'], measured.turnMs);
    assert.equal(turn.attributes['turn.keyed'], false);
    const [endpointing, recognition, workflowStep, synthesis] = parts.map(ms);
    assert.ok(close(endpointing, measured.endDetectedAt - measured.speechEndedAt));
    assert.ok(close(recognition, measured.recognisedAt - measured.endDetectedAt));
    assert.ok(close(workflowStep, measured.replyRequestedAt - measured.recognisedAt));
    assert.ok(close(synthesis, measured.firstFrameAt - measured.replyRequestedAt));
    // What the test itself spent in each part is a floor.
    assert.ok(endpointing > 0, 'the endpointer waited out its hangover');
    assert.ok(recognition >= RECOGNITION_MS - 1, `recognition ${recognition} ms`);
    assert.ok(workflowStep >= 55, `workflow step ${workflowStep} ms`);
    assert.equal(measured.firstFrameAt, reply.result.firstFrameAt);
  } finally {
    engine.close();
    channel.close();
  }
});

test('a keyed answer is a turn too: no endpointing or recognition time, marked keyed', async () => {
  exporter.reset();
  const channel = new KeypadChannel();
  const engine = new ConversationEngine({ channel, synthesizer: tone, recognizer: slowYes, digitTimeoutMs: 300 });
  try {
    const ask = await inActivity('RunActivity:askCaller', async () => {
      const asking = engine.ask('Please key your account number.', { expect: 'digits' }, { noSpeechTimeoutMs: 5000 });
      await channel.agentFrames(10);
      channel.press('42#');
      return asking;
    });
    assert.deepEqual(ask.result.kind === 'utterance' && ask.result.text, '42');
    await inActivity('RunActivity:speakToCaller', () => engine.speak('Thank you.'));
    const { turn, parts } = exportedTurn();
    assert.equal(turn.parentSpanId, ask.span.spanContext().spanId);
    assert.equal(turn.attributes['turn.keyed'], true);
    assert.deepEqual(parts.slice(0, 2).map(ms), [0, 0]);
  } finally {
    engine.close();
    channel.close();
  }
});
