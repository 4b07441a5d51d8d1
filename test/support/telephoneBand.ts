// A caller on the telephone: 16 kHz speech band-limited to 300–3400 Hz, down to 8 kHz,
// through G.711 μ-law and back, and up to 16 kHz again, as the edge hears a phone call.
import { SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { decodeMulaw, encodeMulaw } from '../../src/mediaEdge/audio/mulaw.js';
import { resample } from '../../src/mediaEdge/audio/resample.js';

const PHONE_RATE = 8_000;

/** A second-order filter (the RBJ audio-EQ cookbook's high- and low-pass, Q = 1/√2). */
function biquad(samples: Float64Array, rate: number, cutoffHz: number, kind: 'highpass' | 'lowpass'): Float64Array {
  const w = (2 * Math.PI * cutoffHz) / rate;
  const alpha = Math.sin(w) / (2 * Math.SQRT1_2);
  const cos = Math.cos(w);
  const b1 = kind === 'lowpass' ? 1 - cos : -(1 + cos);
  const b0 = kind === 'lowpass' ? b1 / 2 : -b1 / 2;
  const a0 = 1 + alpha;
  const [nb0, nb1, nb2, na1, na2] = [b0 / a0, b1 / a0, b0 / a0, (-2 * cos) / a0, (1 - alpha) / a0];
  const out = new Float64Array(samples.length);
  let [x1, x2, y1, y2] = [0, 0, 0, 0];
  for (let i = 0; i < samples.length; i++) {
    const y = nb0 * samples[i] + nb1 * x1 + nb2 * x2 - na1 * y1 - na2 * y2;
    [x2, x1, y2, y1] = [x1, samples[i], y1, y];
    out[i] = y;
  }
  return out;
}

/** `samples` (16 kHz) as they arrive from a telephone line: 300–3400 Hz, 8 kHz μ-law, back at 16 kHz. */
export function overTelephone(samples: Int16Array): Int16Array {
  let band: Float64Array = Float64Array.from(samples);
  for (const [cutoff, kind] of [[300, 'highpass'], [300, 'highpass'], [3400, 'lowpass'], [3400, 'lowpass']] as const) band = biquad(band, SAMPLE_RATE, cutoff, kind);
  const clipped = Int16Array.from(band, (v) => Math.max(-32768, Math.min(32767, Math.round(v))));
  const line = decodeMulaw(encodeMulaw(resample(clipped, SAMPLE_RATE, PHONE_RATE)));
  return resample(line, PHONE_RATE, SAMPLE_RATE);
}
