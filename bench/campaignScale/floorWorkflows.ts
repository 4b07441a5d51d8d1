// Temporal's floor on the bench's own stack (bench/campaignScale.ts, "floor"): the least a
// workflow of a simulated call's shape costs, in a bundle of the bench's own, never among
// the service's workflows. The local activity does nothing but count, in the bench process.
// The ingredient shapes (BENCH_FLOOR_SHAPES) add one thing a simulated call's history holds
// to the call shape each, so the bench can say what each costs (docs/benchmarks.md).
import {
  condition,
  defineSignal,
  makeContinueAsNewFunc,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { CALL_STATUS } from '../../src/temporal/searchAttributes.js';
import type { FloorActivities } from './floor.js';

const { floorStep } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });

/** The grant a call sleeping in the admission line waits for (the service's slotGranted). */
export const floorGrantSignal = defineSignal('floorGrant');

/** What a call-shaped floor workflow adds to the bare shape (one ingredient, or all of them). */
export interface FloorIngredients {
  /** upsertMemo calls in the answer's task (a simulated call: one per script step, 7). */
  memos?: number;
  /** Search-attribute upserts of a status, at the start and at the end (a call: in-progress, then its terminal status). */
  statusUpserts?: boolean;
  /** patched() calls in the first task (each a marker; the SDK also upserts TemporalChangeVersion). */
  patches?: number;
  /** Wait for one floorGrant signal first, behind a long timer (a call sleeping in the admission line). */
  signal?: boolean;
  /** A first run that takes one local activity and continues as new onto this task queue (the live-call queue). */
  continueAsNewTo?: string;
  /** A third timer after the last local activity, then one more (post-call analysis: its delay, then analyseCall). */
  analysisMs?: number;
}

/** One local activity, then done. */
export async function minimalFloorWorkflow(): Promise<void> {
  await floorStep('');
}

/**
 * A simulated call's shape with nothing else in it: two timers (ring, talk) and two local
 * activities (answered, ended); the last activity and the completion share one task.
 */
export async function callShapedFloorWorkflow(ringMs: number, talkMs: number): Promise<void> {
  await sleep(ringMs);
  await floorStep('');
  await sleep(talkMs);
  await floorStep('');
}

/**
 * The call shape plus `ingredients`. A signalled run first takes one local activity in its
 * start task (it tells the bench the timer is set, so the signal comes in a task of its own,
 * as a grant does) and waits; a continued run takes one local activity (the admission) and
 * continues as new, and the call shape runs in the second run.
 */
export async function ingredientFloorWorkflow(ringMs: number, talkMs: number, ingredients: FloorIngredients, continued = false): Promise<void> {
  if (!continued) {
    for (let i = 0; i < (ingredients.patches ?? 0); i++) patched(`floor-patch-${i}`);
    if (ingredients.signal) {
      let granted = false;
      setHandler(floorGrantSignal, () => {
        granted = true;
      });
      const wait = condition(() => granted, '1 hour');
      await floorStep(workflowInfo().workflowId);
      await wait;
    }
    if (ingredients.continueAsNewTo) {
      await floorStep('');
      return makeContinueAsNewFunc<typeof ingredientFloorWorkflow>({ taskQueue: ingredients.continueAsNewTo })(ringMs, talkMs, ingredients, true);
    }
  }
  if (ingredients.statusUpserts) upsertSearchAttributes([{ key: CALL_STATUS, value: 'in-progress' }]);
  await sleep(ringMs);
  for (let i = 0; i < (ingredients.memos ?? 0); i++) upsertMemo({ floor_step: { n: i + 1 } });
  await floorStep('');
  await sleep(talkMs);
  if (ingredients.statusUpserts) upsertSearchAttributes([{ key: CALL_STATUS, value: 'completed' }]);
  await floorStep('');
  if (ingredients.analysisMs !== undefined) {
    await sleep(ingredients.analysisMs);
    await floorStep('');
  }
}
