// The audio helpers of the media edge: WAV files, G.711 μ-law, resampling, 20 ms frames
// and levels; round trips and properties (fast-check) rather than single examples.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FRAME_SAMPLES } from '../../src/mediaEdge/media/channel.js';
import { FrameAssembler, joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { dbfs, rms, SILENCE_DBFS } from '../../src/mediaEdge/audio/level.js';
import { decodeMulaw, encodeMulaw, linearFromMulaw, mulawFromLinear, MULAW_CLIP } from '../../src/mediaEdge/audio/mulaw.js';
import { resample, Resampler } from '../../src/mediaEdge/audio/resample.js';
import { readWav, readWavLayout, toMono, WavFormatError, writeWav } from '../../src/mediaEdge/audio/wav.js';

function sine(rate: number, hz: number, seconds: number, amplitude: number): Int16Array {
  return Int16Array.from({ length: Math.round(rate * seconds) }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate)));
}

/** Frequency from the zero crossings of the middle half (away from the edges' transients). */
function frequencyOf(samples: Int16Array, rate: number): number {
  const middle = samples.subarray(Math.floor(samples.length / 4), Math.floor((samples.length * 3) / 4));
  let crossings = 0;
  for (let i = 1; i < middle.length; i++) if (middle[i - 1] < 0 !== middle[i] < 0) crossings++;
  return (crossings / 2) * (rate / middle.length);
}

const middleLevel = (samples: Int16Array) => dbfs(samples.subarray(Math.floor(samples.length / 4), Math.floor((samples.length * 3) / 4)));

describe('WAV files', () => {
  it('a written file reads back with the same rate, channels and samples', () => {
    fc.assert(
      fc.property(fc.constantFrom(8000, 16000, 22050, 48000), fc.integer({ min: 1, max: 2 }), fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 400 }), (sampleRate, channels, values) => {
        const samples = Int16Array.from(values.slice(0, values.length - (values.length % channels)));
        const back = readWav(writeWav({ sampleRate, channels, samples }));
        assert.equal(back.sampleRate, sampleRate);
        assert.equal(back.channels, channels);
        assert.deepEqual(back.samples, samples);
      }),
      { numRuns: 100 },
    );
  });

  it('skips chunks before the data, and reads to the end when the size says "unknown" (a stream)', () => {
    const plain = writeWav({ sampleRate: 16000, channels: 1, samples: Int16Array.from([1, -2, 3]) });
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([3, 0, 0, 0]), Buffer.from('abc\0')]); // odd size, padded
    const withList = Buffer.concat([plain.subarray(0, 36), list, plain.subarray(36)]);
    assert.deepEqual(readWav(withList).samples, Int16Array.from([1, -2, 3]));
    const streamed = Buffer.from(plain);
    streamed.writeUInt32LE(0xffffffff, 40);
    assert.deepEqual(readWav(streamed).samples, Int16Array.from([1, -2, 3]));
    assert.equal(readWavLayout(plain.subarray(0, 30)), undefined, 'a partial header needs more bytes');
  });

  it('refuses what is not 16-bit PCM', () => {
    const eightBit = writeWav({ sampleRate: 8000, channels: 1, samples: new Int16Array(4) });
    eightBit.writeUInt16LE(8, 34);
    assert.throws(() => readWav(eightBit), WavFormatError);
    const float = writeWav({ sampleRate: 8000, channels: 1, samples: new Int16Array(4) });
    float.writeUInt16LE(3, 20);
    assert.throws(() => readWav(float), /format tag 3 is not PCM/);
    assert.throws(() => readWav(Buffer.from('RIFX0000WAVEfmt ')), /no RIFF\/WAVE header/);
  });

  it('mixes channels down to mono', () => {
    assert.deepEqual(toMono({ sampleRate: 8000, channels: 2, samples: Int16Array.from([100, 300, -10, -30]) }), Int16Array.from([200, -20]));
  });
});

describe('G.711 μ-law', () => {
  it('every sample comes back within half a quantisation step: at most (|x| + 132) / 32', () => {
    for (let x = -32768; x <= 32767; x++) {
      const back = linearFromMulaw(mulawFromLinear(x));
      const magnitude = Math.min(Math.abs(x), MULAW_CLIP);
      const segment = Math.floor(Math.log2(magnitude + 0x84)) - 7;
      const error = Math.abs(back - Math.sign(x) * magnitude);
      if (error > 2 ** (segment + 2) || error > (magnitude + 0x84) / 32) assert.fail(`x=${x} came back as ${back}`);
      if (x !== 0 && back !== 0) assert.equal(Math.sign(back), Math.sign(x), `sign of ${x}`);
    }
  });

  it('encoding is monotonic and every code decodes to a fixed point', () => {
    let previous = -Infinity;
    for (let x = -32768; x <= 32767; x += 7) {
      const value = linearFromMulaw(mulawFromLinear(x));
      assert.ok(value >= previous, `not monotonic at ${x}`);
      previous = value;
    }
    for (let code = 0; code < 256; code++) {
      const value = linearFromMulaw(code);
      assert.equal(linearFromMulaw(mulawFromLinear(value)), value, `code ${code}`);
    }
  });

  it('the array codecs match the sample codecs and keep a speech-level sine within 0.1 dB', () => {
    const tone = sine(8000, 440, 0.5, 8000);
    const codes = encodeMulaw(tone);
    assert.equal(codes.length, tone.length);
    assert.deepEqual(Array.from(codes.subarray(0, 50)), Array.from(tone.subarray(0, 50), mulawFromLinear));
    const back = decodeMulaw(codes);
    assert.ok(Math.abs(dbfs(back) - dbfs(tone)) < 0.1);
  });
});

