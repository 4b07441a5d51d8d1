/**
 * The singleton `calls-reconciler`: every minute, one pass that starts the workflow of any
 * call row left without one (the API died between writing the row and starting the
 * workflow, or the start failed) and fails open calls whose workflow is gone. Continues
 * as new every so often to keep its history short. docs/calls.md, "Reconciler".
 */
import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { CallActivities } from '../activities/calls.js';

const { reconcileCalls } = proxyActivities<CallActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 3 },
});

export interface CallsReconcilerInput {
  intervalMs?: number;
  /** A row younger than this may still be starting its workflow in the API. */
  startAfterMs?: number;
  /** An open call that has not changed for this long gets its workflow checked. */
  staleAfterMs?: number;
}

const PASSES_PER_RUN = 100;

export async function callsReconcilerWorkflow(input: CallsReconcilerInput = {}): Promise<void> {
  const intervalMs = input.intervalMs ?? 60_000;
  for (let pass = 0; pass < PASSES_PER_RUN; pass++) {
    try {
      await reconcileCalls({ startAfterMs: input.startAfterMs ?? 30_000, staleAfterMs: input.staleAfterMs ?? 15 * 60_000 });
    } catch {
      // The next pass tries again.
    }
    await sleep(intervalMs);
  }
  await continueAsNew<typeof callsReconcilerWorkflow>(input);
}
