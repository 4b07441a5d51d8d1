/**
 * Activities of event webhooks (docs/event-webhooks.md): one attempt of a delivery, the
 * record of an attempt whose activity was lost, the sweeper's pass, and the hook_run.failed
 * event a failing webhook-trigger run records.
 */
import { recordLostWebhookAttempt, sendWebhookDelivery } from '../src/services/webhookDeliveries.js';
import { hookRunFailedEvent, sweepWebhookDeliveries, withWebhookEvents, type SweepReport } from '../src/services/webhookEvents.js';
import type { WebhookAttemptResult } from '../workflows/contracts.js';
import type { ActivityDeps } from './index.js';
import { hookRuns } from '../src/metrics/callMetrics.js';

export function createWebhookActivities(deps: ActivityDeps) {
  const sendDeps = { pool: deps.pool, config: deps.config, logger: deps.logger, resolveHost: deps.resolveHost };
  return {
    /** One attempt: POST the signed event, record the answer, say when to try again (if at all). */
    async sendWebhookDelivery(input: { deliveryId: string; attempt: number }): Promise<WebhookAttemptResult> {
      return sendWebhookDelivery(sendDeps, input);
    },

    /** An attempt whose activity failed or timed out: a failed attempt, retried on the schedule. */
    async recordLostWebhookAttempt(input: { deliveryId: string; attempt: number; error: string }): Promise<WebhookAttemptResult> {
      return recordLostWebhookAttempt(sendDeps, input);
    },

    /** One pass of the sweeper: start lost delivery workflows, fail deliveries whose workflow is gone. */
    async sweepWebhookDeliveries(input: { startAfterMs: number; staleAfterMs: number }): Promise<SweepReport> {
      return sweepWebhookDeliveries(deps, input);
    },

    /** hook_run.failed, recorded by the run itself when it fails (its id is the run's, so once). */
    async recordHookRunFailed(input: { runId: string; hookId: string; teamId: string; error: string }): Promise<void> {
      await withWebhookEvents(deps, async () => ({ result: undefined, events: [hookRunFailedEvent(input)] }));
      hookRuns.inc({ outcome: 'failed' });
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