describe('resampling', () => {
  const pairs: [number, number][] = [
    [8000, 16000],
    [16000, 8000],
    [16000, 22050],
    [22050, 16000],
    [16000, 48000],
    [48000, 16000],
  ];

  for (const [from, to] of pairs) {
    it(`${from} → ${to} Hz keeps a sine's frequency and level`, () => {
      const nyquist = Math.min(from, to) / 2;
      fc.assert(
        fc.property(fc.integer({ min: 150, max: Math.floor(nyquist * 0.75) }), fc.integer({ min: 1000, max: 20000 }), (hz, amplitude) => {
          const input = sine(from, hz, 0.25, amplitude);
          const output = resample(input, from, to);
          assert.equal(output.length, Math.ceil((input.length * to) / from));
          const measured = frequencyOf(output, to);
          assert.ok(Math.abs(measured - hz) <= hz * 0.02 + 8, `${hz} Hz came out as ${measured.toFixed(1)} Hz`);
          const levelChange = middleLevel(output) - middleLevel(input);
          assert.ok(Math.abs(levelChange) < 0.3, `${hz} Hz changed level by ${levelChange.toFixed(2)} dB`);
        }),
        { numRuns: 15 },
      );
    });
  }

  it('filters out what the lower rate cannot carry instead of aliasing it (7 kHz at 16 kHz → 8 kHz)', () => {
    const tone = sine(16000, 7000, 0.25, 16000);
    const output = resample(tone, 16000, 8000);
    const attenuation = middleLevel(tone) - middleLevel(output);
    assert.ok(attenuation > 50, `only ${attenuation.toFixed(1)} dB down`);
    // Bare decimation (every other sample) folds it to 1 kHz at full level.
    const decimated = Int16Array.from({ length: tone.length / 2 }, (_, i) => tone[2 * i]);
    assert.ok(middleLevel(tone) - middleLevel(decimated) < 1);
  });

  it('leaves no images above the original band when upsampling (3 kHz at 8 kHz → 48 kHz has nothing at 5 kHz)', () => {
    const output = resample(sine(8000, 3000, 0.25, 16000), 8000, 48000);
    // Correlate with the 5 kHz image (8 kHz − 3 kHz).
    const at = (hz: number) => {
      let re = 0;
      let im = 0;
      for (let i = 0; i < output.length; i++) {
        re += output[i] * Math.cos((2 * Math.PI * hz * i) / 48000);
        im += output[i] * Math.sin((2 * Math.PI * hz * i) / 48000);
      }
      return Math.hypot(re, im);
    };
    assert.ok(20 * Math.log10(at(3000) / at(5000)) > 50);
  });

  it('streaming in frames of any size gives exactly the one-shot result', () => {
    fc.assert(
      fc.property(fc.constantFrom(...pairs), fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 12 }), ([from, to], sizes) => {
        const input = sine(from, 440, sizes.reduce((a, b) => a + b, 0) / from, 12000);
        const resampler = new Resampler(from, to);
        const pieces: Int16Array[] = [];
        let at = 0;
        for (const size of sizes) {
          pieces.push(resampler.push(input.subarray(at, at + size)));
          at += size;
        }
        pieces.push(resampler.flush());
        assert.deepEqual(joinFrames(pieces), resample(input, from, to));
      }),
      { numRuns: 40 },
    );
  });

  it('a telephone frame stream (160 samples at 8 kHz) becomes 320-sample frames at 16 kHz after a short fill', () => {
    const resampler = new Resampler(8000, 16000);
    const assembler = new FrameAssembler();
    const tone = sine(8000, 1000, 1, 10000);
    let frames = 0;
    for (let at = 0; at < tone.length; at += 160) frames += assembler.push(resampler.push(tone.subarray(at, at + 160))).length;
    assert.ok(frames >= 49 && frames <= 50, `${frames} frames`);
    assert.ok(resampler.lookahead < 40, 'the lookahead stays under 5 ms at 8 kHz');
  });
});

describe('frames and levels', () => {
  it('slicing pads the last frame with silence and joining gives the samples back', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 2000 }), (values) => {
        const samples = Int16Array.from(values);
        const frames = sliceFrames(samples);
        assert.equal(frames.length, Math.ceil(samples.length / FRAME_SAMPLES));
        assert.ok(frames.every((f) => f.length === FRAME_SAMPLES));
        const joined = joinFrames(frames);
        assert.deepEqual(joined.subarray(0, samples.length), samples);
        assert.ok(joined.subarray(samples.length).every((s) => s === 0));
      }),
    );
  });

  it('the assembler hands out whole frames whatever the piece sizes', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 900 }), { maxLength: 10 }), (sizes) => {
        const assembler = new FrameAssembler();
        let total = 0;
        const frames = sizes.flatMap((size) => {
          const piece = Int16Array.from({ length: size }, (_, i) => (total + i) % 1000);
          total += size;
          return assembler.push(piece);
        });
        frames.push(...assembler.flush());
        assert.equal(frames.length, Math.ceil(total / FRAME_SAMPLES));
        const joined = joinFrames(frames);
        for (let i = 0; i < total; i++) if (joined[i] !== i % 1000) assert.fail(`sample ${i}`);
      }),
    );
  });

  it('dBFS: a full-scale sine is -3 dBFS, halving the amplitude takes 6 dB, silence is the floor value', () => {
    assert.ok(Math.abs(dbfs(sine(16000, 1000, 0.1, 32767)) + 3.01) < 0.05);
    assert.ok(Math.abs(dbfs(sine(16000, 1000, 0.1, 16384)) - dbfs(sine(16000, 1000, 0.1, 8192)) - 6.02) < 0.05);
    assert.equal(dbfs(new Int16Array(320)), SILENCE_DBFS);
    assert.equal(rms(Int16Array.from([3, -3, 3, -3])), 3);
  });
});
