/**
 * The few PCM helpers the WebRTC transport needs for G.711 μ-law (PCMU) at 8 kHz: μ-law
 * coding and 2× resampling to and from the channel's 16 kHz, with a windowed-sinc low-pass
 * filter that keeps its history across frames (a frame boundary must not click).
 */

const BIAS = 0x84;
const CLIP = 32635;

/** G.711 μ-law encoding of one 16-bit sample. */
export function linearToMulaw(sample: number): number {
  let s = sample;
  const sign = s < 0 ? 0x80 : 0;
  if (sign) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** G.711 μ-law decoding of one byte. */
export function mulawToLinear(byte: number): number {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + BIAS) << exponent) - BIAS;
  return u & 0x80 ? -magnitude : magnitude;
}

const MULAW_DECODE = Int16Array.from({ length: 256 }, (_, i) => mulawToLinear(i));

export function decodeMulaw(payload: Uint8Array): Int16Array {
  const out = new Int16Array(payload.length);
  for (let i = 0; i < payload.length; i++) out[i] = MULAW_DECODE[payload[i]];
  return out;
}

export function encodeMulaw(samples: Int16Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = linearToMulaw(samples[i]);
  return out;
}

const TAPS = 31;
/** Low-pass at 3.7 kHz for 16 kHz audio (Hamming-windowed sinc), unity gain at DC. */
const LOWPASS = (() => {
  const cutoff = 3700 / 16_000;
  const mid = (TAPS - 1) / 2;
  const h = new Float64Array(TAPS);
  let sum = 0;
  for (let n = 0; n < TAPS; n++) {
    const x = n - mid;
    const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
    h[n] = sinc * (0.54 - 0.46 * Math.cos((2 * Math.PI * n) / (TAPS - 1)));
    sum += h[n];
  }
  for (let n = 0; n < TAPS; n++) h[n] /= sum;
  return h;
})();

const clamp16 = (v: number): number => (v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v));

/** 8 kHz → 16 kHz: zero-stuffing then the low-pass (×2 gain for the stuffed zeros). */
export class Upsampler2x {
  private readonly history = new Float64Array(TAPS);

  process(input: Int16Array): Int16Array {
    const out = new Int16Array(input.length * 2);
    const h = this.history;
    for (let i = 0; i < out.length; i++) {
      h.copyWithin(1, 0, TAPS - 1);
      h[0] = i % 2 === 0 ? input[i >> 1] * 2 : 0;
      let acc = 0;
      for (let k = 0; k < TAPS; k++) acc += LOWPASS[k] * h[k];
      out[i] = clamp16(acc);
    }
    return out;
  }
}

/** 16 kHz → 8 kHz: the low-pass, then every other sample. */
export class Downsampler2x {
  private readonly history = new Float64Array(TAPS);

  process(input: Int16Array): Int16Array {
    const out = new Int16Array(input.length >> 1);
    const h = this.history;
    for (let i = 0; i < input.length; i++) {
      h.copyWithin(1, 0, TAPS - 1);
      h[0] = input[i];
      if (i % 2 === 1) {
        let acc = 0;
        for (let k = 0; k < TAPS; k++) acc += LOWPASS[k] * h[k];
        out[i >> 1] = clamp16(acc);
      }
    }
    return out;
  }
}
