/**
 * One workflow per event webhook delivery (id `webhook-delivery-<delivery_id>`),
 * docs/event-webhooks.md:
 *
 *   attempt 1 ── 2xx: succeeded │ 410: failed, endpoint disabled │ else: sleep the next delay
 *   attempt 2 ── ...
 *   attempt n ── after the last delay of WEBHOOK_RETRY_SCHEDULE: failed
 *
 * Each attempt is one activity (sendWebhookDelivery) that Temporal never retries by itself:
 * the delays are durable timers here, so the history shows every attempt and every wait.
 * An attempt whose activity is lost (its worker died) counts as a failed attempt.
 */
import { ActivityFailure, proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.js';
import type { WebhookAttemptResult, WebhookDeliveryInput, WebhookDeliveryResult } from './contracts.js';

// The POST has 10 s; the rest is for reading and writing the delivery's rows.
const attempts = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '20 seconds',
  retry: { maximumAttempts: 1 },
});

// Recording a lost attempt only writes rows: retried until it succeeds.
const bookkeeping = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  for (let attempt = 1; ; attempt += 1) {
    let result: WebhookAttemptResult;
    try {
      result = await attempts.sendWebhookDelivery({ deliveryId: input.deliveryId, attempt });
    } catch (err) {
      result = await bookkeeping.recordLostWebhookAttempt({ deliveryId: input.deliveryId, attempt, error: failureMessage(err) });
    }
    if (result.retryInSeconds === null) return { deliveryId: input.deliveryId, status: result.status, attempts: attempt };
    await sleep(result.retryInSeconds * 1000);
  }
}
