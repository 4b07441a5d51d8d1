// The service a calls benchmark drives (bench/sipCalls.ts, bench/voiceTurns.ts): its database,
// Temporal, the real API and the call workers with every real activity, in this process, on
// the queues `npm start` uses (docs/calls.md, "Task queues"): the API starts browser and
// inbound calls on the live-call queue, a worker polls it beside the main queue's, and the
// admission pacer (holding on that queue's backlog) admits due calls, so a campaign burst run
// beside the bench delays its calls as it would the service's. The bench then starts the
// media edge its own way (its trunk, clock, speech engines).
//
// `{ workers: false }` joins a service that runs elsewhere (bench/campaignScale.ts's): its
// Postgres (DATABASE_URL), Temporal (TEMPORAL_ADDRESS) and task queue (TEMPORAL_TASK_QUEUE in
// `settings`), whose worker runs the calls' workflows; this process then serves only the API
// and the edge the bench starts.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Config } from '../../src/config/index.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { migrate } from '../../src/db/migrate.js';
import { createLogger } from '../../src/logging/logger.js';
import { createRecordingStore, type RecordingStore } from '../../src/recordings/index.js';
import { startAdmissionPacer, type AdmissionPacer } from '../../src/services/admissionPacer.js';
import { createWorker, installTemporalRuntime, liveCallTaskQueue, workflowBacklog } from '../../src/temporal/worker.js';
import { startBenchApi, type BenchApi } from './api.js';
import { API_BENCH_SETTINGS, benchConfig, benchTempDir, connectBenchTemporal, openBenchDatabase, type BenchTemporal } from './environment.js';

export interface BenchCallStack {
  /** The bench's temp folder (recordings in `recordings/`), removed by stop(). */
  dir: string;
  pool: Pool;
  config: Config;
  temporal: BenchTemporal;
  /** Temporal's address, for the edge's worker. */
  address: string;
  api: BenchApi;
  recordings: RecordingStore;
  /** Stops the worker, the API, the pool, Temporal and the database, and removes `dir` (close the edge first). */
  stop(): Promise<void>;
}

/**
 * Starts the database (DATABASE_URL, else an embedded Postgres), Temporal (TEMPORAL_ADDRESS,
 * else a dev server), the API and (unless `workers` is false) the call workers on the task
 * queue `<name>-<pid>` and its live-call queue, and the admission pacer, with
 * `settings` over the bench's own (the API's, local recordings, the edge's secret).
 */
export async function startBenchCallStack(name: string, settings: Record<string, string> = {}, { workers: runWorkers = true } = {}): Promise<BenchCallStack> {
  const dir = benchTempDir(`${name}-`);
  installTemporalRuntime();
  const database = await openBenchDatabase(dir);
  const pool = createPool(database.url, 20);
  await migrate(pool);
  const temporal = await connectBenchTemporal();
  const config = benchConfig(database.url, {
    ...API_BENCH_SETTINGS,
    TEMPORAL_TASK_QUEUE: `${name}-${process.pid}`,
    MEDIA_EDGE_SECRET: 'bench-media-edge-secret-0123456789',
    RECORDINGS_STORE: 'local',
    RECORDINGS_DIR: path.join(dir, 'recordings'),
    ...settings,
  });
  const recordings = createRecordingStore(config);
  const live = liveCallTaskQueue(config.TEMPORAL_TASK_QUEUE);
  const api = await startBenchApi(config, pool, temporal.client, { liveTaskQueue: live });
  const address = temporal.env?.address ?? process.env.TEMPORAL_ADDRESS!;
  const connection = runWorkers ? await NativeConnection.connect({ address }) : undefined;
  const workers: Worker[] = [];
  let pacer: AdmissionPacer | undefined;
  if (connection) {
    // As startServiceWorker's, without the calls reconciler and the webhook sweeper (their
    // workflow ids are fixed, and a bench's would outlive it on a shared TEMPORAL_ADDRESS), and
    // without the live calls' pace: the runtime here serves no SDK metrics to read it from.
    const deps = { config, pool, logger: createLogger('silent'), temporal: temporal.client, recordings, liveTaskQueue: live };
    const queue = { connection, namespace: config.TEMPORAL_NAMESPACE, taskQueue: config.TEMPORAL_TASK_QUEUE, deps };
    workers.push(await createWorker(queue), await createWorker({ ...queue, taskQueue: live }));
    pacer = startAdmissionPacer(deps, {
      ratePerSecond: config.ADMISSION_RATE_PER_SECOND,
      liveBacklog: () => workflowBacklog(temporal.client, config.TEMPORAL_NAMESPACE, live),
    });
  }
  const workerRuns = Promise.all(workers.map((w) => w.run()));
  return {
    dir,
    pool,
    config,
    temporal,
    address,
    api,
    recordings,
    async stop() {
      await pacer?.stop();
      for (const w of workers) w.shutdown();
      await workerRuns;
      await connection?.close();
      await api.api.close();
      await pool.end();
      await temporal.close();
      await database.embedded?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
