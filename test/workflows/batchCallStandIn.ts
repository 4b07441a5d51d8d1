// The workflows a batch test worker runs: the real batch workflow, and a lean stand-in for
// the call workflow under the same type name. The stand-in keeps the parts of a call a
// batch depends on, with the real activities: first-come-first-served slot under the team
// ceiling, scheduled → in-progress, a call of STAND_IN_CALL_MS, one terminal status that
// frees the slot. It skips the conversation and analysis (covered by the call workflow's
// own tests and by test/e2e/batches.test.ts), which makes a 1,000-call batch affordable.
import { condition, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { CallActivities } from '../../activities/calls.js';
import { cancelCallSignal, NOT_FOUND_FAILURE, slotGrantedSignal, type CallWorkflowInput, type CallWorkflowResult } from '../../workflows/contracts.js';

export { batchWorkflow } from '../../workflows/batchWorkflow.js';

export const STAND_IN_CALL_MS = 2_000;

const calls = proxyActivities<CallActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

export async function callWorkflow(input: CallWorkflowInput): Promise<CallWorkflowResult> {
  let woken = false;
  setHandler(slotGrantedSignal, () => {
    woken = true;
  });
  setHandler(cancelCallSignal, () => {
    woken = true;
  });
  for (;;) {
    woken = false;
    const slot = await calls.requestCallSlot({ callId: input.callId, teamId: input.teamId });
    if (slot.outcome === 'granted') break;
    if (slot.outcome === 'not_scheduled') return { callId: input.callId, status: slot.status, endReason: null };
    await condition(() => woken, 30_000);
  }
  const started = await calls.markCallInProgress({ callId: input.callId, actualTime: new Date(Date.now()).toISOString(), progress: 'in_conversation' });
  if (started.status !== 'in-progress') {
    await calls.releaseCallSlot({ callId: input.callId });
    return { callId: input.callId, status: started.status, endReason: null };
  }
  await sleep(STAND_IN_CALL_MS);
  const ended = await calls.completeCall({ callId: input.callId, status: 'completed', endReason: 'agent_hangup', endTime: new Date(Date.now()).toISOString() });
  return { callId: input.callId, status: ended.status, endReason: ended.endReason };
}
