// The cheap per-packet path of a phone call's media (issue 25's ≥ 200 streams per edge process):
// G.711 by lookup table, decoding and encoding fused into the 8 ↔ 16 kHz converters, each the
// same output, sample for sample, as the plain steps it replaces; the RTP socket's address
// lookup that answers an IP literal at once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Downsampler2, Upsampler2 } from '../../src/mediaEdge/audio/halfband.js';
import {
  ALAW_DECODE_TABLE,
  ALAW_ENCODE_TABLE,
  alawFromLinear,
  decodeAlaw,
  decodeMulaw,
  encodeAlaw,
  encodeMulaw,
  MULAW_DECODE_TABLE,
  MULAW_ENCODE_TABLE,
  mulawFromLinear,
} from '../../src/mediaEdge/audio/mulaw.js';
import { rtpAddressLookup } from '../../src/mediaEdge/rtp/portAllocator.js';
import { createCodec } from '../../src/mediaEdge/webrtc/codecs.js';

/** Deterministic noise over the whole 16-bit range (a seeded generator: a failure can be replayed). */
function noise(length: number, seed: number): Int16Array {
  let state = seed;
  return Int16Array.from({ length }, () => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return (state >>> 16) - 32_768;
  });
}

describe('G.711 by table', () => {
  it('the encode tables give the code of the standard for every one of the 65 536 samples', () => {
    for (let sample = -32_768; sample <= 32_767; sample++) {
      if (MULAW_ENCODE_TABLE[sample & 0xffff] !== mulawFromLinear(sample)) assert.fail(`μ-law of ${sample}`);
      if (ALAW_ENCODE_TABLE[sample & 0xffff] !== alawFromLinear(sample)) assert.fail(`A-law of ${sample}`);
    }
    const all = Int16Array.from({ length: 65_536 }, (_, i) => i - 32_768);
    assert.deepEqual([...encodeMulaw(all)], [...all].map(mulawFromLinear));
    assert.deepEqual([...encodeAlaw(all)], [...all].map(alawFromLinear));
  });
});

describe('G.711 fused into the half-band converters', () => {
  it('decoding while upsampling gives what decoding, then upsampling gives, frame after frame', () => {
    for (const [table, decode] of [[MULAW_DECODE_TABLE, decodeMulaw], [ALAW_DECODE_TABLE, decodeAlaw]] as const) {
      const fused = new Upsampler2();
      const plain = new Upsampler2();
      for (let frame = 0; frame < 50; frame++) {
        const codes = Uint8Array.from(noise(160, frame + 1), (v) => v & 0xff);
        assert.deepEqual(fused.pushCodes(codes, table), plain.push(decode(codes)), `frame ${frame}`);
      }
    }
  });

  it('encoding while downsampling gives what downsampling, then encoding gives, odd pieces included, written where asked', () => {
    for (const [table, encode] of [[MULAW_ENCODE_TABLE, encodeMulaw], [ALAW_ENCODE_TABLE, encodeAlaw]] as const) {
      const fused = new Downsampler2();
      const plain = new Downsampler2();
      for (let piece = 0; piece < 60; piece++) {
        const samples = noise(piece % 7 === 3 ? 101 + piece : 320, piece + 7);
        const expected = encode(plain.push(samples));
        const out = new Uint8Array(expected.length + 12).fill(0xee);
        const written = fused.pushEncoded(samples, table, out, 12);
        assert.equal(written, expected.length, `piece ${piece}`);
        assert.deepEqual([...out.subarray(12)], [...expected], `piece ${piece}`);
        assert.ok(out.subarray(0, 12).every((b) => b === 0xee), 'nothing written before the offset');
      }
      assert.throws(() => fused.pushEncoded(new Int16Array(320), table, new Uint8Array(100), 0), RangeError);
    }
  });

  it('digital silence after sound: the encoded frames are what the plain steps give, the filter tail first, then silence, then sound again', () => {
    for (const [table, encode] of [[MULAW_ENCODE_TABLE, encodeMulaw], [ALAW_ENCODE_TABLE, encodeAlaw]] as const) {
      const fused = new Downsampler2();
      const plain = new Downsampler2();
      const pieces = [noise(320, 11), new Int16Array(320), new Int16Array(320), new Int16Array(7), new Int16Array(320), noise(320, 12), new Int16Array(320)];
      pieces.forEach((samples, i) => {
        const expected = encode(plain.push(samples));
        const out = new Uint8Array(expected.length);
        assert.equal(fused.pushEncoded(samples, table, out, 0), expected.length);
        assert.deepEqual([...out], [...expected], `piece ${i}`);
      });
    }
    // From a fresh converter, silence is the law's silence code from the first frame.
    const out = new Uint8Array(160);
    new Downsampler2().pushEncoded(new Int16Array(320), MULAW_ENCODE_TABLE, out, 0);
    assert.ok(out.every((code) => code === 0xff));
  });

  it("a converter's history carries across pieces: 20 ms at a time is the whole signal at once", () => {
    const signal = noise(8 * 160, 3);
    const whole = new Upsampler2().push(signal);
    const up = new Upsampler2();
    const pieces: number[] = [];
    for (let at = 0; at < signal.length; at += 160) pieces.push(...up.push(signal.subarray(at, at + 160)));
    assert.deepEqual(pieces, [...whole]);
    // A piece longer than the converter's room grows it and keeps the history.
    const down = new Downsampler2();
    const reference = new Downsampler2();
    const long = noise(5000, 4);
    assert.deepEqual([...down.push(long.subarray(0, 4000)), ...down.push(long.subarray(4000))], [...reference.push(long)]);
  });

  it('the PCMU and PCMA codecs: 20 ms of 16 kHz in is one 160-byte payload out, and a payload decodes to one 320-sample frame', () => {
    for (const name of ['PCMU', 'PCMA'] as const) {
      const codec = createCodec(name);
      for (let frame = 0; frame < 5; frame++) {
        const payload = codec.encode(noise(320, frame));
        assert.equal(payload.length, 160);
        assert.equal(codec.decode(payload).length, 320);
      }
    }
  });
});

describe("the RTP socket's address lookup", () => {
  it('an IP literal is answered before the call returns (no deferred lookup per packet); a name still goes to DNS', async () => {
    for (const [address, family] of [['127.0.0.1', 4], ['::1', 6], ['203.0.113.9', 4]] as const) {
      let answer: [string, number] | undefined;
      rtpAddressLookup(address, family, (err, resolved, resolvedFamily) => {
        assert.equal(err, null);
        answer = [resolved, resolvedFamily];
      });
      assert.deepEqual(answer, [address, family], address);
    }
    const byName = await new Promise<[string, number]>((resolve, reject) =>
      rtpAddressLookup('localhost', 4, (err, resolved, family) => (err ? reject(err) : resolve([resolved, family]))),
    );
    assert.deepEqual(byName, ['127.0.0.1', 4]);
  });
});
