/**
 * Sample-rate conversion between the rates the edge meets (8 kHz telephone audio, 16 kHz
 * of the channel and the recogniser, 22.05 kHz of espeak-ng, 48 kHz of Opus) by a
 * polyphase windowed-sinc filter: a Kaiser-windowed low-pass at 90 % of the lower rate's
 * Nyquist frequency, so downsampling does not alias and upsampling leaves no images.
 *
 * The Resampler streams: frames go in one at a time and its history carries across them,
 * so frame boundaries do not click. Output sample n is the input's value at time n / toRate
 * exactly (no phase shift); the filter looks LOOKAHEAD input samples ahead, so a stream's
 * output trails its input by that much until flush().
 */

/** Passband edge as a fraction of the lower rate's Nyquist frequency. */
const PASSBAND = 0.9;
/** Zero crossings of the sinc on each side: filter length, i.e. steepness against cost. */
const ZERO_CROSSINGS = 20;
/** Kaiser window shape: about 80 dB of stopband attenuation. */
const KAISER_BETA = 8;

interface Filter {
  /** Output rate / input rate = up / down, in lowest terms. */
  up: number;
  down: number;
  /** Input samples the filter reaches on each side of an output's position. */
  halfTaps: number;
  /** up phases of 2 × halfTaps coefficients, phase-major. */
  coefficients: Float64Array;
}

