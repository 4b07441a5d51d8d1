import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type LogLevel, type WorkflowBundle } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../../activities/index.js';
import { PROJECT_ROOT } from '../config/index.js';

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
