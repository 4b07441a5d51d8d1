// The codecs of the WebRTC transport alone: every 20 ms frame of 16 kHz PCM becomes one RTP
// payload of 20 ms and back, with the tone's frequency and level kept.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createCodec, type CodecName } from '../../src/mediaEdge/webrtc/codecs.js';
import { rms, toneFrames, zeroCrossingFrequency } from '../support/webrtcPeer.js';

for (const [name, payloadBytes] of [
  ['PCMU', (n: number) => n === 160],
  ['PCMA', (n: number) => n === 160],
  ['opus', (n: number) => n > 10 && n < 200],
] as [CodecName, (n: number) => boolean][]) {
  test(`${name}: one payload per frame, exactly 320 samples back from each, a 1 kHz tone kept`, () => {
    const codec = createCodec(name);
    try {
      const decoded: number[] = [];
      for (const frame of toneFrames(1000, 8000, 50)) {
        const payload = codec.encode(frame);
        assert.ok(payloadBytes(payload.length), `payload of ${payload.length} bytes`);
        const pcm = codec.decode(payload);
        assert.equal(pcm.length, 320);
        decoded.push(...pcm);
      }
      const steady = decoded.slice(3200);
      assert.ok(Math.abs(zeroCrossingFrequency(steady, 16_000) - 1000) < 20);
      assert.ok(Math.abs(rms(steady) - 8000 / Math.SQRT2) < 600, `RMS ${rms(steady)}`);
      assert.equal(codec.decode(new Uint8Array(0)).length, 0);
    } finally {
      codec.close();
    }
  });
}

test('Opus: a corrupt payload decodes to nothing instead of throwing', () => {
  const codec = createCodec('opus');
  try {
    assert.equal(codec.decode(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff)).length, 0);
  } finally {
    codec.close();
  }
});
