// The media edge's families that need a call's media to move (docs/observability.md), moved by
// the units that count them, read back through the edge's registry as /metrics serves it: the
// jitter buffer's late frames and underruns, a speech engine given up for a call, the speech
// queue depth, a lost recording upload, and active calls. No processes, no network: fast.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LiveCalls } from '../../src/mediaEdge/liveCalls.js';
import type { PcmFrame } from '../../src/mediaEdge/media/channel.js';
import { uploadRecording } from '../../src/mediaEdge/recording/recordingUpload.js';
import type { CallRecorder } from '../../src/mediaEdge/recording/callRecorder.js';
import { FallbackSynthesizer } from '../../src/mediaEdge/speech/fallbackEngines.js';
import type { SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { CallTurns } from '../../src/mediaEdge/speech/sentenceRendering.js';
import { JitterBuffer } from '../../src/mediaEdge/webrtc/jitterBuffer.js';
import { createLogger } from '../../src/logging/logger.js';
import { edgeRegistry } from '../../src/metrics/edgeMetrics.js';
import { parseExposition, sampleSum } from '../support/prometheusText.js';
import { LoopbackChannel } from '../support/loopbackChannel.js';

const FRAME = 960;
const packet = (n: number) => ({ sequenceNumber: 100 + n, timestamp: 10_000 + n * FRAME, ssrc: 1, payload: Uint8Array.of(n) });

async function read(name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleSum(parseExposition(await edgeRegistry.metrics()), name, labels);
}

test('a late packet and an empty play-out tick count as a late frame and an underrun', async () => {
  const late = await read('voice_agent_jitter_buffer_late_frames_total');
  const underruns = await read('voice_agent_jitter_buffer_underruns_total');
  const jb = new JitterBuffer({ clockRate: 48_000 });
  jb.push(packet(0));
  for (let i = 0; i < 6; i++) {
    if (jb.take()) jb.advance(FRAME);
    else jb.conceal(FRAME);
  }
  assert.equal(jb.push(packet(0)), 'late');
  assert.equal((await read('voice_agent_jitter_buffer_late_frames_total')) - late, jb.stats.late);
  assert.equal((await read('voice_agent_jitter_buffer_underruns_total')) - underruns, jb.stats.underruns);
  assert.ok(jb.stats.late === 1 && jb.stats.underruns > 0);
});

test('a synthesis engine given up for a call counts one error with its stage and name', async () => {
  const before = await read('voice_agent_speech_engine_errors_total', { stage: 'synthesis', engine: 'broken-cloud' });
  const frame: PcmFrame = new Int16Array(320);
  const broken: SpeechSynthesizer = {
    name: 'broken-cloud',
    async *synthesize() {
      throw new Error('vendor down');
    },
    warmUp: async () => {},
    close: async () => {},
  };
  const offline: SpeechSynthesizer = {
    name: 'offline',
    async *synthesize() {
      yield frame;
    },
    warmUp: async () => {},
    close: async () => {},
  };
  const synth = new FallbackSynthesizer(broken, offline, () => {});
  for (let line = 0; line < 2; line++) for await (const _ of synth.synthesize('Hello.')) void _;
  assert.equal((await read('voice_agent_speech_engine_errors_total', { stage: 'synthesis', engine: 'broken-cloud' })) - before, 1, 'once per call, not per line');
});

test('sentences waiting for the shared synthesis process show in the queue depth', async () => {
  const turns = new CallTurns(8, () => new Error('full'));
  let release!: () => void;
  const busy = new Promise<void>((resolve) => (release = resolve));
  const first = turns.run('call-a', () => busy, async () => undefined);
  const waiting = [turns.run('call-b', async () => undefined, async () => undefined), turns.run('call-a', async () => undefined, async () => undefined)];
  assert.equal(turns.queued, 2);
  assert.ok((await read('voice_agent_speech_queue_depth', { stage: 'synthesis' })) >= 2);
  release();
  await Promise.all([first, ...waiting]);
  assert.equal(turns.queued, 0);
});

test('a recording upload that fails every attempt counts its retries and one loss', async () => {
  const retried = await read('voice_agent_recording_upload_failures_total', { result: 'retried' });
  const lost = await read('voice_agent_recording_upload_failures_total', { result: 'lost' });
  const recorder = {
    key: 'team/call.wav',
    finish: async () => {
      throw new Error('store down');
    },
    stored: async () => false,
    discard: async () => {},
  } as unknown as CallRecorder;
  const result = await uploadRecording(recorder, { policy: { attempts: 3, firstDelayMs: 1, maxDelayMs: 1 }, logger: createLogger('silent'), sleep: async () => {} });
  assert.equal(result.outcome, 'lost');
  assert.equal((await read('voice_agent_recording_upload_failures_total', { result: 'retried' })) - retried, 2);
  assert.equal((await read('voice_agent_recording_upload_failures_total', { result: 'lost' })) - lost, 1);
});

test('a call held by the edge counts as active until its media ends', async () => {
  const before = await read('voice_agent_media_edge_active_calls');
  const calls = new LiveCalls();
  const channel = new LoopbackChannel();
  calls.add({ callId: 'call-1', channel, conversation: {} as never, hangUp: async () => {} });
  assert.equal((await read('voice_agent_media_edge_active_calls')) - before, 1);
  channel.close();
  await channel.closed;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal((await read('voice_agent_media_edge_active_calls')) - before, 0);
});
