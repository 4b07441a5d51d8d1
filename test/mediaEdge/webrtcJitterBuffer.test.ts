// The inbound jitter buffer alone: ordering, loss, lateness, drift,
// wrap-around and restarts, driven tick by tick as the media channel drives them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JitterBuffer } from '../../src/mediaEdge/webrtc/jitterBuffer.js';

const FRAME = 960; // 20 ms at 48 kHz

/** Packet n of a stream: payload [n] so playout order is visible. */
const packet = (n: number, opts: { ts0?: number; seq0?: number; ssrc?: number } = {}) => ({
  sequenceNumber: ((opts.seq0 ?? 100) + n) & 0xffff,
  timestamp: ((opts.ts0 ?? 10_000) + n * FRAME) % 2 ** 32,
  ssrc: opts.ssrc ?? 1,
  payload: Uint8Array.of(n & 0xff),
});

/** One 20 ms tick as the channel does it: the packet due (its number), or null for silence. */
function tick(jb: JitterBuffer): number | null {
  const payload = jb.take();
  if (payload) {
    jb.advance(FRAME);
    return payload[0];
  }
  jb.conceal(FRAME);
  return null;
}

const ticks = (jb: JitterBuffer, n: number) => Array.from({ length: n }, () => tick(jb));

test('in order: playout starts 60 ms (three frames) after the first packet and plays every packet once', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  assert.equal(jb.depthTicks, 3 * FRAME);
  assert.equal(tick(jb), null, 'nothing before the first packet');
  const played: (number | null)[] = [];
  for (let n = 0; n < 10; n++) {
    jb.push(packet(n));
    played.push(tick(jb));
  }
  played.push(...ticks(jb, 3));
  assert.deepEqual(played, [null, null, null, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.equal(jb.stats.played, 10);
});

test('reordering within the depth is undone; a duplicate is dropped', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  for (const n of [0, 2, 1, 1, 4, 3, 5]) jb.push(packet(n));
  assert.equal(jb.stats.duplicate, 1);
  assert.deepEqual(ticks(jb, 9), [null, null, null, 0, 1, 2, 3, 4, 5]);
  assert.equal(jb.stats.lost, 0, 'reordered packets are not counted lost');
});

test('a lost packet is one frame of silence when later packets wait; a packet later than the depth is dropped', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  const played: (number | null)[] = [];
  for (const n of [0, 1, -1, 3, 4, 5, 6]) {
    if (n >= 0) jb.push(packet(n)); // packet 2 is missing on time
    played.push(tick(jb));
  }
  assert.equal(jb.stats.lost, 1, 'the sequence gap');
  assert.equal(jb.push(packet(2)), 'late');
  played.push(...ticks(jb, 3));
  assert.deepEqual(played, [null, null, null, 0, 1, null, 3, 4, 5, 6]);
  assert.equal(jb.stats.late, 1);
});

test('an empty buffer holds the playout point: a sender a little slow, or pausing, loses nothing', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  const played: (number | null)[] = [];
  // The sender delivers one packet every other tick for a while (it is late), then catches up.
  for (let t = 0, n = 0; t < 30; t++) {
    if (t % 2 === 0 && n < 12) jb.push(packet(n++));
    played.push(tick(jb));
  }
  assert.deepEqual(
    played.filter((p) => p !== null),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
  );
  assert.equal(jb.stats.late, 0);
  assert.ok(jb.stats.underruns > 0);
});

test('latency is capped: a burst beyond depth + 100 ms skips the oldest down to the depth', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  jb.push(packet(0));
  ticks(jb, 4); // 0 played
  for (let n = 1; n <= 20; n++) jb.push(packet(n)); // 400 ms arrive at once
  const next = tick(jb);
  assert.equal(next, 17, 'resumes three frames behind the newest');
  assert.deepEqual(ticks(jb, 3), [18, 19, 20]);
  assert.ok(jb.stats.skipped >= 15);
});

test('a talkspurt after a pause may start off the 20 ms grid: it plays, re-aligned', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  for (let n = 0; n < 3; n++) jb.push(packet(n));
  ticks(jb, 6);
  // 200 ms later (10 frames) plus 7 ms.
  const offset = 10 * FRAME + 7 * 48;
  const late = (n: number) => ({ ...packet(n), timestamp: 10_000 + 3 * FRAME + offset + (n - 3) * FRAME });
  jb.push(late(3));
  jb.push(late(4));
  const out = ticks(jb, 15).filter((p) => p !== null);
  assert.deepEqual(out, [3, 4]);
  assert.equal(jb.stats.late, 0);
});

test('RTP timestamps and sequence numbers wrap around 2^32 and 2^16 without a hitch', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  const opts = { ts0: 2 ** 32 - 3 * FRAME, seq0: 0xfffe };
  for (const n of [0, 1, 3, 2, 4, 5]) jb.push(packet(n, opts));
  assert.deepEqual(ticks(jb, 9), [null, null, null, 0, 1, 2, 3, 4, 5]);
  assert.equal(jb.stats.resyncs, 0);
  assert.equal(jb.stats.lost, 0);
});

test('a new SSRC or a timestamp jump beyond a second restarts the buffer at that packet', () => {
  const jb = new JitterBuffer({ clockRate: 48_000 });
  for (let n = 0; n < 3; n++) jb.push(packet(n));
  ticks(jb, 6);
  assert.equal(jb.push(packet(50, { ssrc: 2, ts0: 999 })), 'resync');
  assert.deepEqual(ticks(jb, 4), [null, null, null, 50]);
  assert.equal(jb.push({ ...packet(51, { ssrc: 2, ts0: 999 }), timestamp: 999 + 51 * FRAME + 48_000 * 5 }), 'resync');
  assert.equal(jb.stats.resyncs, 2);
});

test('PCMU clock: 8 kHz with 160-tick frames', () => {
  const jb = new JitterBuffer({ clockRate: 8000, depthMs: 40 });
  assert.equal(jb.depthTicks, 320);
  assert.equal(jb.frameTicks, 160);
});
