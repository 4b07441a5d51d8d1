// Summaries of measured samples, shared by the benchmarks.

/** The middle value; for an even count, the mean of the two middle values. */
export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The value at index floor(n / 2) of the sorted values: the median, the upper one of the two for an even count. */
export function upperMedian(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

/** The value at index floor(q × n) of the sorted values (the last one at most), e.g. q = 0.95 for p95. */
export function quantile(values: number[], q: number): number {
  return [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
}

/** Writes one line of results to stdout. */
export const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};
