/**
 * 8 kHz ↔ 16 kHz for telephone audio, by a half-band filter: a phone call converts every
 * 20 ms frame both ways, and the general resampler (resample.ts, 80 dB, passband to 3.6 kHz)
 * spent 29 000 multiply-adds a frame pair on it, most of the CPU of a phone call's media. A
 * half-band low-pass has every other tap zero and its centre tap one half, so upsampling copies
 * the even outputs and computes only the odd ones, and downsampling computes only the outputs
 * it keeps, each with half the taps (symmetry halves them again): about 7 700 per frame pair.
 *
 * The response follows what G.711's own channel filters are held to (ITU-T G.712): flat to
 * 3.4 kHz (the telephone band), -6 dB at 4 kHz, at least 50 dB down from 4.6 kHz. Both
 * converters stream with a constant delay (under 2 ms) and give exactly twice, or half, the
 * samples they are given, so 20 ms in is 20 ms out.
 */
import { besselI0 } from './resample.js';

/** Non-zero taps on each side of the centre: the filter is 4·SIDE_TAPS − 1 long. */
const SIDE_TAPS = 12;
const KAISER_BETA = 6;


/** h[2j − 1] for j = 1..SIDE_TAPS (the odd taps; h[0] = 1/2, even taps zero), summing to 1/4 on a side. */
const ODD_TAPS = (() => {
  const half = 2 * SIDE_TAPS - 1;
  const taps = Float64Array.from({ length: SIDE_TAPS }, (_, i) => {
    const n = 2 * i + 1;
    const x = n / (half + 1);
    const window = besselI0(KAISER_BETA * Math.sqrt(1 - x * x)) / besselI0(KAISER_BETA);
    return (Math.sin((Math.PI * n) / 2) / (Math.PI * n)) * window;
  });
  const sum = taps.reduce((a, b) => a + b, 0);
  return taps.map((t) => (t * 0.25) / sum);
})();

const clamp = (v: number) => (v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v));

// The taps as constants: the filters below are unrolled, one multiply-add per tap pair with no
// loop or array read, in the order the plain loop would add them (the same output, bit for bit).
const [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11] = ODD_TAPS;

/** Samples a converter's working buffer holds beyond its history before it grows (one 20 ms frame at 16 kHz). */
const INITIAL_ROOM = 320;

/**
 * 8 kHz → 16 kHz, streaming: each push of n samples gives 2n, SIDE_TAPS + 1 input samples (1.6 ms) late.
 * Its working buffer is kept from push to push (history first, then the new samples), so a frame
 * costs its output array and nothing else.
 */
export class Upsampler2 {
  /** [0, 2·SIDE_TAPS): the last input samples, oldest first; after them, the samples being converted. */
  private x = new Float64Array(2 * SIDE_TAPS + INITIAL_ROOM);

  push(samples: Int16Array): Int16Array {
    const x = this.room(samples.length);
    for (let i = 0; i < samples.length; i++) x[2 * SIDE_TAPS + i] = samples[i];
    return this.convert(samples.length);
  }

  /** G.711 codes decoded through `table` (code → sample) and converted, without an 8 kHz array between. */
  pushCodes(codes: Uint8Array, table: Int16Array): Int16Array {
    const x = this.room(codes.length);
    for (let i = 0; i < codes.length; i++) x[2 * SIDE_TAPS + i] = table[codes[i]];
    return this.convert(codes.length);
  }

  private room(n: number): Float64Array {
    if (this.x.length < 2 * SIDE_TAPS + n) {
      const grown = new Float64Array(2 * SIDE_TAPS + n);
      grown.set(this.x.subarray(0, 2 * SIDE_TAPS));
      this.x = grown;
    }
    return this.x;
  }

  private convert(n: number): Int16Array {
    const x = this.x;
    const out = new Int16Array(2 * n);
    // Output pair m is centred on x[m + SIDE_TAPS - 1] (even) and between it and the next (odd).
    for (let m = 0, c = SIDE_TAPS - 1; m < n; m++, c++) {
      let acc = T0 * (x[c] + x[c + 1]);
      acc += T1 * (x[c - 1] + x[c + 2]);
      acc += T2 * (x[c - 2] + x[c + 3]);
      acc += T3 * (x[c - 3] + x[c + 4]);
      acc += T4 * (x[c - 4] + x[c + 5]);
      acc += T5 * (x[c - 5] + x[c + 6]);
      acc += T6 * (x[c - 6] + x[c + 7]);
      acc += T7 * (x[c - 7] + x[c + 8]);
      acc += T8 * (x[c - 8] + x[c + 9]);
      acc += T9 * (x[c - 9] + x[c + 10]);
      acc += T10 * (x[c - 10] + x[c + 11]);
      acc += T11 * (x[c - 11] + x[c + 12]);
      out[2 * m] = clamp(x[c]);
      out[2 * m + 1] = clamp(2 * acc);
    }
    x.copyWithin(0, n, n + 2 * SIDE_TAPS);
    return out;
  }
}

