import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type LogLevel, type WorkflowBundle } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { PROJECT_ROOT } from '../config/index.js';
import { ensureCallsReconciler } from '../services/calls.js';

export const WORKFLOWS_PATH = path.join(PROJECT_ROOT, 'workflows', 'index.ts');

let bundlePromise: Promise<WorkflowBundle> | undefined;
let runtimeInstalled = false;

/** Routes the SDK's own logs (webpack, worker state) through one level; call before connecting. */
export function installTemporalRuntime(level: LogLevel = 'WARN'): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({ logger: new DefaultLogger(level) });
}

/** The workflow bundle, built once per process (webpack is slow on two cores). */
export function workflowBundle(): Promise<WorkflowBundle> {
  bundlePromise ??= bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  return bundlePromise;
}

export async function createWorker(opts: { connection: NativeConnection; namespace: string; taskQueue: string; deps: ActivityDeps }): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowBundle: await workflowBundle(),
    activities: createActivities(opts.deps),
  });
}

/** The service's worker, running: what `npm start` and `npm run worker` both start. */
export interface RunningWorker {
  /** Settles when the worker stops (after `shutdown`, or on a fatal error). */
  readonly done: Promise<void>;
  /** Asks the worker to stop, waits for it, and closes its connection. */
  shutdown(): Promise<void>;
}

/**
 * Connects to Temporal at `address`, starts the worker on the configured task queue, and
 * makes sure the calls reconciler workflow runs (it needs a worker to make progress).
 */
export async function startServiceWorker(address: string, deps: ActivityDeps): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address });
  const worker = await createWorker({ connection, namespace: deps.config.TEMPORAL_NAMESPACE, taskQueue: deps.config.TEMPORAL_TASK_QUEUE, deps });
  const done = worker.run().finally(() => connection.close());
  await ensureCallsReconciler({ temporal: deps.temporal, config: deps.config });
  return {
    done,
    async shutdown() {
      worker.shutdown();
      await done;
    },
  };
}
