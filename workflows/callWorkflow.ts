/**
 * One durable workflow per call (id `call-<call_id>`), docs/calls.md:
 *
 *   scheduled ── wait until scheduled_time (cancel-call ends it as cancelled)
 *             ── phone: start, or wait first come first served for the slot a release
 *                       grants (one slotGranted signal)
 *                web:   wait up to two minutes for the browser to connect
 *   inbound: created in-progress holding its slot ── wait for the media edge's answer
 *   in-progress ── runConversation (dial, talk) ── exactly one terminal status
 *   terminal ── a few seconds later: post-call analysis fills the result fields
 *
 * The Postgres row is the read model; every transition is an idempotent local activity
 * (a short row write: one marker in the history, no activity task of its own), and the
 * CallStatus search attribute follows each status change.
 */
import {
  condition,
  continueAsNew,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  allHandlersFinished,
  makeContinueAsNewFunc,
  patched,
} from '@temporalio/workflow';
import type { CallActivities } from '../activities/calls.js';
import type { CallProgress, ConversationTurn, SystemNote, TerminalStatus } from '../src/domain/calls.js';
import { CALL_STATUS } from '../src/temporal/searchAttributes.js';
import {
  callEventSignal,
  callStateQuery,
  cancelCallSignal,
  NOT_FOUND_FAILURE,
  slotGrantedSignal,
  type CallWorkflowInput,
  type CallWorkflowResult,
  type CallWorkflowState,
} from './contracts.js';
import { CallEventInbox, runConversation, type CallContext } from './conversation.js';
import { admitDueCall, dueAt, msUntilWindowCloses, onDoNotCallList, retryDue, scheduleNextAttempt, tryTakeDialToken, waitForCallingWindow } from './dialingPolicy.js';

/**
 * Marks runs that check the do-not-call list and take a dial token after their slot
 * (docs/calls.md, "Dialing policy"); runs recorded before replay without them.
 */
export const DIALING_POLICY_PATCH = 'dialing-policy-gates';

/**
 * Marks runs that take slot, do-not-call check, dial token and in-progress in one local
 * activity (admitCall); runs recorded before replay the four steps they recorded.
 */
export const ADMIT_CALL_PATCH = 'admit-call-in-one-step';

/**
 * Marks runs that, once admitted, continue as new on the live-call task queue the admitting
 * worker named (docs/calls.md, "Task queues"); runs recorded before go on where they are.
 */
export const LIVE_CALL_QUEUE_PATCH = 'live-call-queue';

/**
 * A call waiting in line asks again this long after it last asked, even without its
 * slotGranted signal: the last resort (the reconciler re-sends a lost signal within about a
 * minute). Long, and spread over a further SLOT_RECHECK_SPREAD_MS per call (the workflow's
 * deterministic random), so a campaign's waiting calls never ask all at once: 5,000 calls
 * asking together at ten minutes stalled every start for minutes (docs/benchmarks.md).
 */
export const SLOT_RECHECK_MS = 60 * 60_000;
export const SLOT_RECHECK_SPREAD_MS = 30 * 60_000;
/** The re-check of runs recorded before ADMIT_CALL_PATCH. */
const RECORDED_SLOT_RECHECK_MS = 10 * 60_000;
/** A web call nobody connects to within this long ends failed / not_connected (docs/web-calls.md). */
export const WEB_CONNECT_TIMEOUT_MS = 2 * 60_000;
/**
 * An inbound call the media edge has not answered within this long ends failed /
 * not_connected (docs/telephony.md, "Inbound calls"): the edge answers the INVITE as soon as
 * the service has taken the call, so only an edge lost in between gets here.
 */
export const INBOUND_CONNECT_TIMEOUT_MS = 30_000;
/** Post-call analysis runs this long after the terminal status, never before. */
export const ANALYSIS_DELAY_MS = 3_000;

// Row writes: short, retried until they succeed (they are idempotent and the call cannot
// move on without them). Local activities: run by the worker that runs the workflow task,
// recorded as one marker each, with no activity task and no workflow task of their own.
const db = proxyLocalActivities<CallActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

const analysis = proxyLocalActivities<CallActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 10, nonRetryableErrorTypes: [NOT_FOUND_FAILURE] },
});

