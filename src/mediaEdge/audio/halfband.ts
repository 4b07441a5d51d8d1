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

/** 8 kHz → 16 kHz, streaming: each push of n samples gives 2n, SIDE_TAPS + 1 input samples (1.6 ms) late. */
export class Upsampler2 {
  /** The last 2·SIDE_TAPS input samples, oldest first. */
  private history = new Float64Array(2 * SIDE_TAPS);

  push(samples: Int16Array): Int16Array {
    const k = SIDE_TAPS;
    const x = new Float64Array(this.history.length + samples.length);
    x.set(this.history);
    x.set(samples, this.history.length);
    const out = new Int16Array(2 * samples.length);
    // Output pair m is centred on x[m + k - 1] (even) and between it and the next (odd).
    for (let m = 0; m < samples.length; m++) {
      const c = m + k - 1;
      let acc = 0;
      for (let j = 1; j <= k; j++) acc += ODD_TAPS[j - 1] * (x[c - j + 1] + x[c + j]);
      out[2 * m] = clamp(x[c]);
      out[2 * m + 1] = clamp(2 * acc);
    }
    this.history = x.slice(x.length - this.history.length);
    return out;
  }
}

/** 16 kHz → 8 kHz, streaming: each push of 2n samples gives n (an odd push carries its last sample over). */
export class Downsampler2 {
  /** The last 4·SIDE_TAPS − 2 input samples, oldest first, plus any odd one left over. */
  private history = new Float64Array(4 * SIDE_TAPS - 2);
  private carry: number[] = [];

  push(samples: Int16Array): Int16Array {
    const k = SIDE_TAPS;
    const span = 4 * k - 2;
    const x = new Float64Array(span + this.carry.length + samples.length);
    x.set(this.history);
    x.set(this.carry, span);
    x.set(samples, span + this.carry.length);
    const fresh = x.length - span;
    const count = Math.floor(fresh / 2);
    const out = new Int16Array(count);
    for (let m = 0; m < count; m++) {
      // Centred on x[2m + 2k - 1]: its odd neighbours carry the taps.
      const c = 2 * m + 2 * k - 1;
      let acc = 0.5 * x[c];
      for (let j = 1; j <= k; j++) acc += ODD_TAPS[j - 1] * (x[c - 2 * j + 1] + x[c + 2 * j - 1]);
      out[m] = clamp(acc);
    }
    const used = span + 2 * count;
    this.carry = Array.from(x.subarray(used));
    this.history = x.slice(used - span, used);
    return out;
  }
}
