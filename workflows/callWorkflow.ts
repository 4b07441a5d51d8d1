/**
 * One durable workflow per call (id `call-<call_id>`), docs/calls.md:
 *
 *   scheduled ── wait until scheduled_time (cancel-call ends it as cancelled)
 *             ── phone: wait first come first served for a slot under the team ceiling
 *                web:   wait up to two minutes for the browser to connect
 *   in-progress ── runConversation (dial, talk) ── exactly one terminal status
 *   terminal ── a few seconds later: post-call analysis fills the result fields
 *
 * The Postgres row is the read model; every transition is an idempotent activity, and
 * the CallStatus search attribute follows each status change.
 */
import {
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  allHandlersFinished,
} from '@temporalio/workflow';
import type { CallActivities } from '../activities/calls.js';
import type { CallProgress, ConversationTurn, SystemNote, TerminalStatus } from '../src/domain/calls.js';
import { CALL_STATUS } from '../src/temporal/searchAttributes.js';
import {
  callEventSignal,
  callStateQuery,
  cancelCallSignal,
  NOT_FOUND_FAILURE,
  slotFreedSignal,
  type CallWorkflowInput,
  type CallWorkflowResult,
  type CallWorkflowState,
} from './contracts.js';
import { CallEventInbox, runConversation, type CallContext } from './conversation.js';

/** Re-check for a free slot this often even without a wake-up signal (the safety net). */
export const SLOT_RECHECK_MS = 30_000;
/** A web call nobody connects to within this long ends failed / not_connected (docs/web-calls.md). */
export const WEB_CONNECT_TIMEOUT_MS = 2 * 60_000;
/** Post-call analysis runs this long after the terminal status, never before. */
export const ANALYSIS_DELAY_MS = 3_000;

// Row writes: short, retried until they succeed (they are idempotent and the call cannot
// move on without them).
const db = proxyActivities<CallActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

const analysis = proxyActivities<CallActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10, nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

export interface CallWorkflowOptions {
  /** Set by continue-as-new while waiting for a slot: skip the scheduled-time wait. */
  due?: boolean;
}

export async function callWorkflow(input: CallWorkflowInput, options: CallWorkflowOptions = {}): Promise<CallWorkflowResult> {
  const events = new CallEventInbox();
  const state: CallWorkflowState = { callId: input.callId, phase: 'waiting_for_scheduled_time', status: 'scheduled' };
  let cancelRequested = false;
  let slotFreed = false;
  setHandler(cancelCallSignal, () => {
    cancelRequested = true;
  });
  setHandler(slotFreedSignal, () => {
    slotFreed = true;
  });
  setHandler(callEventSignal, (event) => events.push(event));
  setHandler(callStateQuery, () => ({ ...state }));

  const setStatus = (status: string) => {
    state.status = status;
    upsertSearchAttributes([{ key: CALL_STATUS, value: status }]);
  };

  /** Ends a call that never started (cancelled meanwhile, or ended by someone else). */
  const endedBeforeStart = (status: string): CallWorkflowResult => {
    setStatus(status);
    state.phase = 'done';
    return { callId: input.callId, status, endReason: status === 'cancelled' ? 'cancelled' : null };
  };

  // 1. Durably wait for the scheduled time; cancel-call wakes us early.
  if (!options.due) {
    const waitMs = Date.parse(input.scheduledTime) - Date.now();
    if (waitMs > 0) await condition(() => cancelRequested, waitMs);
  }

  // 2. Phone: a slot, first come first served. Web: the browser connecting.
  let holdsSlot = false;
  let mediaTaskQueue: string | undefined;
  if (input.type !== 'web') {
    state.phase = 'waiting_for_slot';
    for (;;) {
      const result = await db.acquireCallSlot({ callId: input.callId, teamId: input.teamId });
      if (result.granted) {
        holdsSlot = true;
        break;
      }
      if (result.reason === 'not_scheduled') return endedBeforeStart(result.status);
      slotFreed = false;
      await condition(() => slotFreed || cancelRequested, SLOT_RECHECK_MS);
      if (workflowInfo().continueAsNewSuggested) {
        await condition(allHandlersFinished);
        return continueAsNew<typeof callWorkflow>(input, { due: true });
      }
    }
  } else {
    state.phase = 'waiting_for_connection';
    const connected = await condition(() => events.has('answered') || cancelRequested, WEB_CONNECT_TIMEOUT_MS);
    if (!connected) {
      return finish({ status: 'failed', endReason: 'not_connected' });
    }
    mediaTaskQueue = events.takeThrough('answered')?.media_task_queue;
  }

  // 3. In progress (a call cancelled meanwhile stays cancelled and gives its slot back).
  const started = await db.markCallInProgress({
    callId: input.callId,
    actualTime: new Date(Date.now()).toISOString(),
    progress: input.type === 'web' ? 'in_conversation' : 'dialling',
  });
  if (started.status !== 'in-progress') {
    if (holdsSlot) await db.releaseCallSlot({ callId: input.callId, teamId: input.teamId });
    return endedBeforeStart(started.status);
  }
  setStatus('in-progress');
  state.phase = 'in_call';

  let turnCount = 0;
  let noteCount = 0;
  const ctx: CallContext = {
    input,
    events,
    mediaTaskQueue,
    setProgress: (progress: CallProgress) => db.setCallProgress({ callId: input.callId, status: 'in-progress', progress }),
    appendTurns: async (turns: ConversationTurn[]) => {
      if (turns.length === 0) return;
      await db.appendTranscriptTurns({ callId: input.callId, startIndex: turnCount, turns });
      turnCount += turns.length;
    },
    appendSystemNotes: async (notes: SystemNote[]) => {
      if (notes.length === 0) return;
      await db.appendSystemNotes({ callId: input.callId, startIndex: noteCount, notes });
      noteCount += notes.length;
    },
    loadContext: () => db.loadCallContext({ callId: input.callId }),
  };
  const outcome = await runConversation(ctx);
  return finish(outcome);

  /** 4. The one terminal status, then post-call analysis a few seconds later. */
  async function finish(outcome: { status: TerminalStatus; endReason: string }): Promise<CallWorkflowResult> {
    const ended = await db.completeCall({ callId: input.callId, status: outcome.status, endReason: outcome.endReason, endTime: new Date(Date.now()).toISOString() });
    setStatus(ended.status);
    if (ended.status !== 'cancelled') {
      state.phase = 'analysing';
      await sleep(ANALYSIS_DELAY_MS);
      try {
        await analysis.analyseCall({ callId: input.callId });
      } catch {
        // The call itself is over; its result fields stay empty rather than the workflow failing.
      }
    }
    state.phase = 'done';
    return { callId: input.callId, status: ended.status, endReason: ended.endReason };
  }
}
