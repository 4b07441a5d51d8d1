// Temporal's floor (bench/campaignScale.ts, "floor"): workflows of bench/campaignScale/
// floorWorkflows.ts started N at once on the bench's dev server, run by a worker in this
// process with the service worker's sticky-queue timeout and otherwise the SDK's defaults,
// CPU read from /proc: this process (the client and the worker) and the Temporal dev server.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { installTemporalRuntime, STICKY_QUEUE_TIMEOUT } from '../../src/temporal/worker.js';
import { treeCpuSeconds } from '../support/processCpu.js';

export interface FloorActivities {
  floorStep(): Promise<void>;
}

export interface FloorFigures {
  shape: 'minimal' | 'call-shaped';
  workflows: number;
  /** First start → last workflow's last step, ms. */
  wallMs: number;
  /** CPU ms per workflow: this process (client and worker), the Temporal dev server, and both. */
  clientWorkerMs: number;
  temporalMs: number;
  totalMs: number;
}

const WORKFLOWS_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), 'floorWorkflows.ts');

/** This process's CPU seconds (every thread: the client, the worker's workflow threads, the SDK's core). */
const ownCpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/**
 * Runs `workflows` minimal and then `workflows` call-shaped floor workflows (ring and talk
 * timers as a simulated call's), each shape started all at once over `concurrency` lanes
 * after a warm-up that is not counted.
 */
export async function measureFloor(opts: {
  client: Client;
  address: string;
  temporalPid: number;
  workflows: number;
  concurrency: number;
  ringMs: number;
  talkMs: number;
}): Promise<FloorFigures[]> {
  let steps = 0;
  let onStep: (() => void) | undefined;
  const activities: FloorActivities = {
    floorStep: async () => {
      steps += 1;
      onStep?.();
    },
  };
  installTemporalRuntime('WARN');
  const taskQueue = `bench-floor-${Date.now()}`;
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address: opts.address });
  const worker = await Worker.create({ connection, taskQueue, workflowBundle, activities, stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT });

  let run = 0;
  /** Starts `n` workflows of `shape` and resolves once every one took its last step. */
  const runShape = async (shape: FloorFigures['shape'], n: number): Promise<FloorFigures> => {
    run += 1;
    const stepsEach = shape === 'minimal' ? 1 : 2;
    const target = steps + n * stepsEach;
    const done = new Promise<void>((resolve) => {
      onStep = () => {
        if (steps >= target) resolve();
      };
    });
    const cpu0 = ownCpuSeconds();
    const temporal0 = treeCpuSeconds({ t: opts.temporalPid }).t;
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (next < n) {
          const i = next++;
          const common = { taskQueue, workflowId: `floor-${shape}-${run}-${i}` };
          if (shape === 'minimal') await opts.client.workflow.start('minimalFloorWorkflow', { ...common, args: [] });
          else await opts.client.workflow.start('callShapedFloorWorkflow', { ...common, args: [opts.ringMs, opts.talkMs] });
        }
      }),
    );
    await done;
    const wallMs = performance.now() - t0;
    // The last step's task completes the workflow right after it: let those replies land.
    await new Promise((r) => setTimeout(r, 1000));
    const clientWorker = ownCpuSeconds() - cpu0;
    const temporal = treeCpuSeconds({ t: opts.temporalPid }).t - temporal0;
    return { shape, workflows: n, wallMs, clientWorkerMs: (clientWorker * 1000) / n, temporalMs: (temporal * 1000) / n, totalMs: ((clientWorker + temporal) * 1000) / n };
  };

  try {
    return await worker.runUntil(async () => {
      const warm = Math.max(20, Math.min(200, Math.floor(opts.workflows / 10)));
      await runShape('minimal', warm);
      await runShape('call-shaped', warm);
      return [await runShape('minimal', opts.workflows), await runShape('call-shaped', opts.workflows)];
    });
  } finally {
    await connection.close();
  }
}
