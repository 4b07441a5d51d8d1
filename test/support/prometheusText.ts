// Reads the Prometheus text exposition format (what GET /metrics answers) for tests: the
// declared families with their types, and every sample with its labels.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  /** Family name -> type (counter, gauge, histogram, summary, untyped), from the `# TYPE` lines. */
  types: Map<string, string>;
  samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(/\s+/);
      types.set(name, type);
      continue;
    }
    if (line.startsWith('#') || line.trim() === '') continue;
    const match = SAMPLE.exec(line.trim());
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key] = value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return { types, samples };
}

/** The sum of a metric's samples whose labels include `labels` (0 when none). */
export function sampleSum(exposition: Exposition, name: string, labels: Record<string, string> = {}): number {
  return exposition.samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** Every series name a family of each declared type exposes (a histogram's _bucket, _sum and _count). */
export function seriesNames(exposition: Exposition): Set<string> {
  const names = new Set<string>();
  for (const [name, type] of exposition.types) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  for (const sample of exposition.samples) names.add(sample.name);
  return names;
}

/** GET a /metrics URL and parse it. */
export async function scrape(url: string): Promise<Exposition> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return parseExposition(await res.text());
}