const filters = new Map<string, Filter>();

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** Modified Bessel function of the first kind, order 0 (for the Kaiser window). */
export function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  for (let k = 1; k < 50; k++) {
    term *= (x / (2 * k)) ** 2;
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

function filterFor(fromRate: number, toRate: number): Filter {
  const key = `${fromRate}>${toRate}`;
  const cached = filters.get(key);
  if (cached) return cached;
  const g = gcd(fromRate, toRate);
  const up = toRate / g;
  const down = fromRate / g;
  // Cutoff in cycles per input sample.
  const cutoff = (PASSBAND * Math.min(fromRate, toRate)) / 2 / fromRate;
  const halfTaps = Math.ceil(ZERO_CROSSINGS / (2 * cutoff));
  const taps = 2 * halfTaps;
  const coefficients = new Float64Array(up * taps);
  const windowNorm = besselI0(KAISER_BETA);
  for (let phase = 0; phase < up; phase++) {
    const fraction = phase / up;
    let sum = 0;
    for (let j = 0; j < taps; j++) {
      // Tap j reads input i0 - halfTaps + 1 + j; its distance from the output's position i0 + fraction:
      const t = fraction + halfTaps - 1 - j;
      const x = t / halfTaps;
      const window = Math.abs(x) >= 1 ? 0 : besselI0(KAISER_BETA * Math.sqrt(1 - x * x)) / windowNorm;
      const arg = 2 * cutoff * t;
      const sinc = arg === 0 ? 1 : Math.sin(Math.PI * arg) / (Math.PI * arg);
      const h = 2 * cutoff * sinc * window;
      coefficients[phase * taps + j] = h;
      sum += h;
    }
    // Unity gain at DC in every phase (no ripple from the phase's truncation).
    for (let j = 0; j < taps; j++) coefficients[phase * taps + j] /= sum;
  }
  const filter = { up, down, halfTaps, coefficients };
  filters.set(key, filter);
  return filter;
}

/**
 * A streaming sample-rate converter for one mono stream. Its input history lives in one
 * growable buffer (appended to in place, compacted when consumed) and each push fills one
 * output array: a phone call resamples every 20 ms frame both ways, so per-frame allocations
 * and copies were most of its cost.
 */
export class Resampler {
  private readonly filter: Filter;
  /** Input samples from absolute index `bufferStart` on, at data[offset .. offset + length) (negative indexes are the silence before the stream). */
  private data: Float64Array;
  private offset = 0;
  private length: number;
  private bufferStart: number;
  private received = 0;
  private produced = 0;

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    for (const [name, rate] of [['fromRate', fromRate], ['toRate', toRate]] as const) {
      if (!Number.isInteger(rate) || rate <= 0) throw new RangeError(`${name} must be a positive whole number of hertz, got ${rate}`);
    }
    this.filter = filterFor(fromRate, toRate);
    this.data = new Float64Array(4 * this.filter.halfTaps + 1024);
    this.length = this.filter.halfTaps;
    this.bufferStart = -this.filter.halfTaps;
  }

  /** Input samples the output waits for before it can be computed. */
  get lookahead(): number {
    return this.filter.halfTaps;
  }

  /** Takes the next input samples; returns every output sample they make computable. */
  push(samples: Int16Array): Int16Array {
    this.append(samples);
    this.received += samples.length;
    return this.produce(this.received);
  }

  /** Ends the stream: returns the remaining output (the input followed by silence) and starts afresh. */
  flush(): Int16Array {
    const total = Math.ceil((this.received * this.filter.up) / this.filter.down);
    this.append(new Int16Array(this.filter.halfTaps + 1));
    const out = this.produce(Number.POSITIVE_INFINITY, total);
    this.data.fill(0);
    this.offset = 0;
    this.length = this.filter.halfTaps;
    this.bufferStart = -this.filter.halfTaps;
    this.received = 0;
    this.produced = 0;
    return out;
  }

  private append(samples: Int16Array): void {
    const needed = this.length + samples.length;
    if (this.offset + needed > this.data.length) {
      if (needed <= this.data.length / 2) {
        this.data.copyWithin(0, this.offset, this.offset + this.length);
      } else {
        const grown = new Float64Array(2 * needed);
        grown.set(this.data.subarray(this.offset, this.offset + this.length));
        this.data = grown;
      }
      this.offset = 0;
    }
    this.data.set(samples, this.offset + this.length);
    this.length = needed;
  }

  /** Outputs whose taps all lie below input index `available`, up to `limit` outputs in all. */
  private produce(available: number, limit = Number.POSITIVE_INFINITY): Int16Array {
    const { up, down, halfTaps, coefficients } = this.filter;
    const taps = 2 * halfTaps;
    const end = this.bufferStart + this.length;
    const reach = Math.min(available, end);
    // At most this many outputs can be computable (an upper bound; the loop decides).
    const room = Math.max(0, Math.min(limit - this.produced, Math.ceil(((reach - halfTaps + 1) * up) / down) - this.produced + 1));
    const out = new Int16Array(room);
    const data = this.data;
    const base0 = this.offset - this.bufferStart;
    let n = 0;
    while (n < room) {
      const position = this.produced * down;
      const i0 = Math.floor(position / up);
      if (i0 + halfTaps >= reach) break;
      const phase = position - i0 * up;
      const first = base0 + i0 - halfTaps + 1;
      const base = phase * taps;
      let acc = 0;
      for (let j = 0; j < taps; j++) acc += coefficients[base + j] * data[first + j];
      out[n++] = acc > 32767 ? 32767 : acc < -32768 ? -32768 : Math.round(acc);
      this.produced++;
    }
    // Keep only what the next output still reads.
    const keepFrom = Math.floor((this.produced * down) / up) - halfTaps + 1;
    if (keepFrom > this.bufferStart) {
      const drop = Math.min(keepFrom - this.bufferStart, this.length);
      this.offset += drop;
      this.length -= drop;
      this.bufferStart += drop;
    }
    return n === room ? out : out.slice(0, n);
  }
}

/** Converts a whole mono signal from one rate to another (length scales with the ratio, rounded up). */
export function resample(samples: Int16Array, fromRate: number, toRate: number): Int16Array {
  if (fromRate === toRate) return samples.slice();
  const resampler = new Resampler(fromRate, toRate);
  const head = resampler.push(samples);
  const tail = resampler.flush();
  const out = new Int16Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}
