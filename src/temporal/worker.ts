import path from 'node:path';
import { inspect } from 'node:util';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type InjectedSinks, type LogEntry, type LogLevel, type WorkflowBundle } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { PROJECT_ROOT, workflowBundleDir } from '../config/index.js';
import type { Logger } from '../logging/logger.js';
import { redactCredentials, redactLogValue } from '../logging/redaction.js';
import { liveTimerLateness } from '../metrics/workerMetrics.js';
import { liveCallPace, LIVE_PACE_READ_MS, startAdmissionPacer } from '../services/admissionPacer.js';
import { TASK_START_BUCKETS, watchLiveTaskLatency } from './liveTaskLatency.js';
import { ensureCallsReconciler } from '../services/calls.js';
import { ensureWebhookDeliverySweeper } from '../services/webhookEvents.js';
import { tracedWorkerOptions, workflowInterceptorModules } from '../tracing/tracing.js';
import { TEST_WORKFLOW_BUNDLES_DIR, workflowBundleForWorker } from './workflowBundleCache.js';
import { liveCallTaskQueue, webhookTaskQueue } from '../../workflows/contracts.js';
import type { LiveTimerSinks } from '../../workflows/interceptors/liveTimerLateness.js';

export const WORKFLOWS_PATH = path.join(PROJECT_ROOT, 'workflows', 'index.ts');
/** Bundled into every worker's workflow code: it tells how late live calls' timers fire (the `liveTimers` sink). */
const LIVE_TIMER_INTERCEPTOR = path.join(PROJECT_ROOT, 'workflows', 'interceptors', 'liveTimerLateness.ts');

/** One bundle per kind (with the tracing interceptor module, tracing on, and without) and cache folder. */
const bundlePromises = new Map<string, Promise<WorkflowBundle>>();
let runtimeInstalled = false;
/** Where this process's runtime serves the SDK's metrics, once installed with them. */
let runtimeMetricsUrl: string | undefined;

/**
 * The SDK's default line on stderr, redacted like the project's own logs: activity and
 * workflow failures carry error messages, and workflow `log` calls their attributes.
 */
export function writeTemporalLog(entry: LogEntry, write: (line: string) => void = (line) => process.stderr.write(line)): void {
  const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
  const meta = entry.meta === undefined ? '' : ` ${inspect(redactLogValue(entry.meta), { breakLength: Infinity, depth: 6 })}`;
  write(`${time} [${entry.level}] ${redactCredentials(entry.message)}${meta}\n`);
}

/**
 * Routes the SDK's own logs (webpack, worker state) through one level; call before connecting.
 * With `metrics`, the SDK's worker metrics are served for Prometheus at its `bindAddress`
 * (host:port, /metrics; docs/observability.md); when that cannot be bound, `onError` is told
 * and the runtime is installed without them. `ownSignals`: the process handles SIGINT and
 * SIGTERM itself, so the SDK does not shut its workers down first (the media edge drains its
 * calls before its worker stops; a second shutdown() of a draining worker throws).
 */
export function installTemporalRuntime(level: LogLevel = 'WARN', metrics?: { bindAddress: string; onError: (err: Error) => void }, opts: { ownSignals?: boolean } = {}): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const logger = new DefaultLogger(level, (entry) => writeTemporalLog(entry));
  const signals = opts.ownSignals ? { shutdownSignals: [] } : {};
  if (metrics) {
    try {
      // Names as Prometheus expects them: counters end in _total, durations in _seconds.
      Runtime.install({
        logger,
        ...signals,
        telemetryOptions: {
          metrics: {
            prometheus: { bindAddress: metrics.bindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true, histogramBucketOverrides: TASK_START_BUCKETS },
          },
        },
      });
      runtimeMetricsUrl = `http://${metrics.bindAddress}/metrics`;
      return;
    } catch (err) {
      metrics.onError(err as Error);
    }
  }
  Runtime.install({ logger, ...signals });
}

