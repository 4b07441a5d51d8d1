/**
 * The singleton `webhook-delivery-sweeper` (docs/event-webhooks.md, "Durability"): every 30 s,
 * one pass that starts the workflow of any delivery left without one (the process that
 * recorded the event died before starting it, or the start failed) and fails deliveries
 * whose workflow is gone. Continues as new every so often to keep its history short.
 */
import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.js';

const { sweepWebhookDeliveries } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '5 seconds', maximumInterval: '1 minute', maximumAttempts: 3 },
});

export interface WebhookDeliverySweeperInput {
  intervalMs?: number;
  /** A delivery younger than this may still be starting its workflow where it was recorded. */
  startAfterMs?: number;
  /** An open delivery this far past its due attempt gets its workflow checked. */
  staleAfterMs?: number;
}

const PASSES_PER_RUN = 100;

export async function webhookDeliverySweeperWorkflow(input: WebhookDeliverySweeperInput = {}): Promise<void> {
  const intervalMs = input.intervalMs ?? 30_000;
  for (let pass = 0; pass < PASSES_PER_RUN; pass++) {
    try {
      await sweepWebhookDeliveries({ startAfterMs: input.startAfterMs ?? 15_000, staleAfterMs: input.staleAfterMs ?? 15 * 60_000 });
    } catch {
      // The next pass tries again.
    }
    await sleep(intervalMs);
  }
  await continueAsNew<typeof webhookDeliverySweeperWorkflow>(input);
}
