// The workflow of test/activities/dialOnce.test.ts: the real placeCall as a local activity
// with a one-second timeout, so a dial slower than that (a worker under load) times out
// after it claimed the call's dial and is retried, as the call workflow's placeCall is.
import { proxyLocalActivities } from '@temporalio/workflow';
import type { CallActivities } from '../../activities/calls.js';

export async function slowDialWorkflow(callId: string, retryAfterMs: number): Promise<{ mode: string; providerCallId: string }> {
  const { placeCall } = proxyLocalActivities<CallActivities>({
    startToCloseTimeout: '1 second',
    retry: { initialInterval: retryAfterMs, backoffCoefficient: 1, maximumAttempts: 3 },
  });
  const placed = await placeCall({ callId });
  return { mode: placed.mode, providerCallId: placed.providerCallId };
}
