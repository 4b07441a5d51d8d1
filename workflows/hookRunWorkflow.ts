// One run of a webhook hook's automation (docs/webhooks.md): map the request body to a
// contact, then schedule a call or add the contact to a list. Started by
// POST /api/v1/hooks/{token} with id hook-run-<run_id>.
import { ActivityFailure, ApplicationFailure, isCancellation, log, patched, proxyActivities } from '@temporalio/workflow';
import type { createHookActivities } from '../activities/hooks.js';
import type { WebhookActivities } from '../activities/webhooks.js';
import { mapHookContact } from '../src/domain/hookAutomation.js';
import type { HookRunInput, HookRunResult } from './contracts.js';

/** Failure types of a run, as shown in the Temporal UI. */
export const UNMAPPABLE_WEBHOOK_BODY = 'UnmappableWebhookBody';

const activities = proxyActivities<ReturnType<typeof createHookActivities>>({
  startToCloseTimeout: '30 seconds',
  // Each activity is idempotent (the call id derives from the run id), so retrying is
  // safe; bounded because a run that cannot reach the database for minutes has failed.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

// The hook_run.failed event (docs/event-webhooks.md): a few tries, and the run's own failure
// stands whatever happens to the event.
const events = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** Runs recorded before the event existed replay without it. */
const HOOK_RUN_FAILED_EVENT_PATCH = 'hook-run-failed-event';

function failureReason(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}

export async function hookRunWorkflow(input: HookRunInput): Promise<HookRunResult> {
  try {
    return await runAutomation(input);
  } catch (err) {
    if (!isCancellation(err) && patched(HOOK_RUN_FAILED_EVENT_PATCH)) {
      try {
        await events.recordHookRunFailed({ runId: input.runId, hookId: input.hookId, teamId: input.teamId, error: failureReason(err) });
      } catch (recordErr) {
        log.warn('hook_run.failed event not recorded', { error: failureReason(recordErr) });
      }
    }
    throw err;
  }
}

async function runAutomation(input: HookRunInput): Promise<HookRunResult> {
  const { automation } = input;
  if (automation.kind === 'none') return { run_id: input.runId, automation: 'none' };

  // Mapped here, before any write: a body without a usable phone number fails the run
  // with a readable reason and leaves nothing behind.
  const mapping = mapHookContact(input.body, input.phoneRegion);
  if (!mapping.ok) throw ApplicationFailure.nonRetryable(mapping.reason, UNMAPPABLE_WEBHOOK_BODY);

  if (automation.kind === 'schedule_call') {
    const call = await activities.scheduleHookCall({
      runId: input.runId,
      teamId: input.teamId,
      scriptId: automation.script_id,
      fromNumber: automation.from_number,
      contact: mapping.contact,
    });
    log.info('hook run scheduled a call', { callId: call.callId });
    return { run_id: input.runId, automation: automation.kind, contact_id: call.contactId, call_id: call.callId };
  }

  const added = await activities.addHookContactToList({
    runId: input.runId,
    teamId: input.teamId,
    listId: automation.list_id,
    contact: mapping.contact,
  });
  return {
    run_id: input.runId,
    automation: automation.kind,
    contact_id: added.contactId,
    contact_created: added.contactCreated,
    list_id: automation.list_id,
  };
}
