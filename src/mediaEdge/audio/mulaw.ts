/**
 * G.711, the 8 kHz telephone codec a carrier's media stream carries, in both its laws:
 * μ-law (PCMU, North America and Japan) and A-law (PCMA, the rest of the world). 8-bit
 * codes, logarithmic segments, so the error grows with the amplitude (about 1/32 of it).
 * (The file keeps its first name, from when it held μ-law alone.)
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

/** Code → sample, for every μ-law code. */
export const MULAW_DECODE_TABLE = Int16Array.from({ length: 256 }, (_, code) => linearFromMulaw(code));

/**
 * Sample → code for every 16-bit sample, indexed by the sample's bits (`sample & 0xffff`): a phone
 * call encodes 8000 samples a second, and one table read is a fraction of the segment search.
 */
export const MULAW_ENCODE_TABLE = encodeTable(mulawFromLinear);

/** Encodes 16-bit samples (at 8 kHz for G.711) as μ-law bytes. */
export function encodeMulaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = MULAW_ENCODE_TABLE[samples[i] & 0xffff];
  return out;
}

/** Decodes μ-law bytes into 16-bit samples. */
export function decodeMulaw(codes: Uint8Array): Int16Array {
  const out = new Int16Array(codes.length);
  for (let i = 0; i < codes.length; i++) out[i] = MULAW_DECODE_TABLE[codes[i]];
  return out;
}

function encodeTable(encode: (sample: number) => number): Uint8Array {
  const table = new Uint8Array(0x10000);
  for (let bits = 0; bits < 0x10000; bits++) table[bits] = encode((bits << 16) >> 16);
  return table;
}

/** The A-law code of one 16-bit sample (A-law works on the top 13 bits; even bits inverted on the wire). */
export function alawFromLinear(sample: number): number {
  let magnitude = sample >> 3;
  let mask = 0xd5; // sign bit set for positive values, and the 0x55 inversion
  if (magnitude < 0) {
    magnitude = -magnitude - 1;
    mask = 0x55;
  }
  if (magnitude > 0xfff) return 0x7f ^ mask;
  let segment = 0;
  while (segment < 7 && magnitude >= 0x20 << segment) segment++;
  const mantissa = segment < 2 ? (magnitude >> 1) & 0x0f : (magnitude >> segment) & 0x0f;
  return ((segment << 4) | mantissa) ^ mask;
}

/** The 16-bit sample an A-law code stands for. */
export function linearFromAlaw(code: number): number {
  const a = (code ^ 0x55) & 0xff;
  const segment = (a >> 4) & 0x07;
  let magnitude = ((a & 0x0f) << 4) + (segment === 0 ? 8 : 0x108);
  if (segment > 1) magnitude <<= segment - 1;
  return a & 0x80 ? magnitude : -magnitude;
}

/** Code → sample, for every A-law code. */
export const ALAW_DECODE_TABLE = Int16Array.from({ length: 256 }, (_, code) => linearFromAlaw(code));

/** Sample → code for every 16-bit sample, indexed by `sample & 0xffff` (as MULAW_ENCODE_TABLE). */
export const ALAW_ENCODE_TABLE = encodeTable(alawFromLinear);

/** Encodes 16-bit samples (at 8 kHz) as A-law bytes. */
export function encodeAlaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = ALAW_ENCODE_TABLE[samples[i] & 0xffff];
  return out;
}

/** Decodes A-law bytes into 16-bit samples. */
export function decodeAlaw(codes: Uint8Array): Int16Array {
  const out = new Int16Array(codes.length);
  for (let i = 0; i < codes.length; i++) out[i] = ALAW_DECODE_TABLE[codes[i]];
  return out;
}
