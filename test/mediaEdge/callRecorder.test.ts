// The call recorder over a fake MediaChannel and a controlled clock: tones fed on each side
// at known times must come out of the WAV on the right channel at the right time, with the
// silences between kept, whatever the frames' arrival jitter.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, type ChannelCloseReason, type MediaChannel, type PcmFrame } from '../../src/mediaEdge/media/channel.js';
import { CallRecorder } from '../../src/mediaEdge/recording/callRecorder.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { localRecordingStore } from '../../src/recordings/local.js';
import type { RecordingStore } from '../../src/recordings/store.js';
import { decodeWav } from '../../src/recordings/wav.js';

/** A channel whose inbound and outbound frames the test emits. */
class FakeChannel implements MediaChannel {
  private inbound = new Set<(f: PcmFrame) => void>();
  private outbound = new Set<(f: PcmFrame) => void>();
  readonly closed = new Promise<ChannelCloseReason>(() => undefined);
  onInbound(listener: (f: PcmFrame) => void) {
    this.inbound.add(listener);
    return () => this.inbound.delete(listener);
  }
  onOutbound(listener: (f: PcmFrame) => void) {
    this.outbound.add(listener);
    return () => this.outbound.delete(listener);
  }
  enqueue(): void {}
  clear(): void {}
  async drained(): Promise<void> {}
  caller(frame: PcmFrame) {
    for (const l of this.inbound) l(frame);
  }
  agent(frame: PcmFrame) {
    for (const l of this.outbound) l(frame);
  }
  get listeners() {
    return this.inbound.size + this.outbound.size;
  }
}

/** Frame number `index` of a continuous tone (phase carried across frames). */
function toneFrame(hz: number, index: number, amplitude = 8000): PcmFrame {
  const frame = new Int16Array(FRAME_SAMPLES);
  for (let i = 0; i < FRAME_SAMPLES; i++) frame[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * (index * FRAME_SAMPLES + i)) / SAMPLE_RATE));
  return frame;
}
const silence = () => new Int16Array(FRAME_SAMPLES);

/** Power of `hz` in a window (Goertzel), normalised per sample. */
function goertzel(samples: Float64Array, hz: number): number {
  const k = (2 * Math.cos((2 * Math.PI * hz) / SAMPLE_RATE));
  let s1 = 0;
  let s2 = 0;
  for (const x of samples) {
    const s0 = x + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return (s1 * s1 + s2 * s2 - k * s1 * s2) / samples.length ** 2;
}

interface Channels {
  left: Float64Array;
  right: Float64Array;
  seconds: number;
}

function split(wav: Buffer): Channels {
  const { samples, channels, sampleRate } = decodeWav(wav);
  assert.equal(channels, 2);
  assert.equal(sampleRate, SAMPLE_RATE);
  const n = samples.length / 2;
  const left = new Float64Array(n);
  const right = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    left[i] = samples[2 * i];
    right[i] = samples[2 * i + 1];
  }
  return { left, right, seconds: n / SAMPLE_RATE };
}

/** 20 ms windows (start times in seconds) where `channel` carries sound. */
function loudWindows(channel: Float64Array): number[] {
  const out: number[] = [];
  for (let at = 0; at + FRAME_SAMPLES <= channel.length; at += FRAME_SAMPLES) {
    let energy = 0;
    for (let i = at; i < at + FRAME_SAMPLES; i++) energy += channel[i] * channel[i];
    if (Math.sqrt(energy / FRAME_SAMPLES) > 1000) out.push(at / SAMPLE_RATE);
  }
  return out;
}

const near = (a: number, b: number, tolerance = 0.021) => Math.abs(a - b) <= tolerance;

let dir: string;
let spoolDir: string;
let store: RecordingStore;

before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'recorder-store-'));
  spoolDir = mkdtempSync(path.join(os.tmpdir(), 'recorder-spool-'));
  store = localRecordingStore(dir);
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(spoolDir, { recursive: true, force: true });
});

