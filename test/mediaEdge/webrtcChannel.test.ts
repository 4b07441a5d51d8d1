// The WebRTC MediaChannel's inbound side, ticked by hand with PCMU packets: a backlog (a
// burst from the browser, or ticks the edge missed while busy) reaches the conversation
// engine whole, faster than real time, instead of being skipped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeMulaw } from '../../src/mediaEdge/audio/mulaw.js';
import { WebRtcMediaChannel } from '../../src/mediaEdge/webrtc/channel.js';
import { createCodec } from '../../src/mediaEdge/webrtc/codecs.js';
import { rms } from '../support/webrtcPeer.js';

const PCMU_FRAME = 160; // 20 ms at 8 kHz

/** Packet n of a PCMU stream: a loud square wave, so every frame that carries it is told from silence. */
const packet = (n: number) => {
  const pcm = new Int16Array(PCMU_FRAME);
  for (let i = 0; i < PCMU_FRAME; i++) pcm[i] = i % 16 < 8 ? 8000 : -8000;
  return { sequenceNumber: 100 + n, timestamp: 5000 + n * PCMU_FRAME, ssrc: 7, payload: encodeMulaw(pcm) };
};

function channel() {
  const c = new WebRtcMediaChannel(createCodec('PCMU'), () => undefined, (err) => {
    throw err;
  });
  /** Per tick, how many loud inbound frames the engine got. */
  const heard: number[] = [];
  let loud = 0;
  c.onInbound((frame) => {
    if (rms(frame) > 1000) loud++;
  });
  const tick = () => {
    const before = loud;
    c.tick();
    heard.push(loud - before);
  };
  return { c, heard, tick, loud: () => loud };
}

test('a steady stream is handed over one frame per tick', () => {
  const { c, heard, tick } = channel();
  for (let n = 0; n < 50; n++) {
    c.receive(packet(n));
    tick();
  }
  assert.ok(heard.every((k) => k <= 1), `never two frames in a tick: ${heard.join('')}`);
  assert.ok(heard.filter((k) => k === 1).length >= 44, 'every packet once the depth is filled');
  assert.equal(c.jitter.stats.skipped, 0);
});

test('a 500 ms burst reaches the engine whole, two frames a tick, and the buffer is back at its depth soon after', () => {
  const { c, heard, tick, loud } = channel();
  c.receive(packet(0));
  for (let i = 0; i < 4; i++) tick();
  assert.equal(loud(), 1);
  // The browser's next 25 packets arrive at once (it stalled, or this process did).
  for (let n = 1; n <= 25; n++) c.receive(packet(n));
  for (let i = 0; i < 30; i++) tick();
  assert.equal(loud(), 26, 'no frame of the burst is lost');
  assert.equal(c.jitter.stats.skipped, 0);
  const lastLoudTick = heard.length - 1 - [...heard].reverse().findIndex((k) => k > 0) - 4;
  assert.ok(lastLoudTick < 18, `caught up in ${lastLoudTick + 1} ticks (25 in real time)`);
  assert.ok(heard.includes(2), 'two frames in some ticks');
  assert.ok(c.jitter.bufferedTicks <= c.jitter.depthTicks, 'back at the depth');
});

test('a backlog over 800 ms is still capped by skipping', () => {
  const { c, tick } = channel();
  c.receive(packet(0));
  tick();
  for (let n = 1; n <= 45; n++) c.receive(packet(n)); // 900 ms at once
  tick();
  assert.ok(c.jitter.stats.skipped > 0);
  assert.ok(c.jitter.bufferedTicks <= c.jitter.depthTicks + PCMU_FRAME);
  c.close('local_hangup');
});
