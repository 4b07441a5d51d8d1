// Temporal's floor on the bench's own stack (bench/campaignScale.ts, "floor"): the least a
// workflow of a simulated call's shape costs, in a bundle of the bench's own, never among
// the service's workflows. The local activity does nothing but count, in the bench process.
import { proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { FloorActivities } from './floor.js';

const { floorStep } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });

/** One local activity, then done. */
export async function minimalFloorWorkflow(): Promise<void> {
  await floorStep();
}

/**
 * A simulated call's shape with nothing else in it: two timers (ring, talk) and two local
 * activities (answered, ended); the last activity and the completion share one task.
 */
export async function callShapedFloorWorkflow(ringMs: number, talkMs: number): Promise<void> {
  await sleep(ringMs);
  await floorStep();
  await sleep(talkMs);
  await floorStep();
}
