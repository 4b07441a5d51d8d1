/**
 * Signal level: RMS and dBFS (decibels relative to a full-scale square wave, so a
 * full-scale sine is -3 dBFS). Digital silence is SILENCE_DBFS rather than -Infinity,
 * so levels can be averaged and compared.
 */

/** The level given to digital silence, below anything a real line carries. */
export const SILENCE_DBFS = -100;
const FULL_SCALE = 32768;

/** Root mean square of the samples (0 for none). */
export function rms(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / samples.length);
}

/** RMS level in dBFS, at least SILENCE_DBFS. */
export function dbfs(samples: Int16Array): number {
  const value = rms(samples);
  return value === 0 ? SILENCE_DBFS : Math.max(SILENCE_DBFS, 20 * Math.log10(value / FULL_SCALE));
}

/** The linear gain that changes a level by `db` decibels. */
export function gainFromDb(db: number): number {
  return 10 ** (db / 20);
}
