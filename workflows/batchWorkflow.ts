/**
 * One long-running workflow per batch (id `batch-<batch_id>`), docs/batches.md:
 *
 *   scheduled ── wait until start_at (a wake-up signal makes it look earlier: pause, cancel)
 *   running   ── tick, wait pollMs or a wake-up signal, tick, ... until the batch ends
 *   paused    ── ticks go on (ended calls and new list members are still counted) without
 *                handing out calls, until resumed
 *   completed / cancelled / failed ── the workflow returns
 *
 * Every decision lives in Postgres (the advanceBatch activity), so this loop keeps only
 * ticks and timers in its history and continues as new when the server suggests it, or
 * after maxTicksPerRun ticks or maxCallsPerRun calls, carrying nothing but its position.
 */
import { allHandlersFinished, condition, continueAsNew, proxyActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { BatchActivities } from '../activities/batches.js';
import { BATCH_STATUS } from '../src/temporal/searchAttributes.js';
import {
  batchStateQuery,
  batchWakeSignal,
  NOT_FOUND_FAILURE,
  type BatchProgress,
  type BatchWorkflowInput,
  type BatchWorkflowResult,
  type BatchWorkflowState,
} from './contracts.js';

// A tick is about eleven history events (activity, timer, workflow tasks): a run stays
// near 5,500 events, under the server's 10,240-event warning, whatever the batch size.
export const DEFAULT_MAX_TICKS_PER_RUN = 500;
export const DEFAULT_MAX_CALLS_PER_RUN = 10_000;

// The tick is idempotent and the batch cannot move on without it: retried until it
// succeeds (a database outage stalls the batch rather than failing it). A missing batch
// row is permanent.
const batches = proxyActivities<BatchActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

const NO_PROGRESS: BatchProgress = { total: 0, pending: 0, calling: 0, in_progress: 0, skipped: 0, skipped_dnc: 0, done: {}, done_total: 0, attempts: 0 };

export async function batchWorkflow(input: BatchWorkflowInput): Promise<BatchWorkflowResult> {
  const state: BatchWorkflowState = {
    batchId: input.batchId,
    status: input.lastState?.status ?? 'scheduled',
    endReason: null,
    progress: input.lastState?.progress ?? NO_PROGRESS,
    run: (input.lastState?.run ?? 0) + 1,
    ticks: 0,
  };
  let woken = false;
  setHandler(batchWakeSignal, () => {
    woken = true;
  });
  setHandler(batchStateQuery, () => state);

  const maxTicks = input.maxTicksPerRun ?? DEFAULT_MAX_TICKS_PER_RUN;
  const maxCalls = input.maxCallsPerRun ?? DEFAULT_MAX_CALLS_PER_RUN;
  const startAt = Date.parse(input.startAt);
  let started = input.started ?? false;
  let calls = 0;

  for (;;) {
    started ||= Date.now() >= startAt;
    woken = false;
    const tick = await batches.advanceBatch({ batchId: input.batchId, start: started });
    if (tick.status !== state.status) upsertSearchAttributes([{ key: BATCH_STATUS, value: tick.status }]);
    state.status = tick.status;
    state.endReason = tick.endReason;
    state.progress = tick.progress;
    state.ticks += 1;
    calls += tick.dispatched;
    if (tick.ended) return { batchId: input.batchId, status: tick.status, endReason: tick.endReason, progress: tick.progress };

    if (workflowInfo().continueAsNewSuggested || state.ticks >= maxTicks || calls >= maxCalls) {
      await condition(allHandlersFinished);
      return continueAsNew<typeof batchWorkflow>({ ...input, started, lastState: { ...state } });
    }
    // Before the start time there is nothing to poll for; after it, calls end and lists grow.
    const waitMs = started ? input.pollMs : Math.max(1, startAt - Date.now());
    await condition(() => woken, waitMs);
  }
}