async function stored(key: string): Promise<Buffer> {
  const got = await store.get(key);
  assert.ok(got, `recording ${key} stored`);
  const chunks: Buffer[] = [];
  for await (const c of got.stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('call recorder', () => {
  test('caller left, agent right, on one timeline from the call start; silences kept; one WAV as long as the call', async () => {
    const channel = new FakeChannel();
    let now = 10_000; // the clock does not start at zero: the recorder measures from startedAt
    const key = recordingKey(randomUUID(), randomUUID());
    const recorder = CallRecorder.start(channel, { store, key, clock: () => now, spoolDir });

    // 3 s of call in 1 ms steps. The caller's line sends a frame every 20 ms (jitter of up to
    // 7 ms either way): a 440 Hz tone from 0.5 s to 1.0 s, silence otherwise. The agent sends
    // frames only while speaking: 880 Hz from 1.5 s to 2.0 s and again from 2.4 s to 2.6 s.
    const jitter = [0, 3, -5, 7, -2, 5, -7, 1];
    let callerFrame = 0;
    let agentFrame = 0;
    for (let ms = 0; ms < 3000; ms++) {
      now = 10_000 + ms;
      if (callerFrame * FRAME_MS + jitter[callerFrame % jitter.length] + 7 === ms) {
        const t = callerFrame * FRAME_MS;
        channel.caller(t >= 500 && t < 1000 ? toneFrame(440, callerFrame) : silence());
        callerFrame++;
      }
      const speaking = (ms >= 1500 && ms < 2000) || (ms >= 2400 && ms < 2600);
      if (speaking && ms % FRAME_MS === 0) channel.agent(toneFrame(880, agentFrame++));
    }
    now = 10_000 + 3000;
    const result = await recorder.finish();
    assert.equal(channel.listeners, 0, 'finish unsubscribes');
    assert.deepEqual(result, { key, durationMs: 3000, bytes: 44 + 3 * SAMPLE_RATE * 4, truncated: false });

    const wav = await stored(key);
    assert.equal(wav.length, result.bytes);
    const { left, right, seconds } = split(wav);
    assert.equal(seconds, 3);

    const callerLoud = loudWindows(left);
    assert.ok(near(callerLoud[0], 0.5) && near(callerLoud.at(-1)!, 0.98), `caller tone 0.5–1.0 s, found ${callerLoud[0]}–${callerLoud.at(-1)}`);
    assert.ok(Math.abs(callerLoud.length - 25) <= 1, `the caller's tone lasts 0.5 s (${callerLoud.length} windows)`);

    const agentLoud = loudWindows(right);
    const first = agentLoud.filter((t) => t < 2.2);
    const second = agentLoud.filter((t) => t >= 2.2);
    assert.ok(near(first[0], 1.5) && near(first.at(-1)!, 1.98), `agent's first reply at 1.5–2.0 s, found ${first[0]}–${first.at(-1)}`);
    assert.ok(near(second[0], 2.4) && near(second.at(-1)!, 2.58), `the silence before the second reply is kept: 2.4–2.6 s, found ${second[0]}–${second.at(-1)}`);

    // Each side carries only its own party: 440 Hz left, 880 Hz right, no leaking.
    const window = (ch: Float64Array, from: number, to: number) => ch.subarray(from * SAMPLE_RATE, to * SAMPLE_RATE);
    assert.ok(goertzel(window(left, 0.55, 0.95), 440) > 100 * goertzel(window(left, 0.55, 0.95), 880));
    assert.ok(goertzel(window(right, 1.55, 1.95), 880) > 100 * goertzel(window(right, 1.55, 1.95), 440));
    assert.equal(loudWindows(window(left, 1.4, 3)).length, 0, 'no agent audio on the caller side');
    assert.equal(loudWindows(window(right, 0, 1.4)).length, 0, 'no caller audio on the agent side');

    assert.deepEqual(readdirSync(spoolDir), [], 'the spool files are gone');
    assert.equal(await recorder.finish(), await recorder.finish(), 'finish again answers the same result');
  });

  test('frames arriving after a silence start at their arrival time; frames flowing back to back stay contiguous', async () => {
    const channel = new FakeChannel();
    let now = 0;
    const key = recordingKey(randomUUID(), randomUUID());
    const recorder = CallRecorder.start(channel, { store, key, clock: () => now, spoolDir });
    // Two agent frames delivered in the same millisecond (a burst), then one 600 ms later.
    now = 200;
    channel.agent(toneFrame(880, 0));
    channel.agent(toneFrame(880, 1));
    now = 800;
    channel.agent(toneFrame(880, 2));
    now = 1000;
    await recorder.finish();
    const { right } = split(await stored(key));
    assert.deepEqual(loudWindows(right).map((t) => Math.round(t * 1000)), [200, 220, 800]);
  });

  test('every sample comes out exactly as it went in, each party on its side, across the one-second batches', async () => {
    const channel = new FakeChannel();
    let now = 0;
    const key = recordingKey(randomUUID(), randomUUID());
    const recorder = CallRecorder.start(channel, { store, key, clock: () => now, spoolDir });
    // 1.5 s back to back on both sides: a distinct value per sample, negative ones and the extremes included.
    const value = (side: number, n: number) => (n === 7 ? -32768 : n === 9 ? 32767 : ((n * 37 + side * 1001) % 65536) - 32768);
    for (let f = 0; f < 75; f++) {
      now = f * FRAME_MS;
      const caller = new Int16Array(FRAME_SAMPLES);
      const agent = new Int16Array(FRAME_SAMPLES);
      for (let i = 0; i < FRAME_SAMPLES; i++) {
        caller[i] = value(0, f * FRAME_SAMPLES + i);
        agent[i] = value(1, f * FRAME_SAMPLES + i);
      }
      channel.caller(caller);
      channel.agent(agent);
    }
    now = 1500;
    await recorder.finish();
    const { left, right, seconds } = split(await stored(key));
    assert.equal(seconds, 1.5);
    const wrong = [...left.keys()].filter((n) => left[n] !== value(0, n) || right[n] !== value(1, n));
    assert.deepEqual(wrong.slice(0, 5), [], 'samples differing from what each party sent');
  });

  test('at most maxDurationMs is kept: later frames are dropped and the result says truncated', async () => {
    const channel = new FakeChannel();
    let now = 0;
    const key = recordingKey(randomUUID(), randomUUID());
    const recorder = CallRecorder.start(channel, { store, key, clock: () => now, spoolDir, maxDurationMs: 1000 });
    for (let i = 0; i < 100; i++) {
      now = i * FRAME_MS;
      channel.caller(toneFrame(440, i));
    }
    now = 2000;
    const result = await recorder.finish();
    assert.equal(result.durationMs, 1000);
    assert.equal(result.truncated, true);
    const { left, seconds } = split(await stored(key));
    assert.equal(seconds, 1);
    assert.equal(loudWindows(left).length, 50, 'the first second of tone, whole');
  });

  test('a second recorder of the same call never overwrites the first recording: its write fails and the first stays whole', async () => {
    const key = recordingKey(randomUUID(), randomUUID());
    const first = new FakeChannel();
    const second = new FakeChannel();
    let now = 0;
    const firstRecorder = CallRecorder.start(first, { store, key, clock: () => now, spoolDir });
    const secondRecorder = CallRecorder.start(second, { store, key, clock: () => now, spoolDir });
    for (let i = 0; i < 25; i++) {
      now = i * FRAME_MS;
      first.caller(toneFrame(440, i));
      second.agent(toneFrame(440, i));
    }
    now = 1000;
    await firstRecorder.finish();
    const kept = await stored(key);
    now = 3000; // the second one is longer, and on the other side
    await assert.rejects(secondRecorder.finish(), /already exists/);
    assert.ok((await stored(key)).equals(kept), 'the first recording is unchanged');
    assert.equal(await secondRecorder.stored(), true, 'the recorder sees its key taken');
    await secondRecorder.discard();
    assert.deepEqual(readdirSync(spoolDir), []);
  });

  test('a failed write keeps the audio so finish can be tried again; discard drops it', async () => {
    const channel = new FakeChannel();
    let now = 0;
    let failures = 1;
    const flaky: RecordingStore = {
      ...store,
      kind: 'local',
      async put(key, body, type, size) {
        if (failures-- > 0) throw new Error('store unavailable');
        return store.put(key, body, type, size);
      },
    };
    const key = recordingKey(randomUUID(), randomUUID());
    const recorder = CallRecorder.start(channel, { store: flaky, key, clock: () => now, spoolDir });
    channel.caller(toneFrame(440, 0));
    now = 500;
    await assert.rejects(recorder.finish(), /store unavailable/);
    const result = await recorder.finish();
    assert.equal(result.durationMs, 500);
    assert.equal(loudWindows(split(await stored(key)).left).length, 1);

    const droppedKey = recordingKey(randomUUID(), randomUUID());
    const dropped = CallRecorder.start(channel, { store, key: droppedKey, clock: () => now, spoolDir });
    for (let i = 0; i < 60; i++) channel.caller(toneFrame(440, i)); // past one second: a spool file exists
    await dropped.discard();
    assert.deepEqual(readdirSync(spoolDir), []);
    assert.equal(await store.exists(droppedKey), false);
  });
});