export interface CallWorkflowOptions {
  /** Set by continue-as-new while waiting for a slot: skip the scheduled-time wait. */
  due?: boolean;
  /**
   * Set by the continue-as-new of an admitted phone call onto the live-call task queue: the
   * call is in progress, holding its slot, with its dial token (or none: the dial waits for one).
   * Runs continued before these flags replay as they were recorded: `statusShown`, the
   * continue-as-new started the run with CallStatus in-progress, so it upserts no in-progress of
   * its own; `memoOncePerTask`, the simulated callee's script steps run in one workflow task show
   * in one memo upsert (docs/scripts.md), not one each.
   */
  admitted?: { dialTokenAt?: string; waitForDialToken: boolean; statusShown?: boolean; memoOncePerTask?: boolean };
}

export async function callWorkflow(input: CallWorkflowInput, options: CallWorkflowOptions = {}): Promise<CallWorkflowResult> {
  const events = new CallEventInbox();
  const state: CallWorkflowState = { callId: input.callId, phase: 'waiting_for_scheduled_time', status: 'scheduled' };
  let cancelRequested = false;
  let slotGranted = false;
  setHandler(cancelCallSignal, () => {
    cancelRequested = true;
  });
  setHandler(slotGrantedSignal, () => {
    slotGranted = true;
  });
  setHandler(callEventSignal, (event) => events.push(event));
  setHandler(callStateQuery, () => ({ ...state }));

  // A live run whose continue-as-new set CallStatus in-progress does not upsert it again: each
  // upsert is a history event and a visibility write of Temporal's (docs/calls.md, "Workflow
  // tasks per call").
  const setStatus = (status: string) => {
    state.status = status;
    if (options.admitted?.statusShown && status === 'in-progress') return;
    upsertSearchAttributes([{ key: CALL_STATUS, value: status }]);
  };

  /** Ends a call that never started (cancelled meanwhile, or ended by someone else). */
  const endedBeforeStart = (status: string): CallWorkflowResult => {
    setStatus(status);
    state.phase = 'done';
    return { callId: input.callId, status, endReason: status === 'cancelled' ? 'cancelled' : null };
  };

  // 1. Durably wait for the scheduled time; cancel-call wakes us early. A call in the
  // admission line sleeps until its grant instead (one slotGranted signal, sent in line order
  // at the rate the workers sustain), its own timer far past its due time being the safety
  // net: so a campaign falling due is no burst of workflow tasks (docs/calls.md, "Admission").
  // The command is the same one timer either way; only its length differs.
  if (!options.due) {
    const waitMs = Date.parse(input.scheduledTime) - Date.now();
    if (input.admissionSafetyNetMs && input.type !== 'web') {
      const netMs = input.admissionSafetyNetMs + Math.floor(Math.random() * (input.admissionSafetyNetMs / 2));
      await condition(() => slotGranted || cancelRequested, Math.max(1, dueAt(input) - Date.now() + netMs));
    } else if (waitMs > 0) await condition(() => cancelRequested, waitMs);
  }

  // 2. Phone: the dialing policy decides when it dials, in this order (workflows/dialingPolicy.ts):
  // its calling window, its slot (first come first served: granted now, or by a later release,
  // one slotGranted signal), the window again, the do-not-call list, a dial token (pacing).
  // Web: the browser connecting.
  let holdsSlot = false;
  let mediaTaskQueue: string | undefined;
  let dialTokenAt: string | undefined;
  let waitForDialToken = false;
  let inProgress = false;
  if (options.admitted) {
    // Admitted by the run before this one, on the admission queue (docs/calls.md, "Task queues").
    ({ dialTokenAt, waitForDialToken } = options.admitted);
    inProgress = true;
  } else if (input.type === 'inbound') {
    // In progress and holding its slot since the media edge asked (POST /internal/v1/inbound-calls,
    // src/services/inboundCalls.ts); like a web call, it then waits for the edge's `answered`.
    inProgress = true;
    state.phase = 'waiting_for_connection';
    const connected = await condition(() => events.has('answered') || events.has('ended'), INBOUND_CONNECT_TIMEOUT_MS);
    if (!connected) return finish({ status: 'failed', endReason: 'not_connected' });
    // A caller who left before the answer: the conversation follows the events to that end.
    if (!events.has('ended')) {
      mediaTaskQueue = events.takeThrough('answered')?.media_task_queue;
      await db.setCallProgress({ callId: input.callId, status: 'in-progress', progress: 'in_conversation' });
    }
  } else if (input.type !== 'web' && patched(ADMIT_CALL_PATCH)) {
    const admitted = await admitPhoneCall();
    if (admitted.outcome !== 'started') return admitted.result;
    ({ dialTokenAt, waitForDialToken } = admitted);
    inProgress = true;
    // Live from here on: the rest of the call runs on the live-call queue its admitting worker
    // named, where a campaign's admissions never queue ahead of calls that are talking. A
    // cancel that came meanwhile is handled here instead (it would not cross the continue-as-new).
    const live = admitted.liveTaskQueue;
    if (live && live !== workflowInfo().taskQueue && !cancelRequested && patched(LIVE_CALL_QUEUE_PATCH)) {
      await condition(allHandlersFinished);
      // The live run starts showing in-progress, with the call's other search attributes.
      const typedSearchAttributes = workflowInfo().typedSearchAttributes.updateCopy([{ key: CALL_STATUS, value: 'in-progress' }]);
      return makeContinueAsNewFunc<typeof callWorkflow>({ taskQueue: live, typedSearchAttributes })(input, {
        due: true,
        admitted: { dialTokenAt, waitForDialToken, statusShown: true, memoOncePerTask: true },
      });
    }
  } else if (input.type !== 'web') {
    // Runs recorded before ADMIT_CALL_PATCH: slot, do-not-call check, dial token, each its own step.
    for (;;) {
      // Outside its window the call waits, passed over by the slot line; cancel-call ends the wait.
      await waitForCallingWindow(input, () => cancelRequested);
      state.phase = 'waiting_for_slot';
      for (;;) {
        // Reset before asking: a grant that arrives while the request runs is not lost.
        slotGranted = false;
        const slot = await db.requestCallSlot({ callId: input.callId, teamId: input.teamId });
        if (slot.outcome === 'granted') {
          holdsSlot = true;
          break;
        }
        if (slot.outcome === 'not_scheduled') return endedBeforeStart(slot.status);
        // Waiting in line lasts at most until the window closes: then the call leaves the line.
        await condition(() => slotGranted || cancelRequested, Math.max(1, Math.min(RECORDED_SLOT_RECHECK_MS, msUntilWindowCloses(input))));
        // The grant is committed before its signal is sent: nothing to ask again.
        if (slotGranted && !cancelRequested) {
          holdsSlot = true;
          break;
        }
        if (msUntilWindowCloses(input) <= 0) break;
        if (workflowInfo().continueAsNewSuggested) {
          await condition(allHandlersFinished);
          return continueAsNew<typeof callWorkflow>(input, { due: true });
        }
      }
      // A slot that came after the window closed goes to the next call in line (the wait for
      // the window hands it on), and so does a token that came after it.
      if (!holdsSlot || msUntilWindowCloses(input) <= 0) {
        holdsSlot = false;
        continue;
      }
      if (!patched(DIALING_POLICY_PATCH)) break;
      // Checked again at dial time: a number listed since the call was scheduled is never dialled.
      if (await onDoNotCallList(input)) return endOnDoNotCall();
      // First a slot, then a dial token of the caller number (carrier pacing): a free one now,
      // else the dial activity waits for one (progress waiting_for_dial_slot) and dials inside its slot.
      const token = await tryTakeDialToken(input);
      if (!token.granted && token.reason === 'not_scheduled') {
        await db.releaseCallSlot({ callId: input.callId });
        return endedBeforeStart(token.status);
      }
      if (token.granted) dialTokenAt = token.at;
      else waitForDialToken = true;
      break;
    }
  } else {
    state.phase = 'waiting_for_connection';
    const connected = await condition(() => events.has('answered') || cancelRequested, WEB_CONNECT_TIMEOUT_MS);
    if (!connected) {
      return finish({ status: 'failed', endReason: 'not_connected' });
    }
    mediaTaskQueue = events.takeThrough('answered')?.media_task_queue;
  }

  // 3. In progress (an admitted phone call already is), timed after the grant: the workflow's
  // clock has moved past the request (a local activity advances it by its run time), so no two
  // calls' [actual_time, end_time) overlap beyond the ceiling. A call cancelled meanwhile stays
  // cancelled and gives its slot to the next call in line.
  if (!inProgress) {
    const started = await db.markCallInProgress({
      callId: input.callId,
      actualTime: new Date(Date.now()).toISOString(),
      progress: input.type === 'web' ? 'in_conversation' : waitForDialToken ? 'waiting_for_dial_slot' : 'dialling',
    });
    if (started.status !== 'in-progress') {
      if (holdsSlot) await db.releaseCallSlot({ callId: input.callId });
      return endedBeforeStart(started.status);
    }
  }
  setStatus('in-progress');
  state.phase = 'in_call';

  let turnCount = 0;
  let noteCount = 0;
  const ctx: CallContext = {
    input,
    events,
    mediaTaskQueue,
    dialTokenAt,
    waitForDialToken,
    setProgress: (progress: CallProgress) => db.setCallProgress({ callId: input.callId, status: 'in-progress', progress }),
    record: async ({ progress, turns = [], notes = [] }) => {
      await db.recordConversation({ callId: input.callId, progress, turnStart: turnCount, turns, noteStart: noteCount, notes });
      turnCount += turns.length;
      noteCount += notes.length;
    },
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
    cancelRequested: () => cancelRequested,
    memoOncePerTask: options.admitted?.memoOncePerTask === true,
  };
  const outcome = await runConversation(ctx);
  return finish(outcome);

  /**
   * 2. A phone call's way to in-progress: it waits for its calling window, then asks to be
   * admitted (admitCall: its slot, the do-not-call list, a free dial token, in-progress, in
   * one step); in line, it waits for its one slotGranted signal and asks again. A grant that
   * comes after the window closed goes to the next call in line (the wait for the window
   * hands it on).
   */
  async function admitPhoneCall(): Promise<
    { outcome: 'started'; dialTokenAt?: string; waitForDialToken: boolean; liveTaskQueue?: string } | { outcome: 'ended'; result: CallWorkflowResult }
  > {
    for (;;) {
      // Outside its window the call waits, passed over by the slot line; cancel-call ends the wait.
      await waitForCallingWindow(input, () => cancelRequested);
      state.phase = 'waiting_for_slot';
      for (;;) {
        // Reset before asking: a grant that arrives while the request runs is not lost.
        slotGranted = false;
        const admission = await admitDueCall(input);
        if (admission.outcome === 'started') return admission;
        if (admission.outcome === 'not_scheduled') return { outcome: 'ended', result: endedBeforeStart(admission.status) };
        if (admission.outcome === 'do_not_call') return { outcome: 'ended', result: await endOnDoNotCall() };
        // Waiting in line lasts at most until the window closes: then the call leaves the line.
        const recheckMs = SLOT_RECHECK_MS + Math.floor(Math.random() * SLOT_RECHECK_SPREAD_MS);
        await condition(() => slotGranted || cancelRequested, Math.max(1, Math.min(recheckMs, msUntilWindowCloses(input))));
        if (msUntilWindowCloses(input) <= 0) break;
        // Granted (or cancelled): asking again takes the slot (or ends the call).
        if (slotGranted || cancelRequested) continue;
        if (workflowInfo().continueAsNewSuggested) {
          await condition(allHandlersFinished);
          await continueAsNew<typeof callWorkflow>(input, { due: true });
        }
      }
    }
  }

  /** A listed number is never dialled: the call ends failed / do_not_call, with a System Note saying why. */
  async function endOnDoNotCall(): Promise<CallWorkflowResult> {
    await db.appendSystemNotes({
      callId: input.callId,
      startIndex: 0,
      notes: [{ at: new Date(Date.now()).toISOString(), kind: 'do_not_call', text: 'The number is on the do-not-call list: the call was not placed.' }],
    });
    return finish({ status: 'failed', endReason: 'do_not_call' });
  }

  /**
   * 4. The one terminal status, then post-call analysis a few seconds later. A retry the
   * call's policy asks for is scheduled first, so whoever sees the call ended sees its next
   * attempt too (docs/calls.md, "Retries").
   */
  async function finish(outcome: { status: TerminalStatus; endReason: string }): Promise<CallWorkflowResult> {
    const endTime = new Date(Date.now()).toISOString();
    if (retryDue(input, outcome)) await scheduleNextAttempt(input, { ...outcome, endTime });
    const ended = await db.completeCall({ callId: input.callId, status: outcome.status, endReason: outcome.endReason, endTime });
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
