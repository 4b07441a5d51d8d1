/**
 * G.711 μ-law, the 8 kHz telephone codec a carrier's media stream carries: 8-bit codes,
 * logarithmic segments, so the error grows with the amplitude (about 1/32 of it).
 */

const BIAS = 0x84;
/** Magnitudes above this are clipped: with the bias added they still fit segment 7. */
export const MULAW_CLIP = 32635;

/** The μ-law code of one 16-bit sample. */
export function mulawFromLinear(sample: number): number {
  let magnitude = sample < 0 ? -sample : sample;
  const sign = sample < 0 ? 0x80 : 0;
  if (magnitude > MULAW_CLIP) magnitude = MULAW_CLIP;
  magnitude += BIAS;
  let segment = 7;
  for (let mask = 0x4000; (magnitude & mask) === 0 && segment > 0; mask >>= 1) segment--;
  const mantissa = (magnitude >> (segment + 3)) & 0x0f;
  return ~(sign | (segment << 4) | mantissa) & 0xff;
}

/** The 16-bit sample a μ-law code stands for. */
export function linearFromMulaw(code: number): number {
  const u = ~code & 0xff;
  const segment = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + BIAS) << segment) - BIAS;
  return (u & 0x80 ? -magnitude : magnitude) | 0; // | 0: no negative zero
}

const DECODE_TABLE = Int16Array.from({ length: 256 }, (_, code) => linearFromMulaw(code));

/** Encodes 16-bit samples (at 8 kHz for G.711) as μ-law bytes. */
export function encodeMulaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = mulawFromLinear(samples[i]);
  return out;
}

/** Decodes μ-law bytes into 16-bit samples. */
export function decodeMulaw(codes: Uint8Array): Int16Array {
  const out = new Int16Array(codes.length);
  for (let i = 0; i < codes.length; i++) out[i] = DECODE_TABLE[codes[i]];
  return out;
}
