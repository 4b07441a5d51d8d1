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
import { ANALYSIS_DELAY_MS } from '../../workflows/callWorkflow.js';
import { floorGrantSignal, type FloorIngredients } from './floorWorkflows.js';

export interface FloorActivities {
  /** Counts a step; a signalled workflow names itself in its first step, and the bench then sends its grant. */
  floorStep(workflowId: string): Promise<void>;
}

/** A simulated call's script steps (DEMO_SCRIPT's path to its end), each one memo upsert. */
const SCRIPT_MEMOS = 7;

/**
 * The floor's shapes, by the name BENCH_FLOOR_SHAPES gives: the two the targets use
 * (minimal, call-shaped), then the call shape plus one ingredient of a simulated call's
 * history each, and all of them at once. `steps` is the local activities each workflow takes.
 */
const SHAPES: Record<string, { steps: number; ingredients?: (liveQueue: string) => FloorIngredients }> = {
  minimal: { steps: 1 },
  'call-shaped': { steps: 2 },
  memos: { steps: 2, ingredients: () => ({ memos: SCRIPT_MEMOS }) },
  'status-upserts': { steps: 2, ingredients: () => ({ statusUpserts: true }) },
  patches: { steps: 2, ingredients: () => ({ patches: 2 }) },
  signal: { steps: 3, ingredients: () => ({ signal: true }) },
  'continue-as-new': { steps: 3, ingredients: (live) => ({ continueAsNewTo: live }) },
  analysis: { steps: 3, ingredients: () => ({ analysisMs: ANALYSIS_DELAY_MS }) },
  all: {
    steps: 5,
    ingredients: (live) => ({ memos: SCRIPT_MEMOS, statusUpserts: true, patches: 2, signal: true, continueAsNewTo: live, analysisMs: ANALYSIS_DELAY_MS }),
  },
};
export const FLOOR_SHAPES = Object.keys(SHAPES);

export interface FloorFigures {
  shape: string;
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
 * Runs `workflows` workflows of each of `shapes` (default minimal and call-shaped; ring and
 * talk timers as a simulated call's), each shape started all at once over `concurrency` lanes
 * after a warm-up that is not counted. A worker in this process polls the floor's queue and
 * a second one (the continue-as-new shapes' "live" queue).
 */
export async function measureFloor(opts: {
  client: Client;
  address: string;
  temporalPid: number;
  workflows: number;
  concurrency: number;
  ringMs: number;
  talkMs: number;
  shapes?: string[];
}): Promise<FloorFigures[]> {
  const shapes = opts.shapes ?? ['minimal', 'call-shaped'];
  const unknown = shapes.filter((s) => !SHAPES[s]);
  if (unknown.length) throw new Error(`BENCH_FLOOR_SHAPES: unknown shape ${unknown.join(', ')} (known: ${FLOOR_SHAPES.join(', ')})`);
  let steps = 0;
  let onStep: (() => void) | undefined;
  const grants: Promise<void>[] = [];
  const activities: FloorActivities = {
    floorStep: async (workflowId) => {
      steps += 1;
      // The timer is set and this task is the workflow's first: its grant comes in a task of its own.
      if (workflowId) grants.push(opts.client.workflow.getHandle(workflowId).signal(floorGrantSignal));
      onStep?.();
    },
  };
  installTemporalRuntime('WARN');
  const taskQueue = `bench-floor-${Date.now()}`;
  const liveQueue = `${taskQueue}-live`;
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  const connection = await NativeConnection.connect({ address: opts.address });
  const workerOptions = { connection, workflowBundle, activities, stickyQueueScheduleToStartTimeout: STICKY_QUEUE_TIMEOUT };
  const worker = await Worker.create({ ...workerOptions, taskQueue });
  const liveWorker = await Worker.create({ ...workerOptions, taskQueue: liveQueue });

  let run = 0;
  /** Starts `n` workflows of `shape` and resolves once every one took its last step. */
  const runShape = async (shape: string, n: number): Promise<FloorFigures> => {
    run += 1;
    const { steps: stepsEach, ingredients } = SHAPES[shape];
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
          else if (!ingredients) await opts.client.workflow.start('callShapedFloorWorkflow', { ...common, args: [opts.ringMs, opts.talkMs] });
          else await opts.client.workflow.start('ingredientFloorWorkflow', { ...common, args: [opts.ringMs, opts.talkMs, ingredients(liveQueue)] });
        }
      }),
    );
    await done;
    await Promise.all(grants.splice(0));
    const wallMs = performance.now() - t0;
    // The last step's task completes the workflow right after it: let those replies land.
    await new Promise((r) => setTimeout(r, 1000));
    const clientWorker = ownCpuSeconds() - cpu0;
    const temporal = treeCpuSeconds({ t: opts.temporalPid }).t - temporal0;
    return { shape, workflows: n, wallMs, clientWorkerMs: (clientWorker * 1000) / n, temporalMs: (temporal * 1000) / n, totalMs: ((clientWorker + temporal) * 1000) / n };
  };

  try {
    return await liveWorker.runUntil(
      worker.runUntil(async () => {
        const warm = Math.max(20, Math.min(200, Math.floor(opts.workflows / 10)));
        for (const shape of shapes) await runShape(shape, warm);
        const figures: FloorFigures[] = [];
        for (const shape of shapes) figures.push(await runShape(shape, opts.workflows));
        return figures;
      }),
    );
  } finally {
    await connection.close();
  }
}