/**
 * The workflow bundle, made once per process (webpack is slow on two cores); with the workflow's
 * span interceptors when tracing is on. Kept in `cacheDir` (workflowBundleDir: WORKFLOW_BUNDLE_CACHE_DIR)
 * under the content of every file in it, so a worker started again reads it instead of running
 * webpack (about 5 s of a quiet machine's CPU, minutes on a loaded one; workflowBundleCache.ts).
 * Without `cacheDir`: the test runs' shared folder under the test runner (NODE_ENV=test), else
 * built in memory.
 */
export function workflowBundle(cacheDir?: string, logger?: Logger): Promise<WorkflowBundle> {
  const tracingModules = workflowInterceptorModules();
  const traced = tracingModules.length > 0;
  const interceptorModules = [LIVE_TIMER_INTERCEPTOR, ...tracingModules];
  const dir = cacheDir ?? (process.env.NODE_ENV === 'test' ? TEST_WORKFLOW_BUNDLES_DIR : undefined);
  const memoKey = `${traced} ${dir ?? ''}`;
  let bundle = bundlePromises.get(memoKey);
  if (!bundle) {
    const options = { workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: interceptorModules, logger: new DefaultLogger('WARN') };
    bundle = dir === undefined ? bundleWorkflowCode(options) : keptWorkflowBundle(options, dir, logger);
    bundlePromises.set(memoKey, bundle);
  }
  return bundle;
}

async function keptWorkflowBundle(options: Parameters<typeof workflowBundleForWorker>[0], dir: string, logger?: Logger): Promise<WorkflowBundle> {
  const started = Date.now();
  const result = await workflowBundleForWorker(options, dir);
  const ms = Date.now() - started;
  if (!result.kept) logger?.warn({ dir, reason: result.reason, ms }, 'workflow bundle cache folder unusable: bundle built in memory');
  else logger?.info({ dir, ms }, result.built ? 'workflow bundle built and kept' : 'workflow bundle read from the cache');
  return { code: result.code };
}

/**
 * A workflow task may wait this long on the worker's own (sticky) queue. Thousands of calls
 * falling due at once queue tasks for longer than the default 10 s; past it each task times
 * out, moves to the shared queue and is replayed (hundreds of timeouts per 1,000-call burst
 * on two cores, docs/benchmarks.md). A worker that dies leaves its tasks there this long
 * before another worker takes them.
 */
export const STICKY_QUEUE_TIMEOUT = '60 seconds';

// The live-call task queue's name is the workflows' contract (the API starts calls there too).
export { liveCallTaskQueue };

/** The `liveTimers` sink: each live timer's lateness goes to the worker's histogram. Not called on replay. */
const LIVE_TIMER_SINKS: InjectedSinks<LiveTimerSinks> = {
  liveTimers: {
    fired: {
      fn: (_info, lateMs) => liveTimerLateness.observe(lateMs / 1000),
      callDuringReplay: false,
    },
  },
};

export async function createWorker(opts: { connection: NativeConnection; namespace: string; taskQueue: string; deps: ActivityDeps }): Promise<Worker> {
  const traced = tracedWorkerOptions();
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: await workflowBundle(workflowBundleDir(opts.deps.config), opts.deps.logger),
    activities: createActivities(opts.deps),
    ...traced,
    sinks: { ...traced.sinks, ...LIVE_TIMER_SINKS },
    stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT,
    workflowThreadPoolSize: opts.deps.config.WORKER_WORKFLOW_THREADS,
    maxConcurrentWorkflowTaskExecutions: opts.deps.config.WORKER_MAX_WORKFLOW_TASKS,
    maxConcurrentLocalActivityExecutions: opts.deps.config.WORKER_MAX_LOCAL_ACTIVITIES,
  });
}

/**
 * The worker of the event webhook queue (`<taskQueue>-webhooks`): delivery workflows and
 * their attempts, with room for many attempts waiting on slow endpoints at once, none of
 * them in a slot that a call needs.
 */