/** Input samples the downsampler keeps from push to push (4·SIDE_TAPS − 2), besides an odd one left over. */
const DOWN_SPAN = 4 * SIDE_TAPS - 2;

/**
 * 16 kHz → 8 kHz, streaming: each push of 2n samples gives n (an odd push carries its last sample
 * over). Like the upsampler, it converts in a buffer kept from push to push.
 */
export class Downsampler2 {
  /** [0, DOWN_SPAN): the last input samples, oldest first; then any odd one left over; then the new samples. */
  private x = new Float64Array(DOWN_SPAN + 1 + INITIAL_ROOM);
  /** Samples held in x (DOWN_SPAN, or one more with a sample left over). */
  private held = DOWN_SPAN;
  /** Just past the last non-zero sample held in x (0: all held samples are zero). */
  private nonZeroEnd = 0;

  push(samples: Int16Array): Int16Array {
    const count = this.take(samples);
    const out = new Int16Array(count);
    const x = this.x;
    for (let m = 0, c = 2 * SIDE_TAPS - 1; m < count; m++, c += 2) out[m] = clamp(this.output(x, c));
    this.keep(count);
    return out;
  }

  /**
   * Converts and encodes in one pass: each 8 kHz sample goes through `table` (indexed by the
   * sample's 16 bits, as G.711's encode tables are) into `out` from `offset`. Returns how many were written.
   */
  pushEncoded(samples: Int16Array, table: Uint8Array, out: Uint8Array, offset: number): number {
    const count = this.take(samples);
    if (offset + count > out.length) throw new RangeError(`${count} encoded samples do not fit at ${offset} in ${out.length} bytes`);
    const x = this.x;
    if (this.nonZeroEnd === 0) {
      // Digital silence in and behind: every output is zero (a phone call sends silence whenever the agent is not talking).
      out.fill(table[0], offset, offset + count);
    } else {
      for (let m = 0, c = 2 * SIDE_TAPS - 1; m < count; m++, c += 2) out[offset + m] = table[clamp(this.output(x, c)) & 0xffff];
    }
    this.keep(count);
    return count;
  }

  /** Appends the samples after what is held; returns the outputs they complete. */
  private take(samples: Int16Array): number {
    const needed = this.held + samples.length;
    if (this.x.length < needed) {
      const grown = new Float64Array(needed);
      grown.set(this.x.subarray(0, this.held));
      this.x = grown;
    }
    const x = this.x;
    let nonZeroEnd = this.nonZeroEnd;
    for (let i = 0, at = this.held; i < samples.length; i++, at++) {
      const sample = samples[i];
      x[at] = sample;
      if (sample !== 0) nonZeroEnd = at + 1;
    }
    this.nonZeroEnd = nonZeroEnd;
    this.held = needed;
    return (needed - DOWN_SPAN) >> 1;
  }

  /** The output centred on x[c]: its odd neighbours carry the taps. */
  private output(x: Float64Array, c: number): number {
    let acc = 0.5 * x[c];
    acc += T0 * (x[c - 1] + x[c + 1]);
    acc += T1 * (x[c - 3] + x[c + 3]);
    acc += T2 * (x[c - 5] + x[c + 5]);
    acc += T3 * (x[c - 7] + x[c + 7]);
    acc += T4 * (x[c - 9] + x[c + 9]);
    acc += T5 * (x[c - 11] + x[c + 11]);
    acc += T6 * (x[c - 13] + x[c + 13]);
    acc += T7 * (x[c - 15] + x[c + 15]);
    acc += T8 * (x[c - 17] + x[c + 17]);
    acc += T9 * (x[c - 19] + x[c + 19]);
    acc += T10 * (x[c - 21] + x[c + 21]);
    acc += T11 * (x[c - 23] + x[c + 23]);
    return acc;
  }

  /** Keeps the last DOWN_SPAN samples the outputs used, and any one left over, for the next push. */
  private keep(count: number): void {
    const used = DOWN_SPAN + 2 * count;
    this.x.copyWithin(0, used - DOWN_SPAN, this.held);
    this.held -= used - DOWN_SPAN;
    this.nonZeroEnd = Math.max(0, this.nonZeroEnd - (used - DOWN_SPAN));
  }
}
