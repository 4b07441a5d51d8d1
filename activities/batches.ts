// Activities of the batch workflow (workflows/batchWorkflow.ts). One activity, the tick:
// it is idempotent (docs/batches.md), so a retry after a lost result or a worker restart
// never calls a contact twice.
import { advanceBatch, type BatchTick } from '../src/services/batchEngine.js';
import type { ActivityDeps } from './index.js';

export function createBatchActivities(deps: ActivityDeps) {
  return {
    /** One tick of a batch: learn ended calls, take in new list members, hand out calls, end when done. */
    async advanceBatch(input: { batchId: string; start: boolean }): Promise<BatchTick> {
      return advanceBatch(deps, input.batchId, { start: input.start });
    },
  };
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;