export async function createWebhookWorker(opts: { connection: NativeConnection; namespace: string; taskQueue: string; deps: ActivityDeps }): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: webhookTaskQueue(opts.taskQueue),
    workflowBundle: await workflowBundle(workflowBundleDir(opts.deps.config), opts.deps.logger),
    activities: createActivities(opts.deps),
    ...tracedWorkerOptions(),
    maxConcurrentActivityTaskExecutions: opts.deps.config.WEBHOOK_MAX_CONCURRENT_SENDS,
  });
}

/** The workflow tasks waiting on `taskQueue` (its normal queue; Temporal's approximate count). */
export async function workflowBacklog(temporal: Client, namespace: string, taskQueue: string): Promise<number> {
  const described = await temporal.workflowService.describeTaskQueue({
    namespace,
    // TASK_QUEUE_KIND_NORMAL and TASK_QUEUE_TYPE_WORKFLOW (temporal.api.enums.v1).
    taskQueue: { name: taskQueue, kind: 1 },
    taskQueueType: 1,
    reportStats: true,
  });
  return Number(described.stats?.approximateBacklogCount ?? 0);
}

/** The service's worker, running: what `npm start` and `npm run worker` both start. */
export interface RunningWorker {
  /** Settles when the worker stops (after `shutdown`, or on a fatal error). */
  readonly done: Promise<void>;
  /** Asks the worker to stop, waits for it, and closes its connection. */
  shutdown(): Promise<void>;
}

/**
 * Connects to Temporal at `address`, starts the workers of the configured task queue, of its
 * live-call queue and of its webhook queue, and makes sure the calls reconciler and the webhook delivery sweeper
 * run (they need a worker to make progress), and runs this process's admission pacer. When one worker stops, so does the other.
 */
export async function startServiceWorker(address: string, deps: ActivityDeps): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address });
  const live = liveCallTaskQueue(deps.config.TEMPORAL_TASK_QUEUE);
  // The live calls' pace, read from the SDK's metrics: the admission pacer follows it, and while
  // it is late the slots this worker's calls free are left to the pacer. Without the metrics
  // (METRICS_ENABLED=false) it never reads late: the pacer admits at its rate alone.
  const livePace = liveCallPace();
  const activityDeps: ActivityDeps = { ...deps, liveTaskQueue: live, holdFreedSlots: () => livePace.late(Date.now()) };
  const queue = { connection, namespace: deps.config.TEMPORAL_NAMESPACE, taskQueue: deps.config.TEMPORAL_TASK_QUEUE, deps: activityDeps };
  const workers = [await createWorker(queue), await createWorker({ ...queue, taskQueue: live }), await createWebhookWorker(queue)];
  const stopAll = () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
  };
  const done = Promise.allSettled(workers.map((w) => w.run().finally(stopAll)))
    .then((results) => {
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    })
    .finally(() => connection.close());
  await ensureCallsReconciler({ temporal: deps.temporal, config: deps.config });
  await ensureWebhookDeliverySweeper({ temporal: deps.temporal, config: deps.config });
  // Admits due calls from the line at the rate this worker sustains (docs/calls.md, "Admission").
  const pacer = startAdmissionPacer(
    { pool: deps.pool, temporal: deps.temporal, logger: deps.logger },
    { ratePerSecond: deps.config.ADMISSION_RATE_PER_SECOND, liveBacklog: () => workflowBacklog(deps.temporal, deps.config.TEMPORAL_NAMESPACE, live), livePace },
  );
  const watch = runtimeMetricsUrl ? watchLiveTaskLatency({ metricsUrl: runtimeMetricsUrl, taskQueue: live, pace: livePace, everyMs: LIVE_PACE_READ_MS, logger: deps.logger }) : undefined;
  const stopped = done.finally(() => {
    watch?.stop();
    return pacer.stop();
  });
  return {
    done: stopped,
    async shutdown() {
      watch?.stop();
      await pacer.stop();
      stopAll();
      await stopped;
    },
  };
}
