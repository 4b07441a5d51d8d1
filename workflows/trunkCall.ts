/**
 * A phone call through the SIP trunk (VOICE_PROVIDER=sip, docs/telephony.md "Outbound
 * calls"): the dial activity runs on the media edges' shared dial queue, and the edge that
 * takes it claims the call's one dial, sends the INVITE and holds the call from then on. Once
 * the callee answers, the script runs on that edge's own queue exactly as in a browser call
 * (runMediaConversation).
 *
 *   dialPhoneCall (ringing events → progress ringing) ── answered ── runMediaConversation
 *                                                     └─ ended ──── busy, no answer, … (the SIP table)
 *   with `screen`, the edge screens the answer before it settles (docs/telephony.md, "Voicemail
 *   detection"): a person → answered; a machine → ended voicemail, after the voicemail message,
 *   which is written as the agent's turn with a System Note of the detection
 *   cancel-call while it rings: the dial is cancelled, and the edge is told on its own queue
 *   too (cancelDial: CANCEL at once, not at the dial's next heartbeat) → cancelled
 *   cancel-call while the answer is screened: the same (cancelDial: no message, or the rest
 *   of it cut, BYE) → cancelled
 *   cancel-call once answered: the script stops, hangUpCaller (the edge sends BYE) → cancelled
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { ConversationTurn, SystemNote } from '../src/domain/calls.js';
import type { MediaEdgeDial } from '../src/telephony/provider.js';
import {
  MEDIA_EDGE_DIAL_TASK_QUEUE,
  type DialPhoneCallResult,
  type MediaEdgeActivities,
  type MediaEdgeDialActivities,
  type MediaEdgeCancelDialActivities,
} from './contracts.js';
import { outcomeOf, type CallContext, type CancelledOutcome, type ConversationOutcome } from './conversation.js';
import { EDGE_PICKUP_TIMEOUT, runMediaConversation } from './mediaConversation.js';

/** A dial no SIP media edge picks up within this long fails the call (no_media_edge). */
export const DIAL_PICKUP_TIMEOUT = '30 seconds';
/** The dial heartbeats while it rings; an edge silent this long is gone (the activity is retried). */
export const DIAL_HEARTBEAT_TIMEOUT = '10 seconds';
/** Attempts of the dial activity: a retry never sends a second INVITE (the dial claim), it learns what became of the first. */
export const DIAL_ATTEMPTS = 3;

/** cancel-call while the callee's phone rings reaches the edge on its own queue (the ringing event names it). */
export const CANCEL_DIAL_WHILE_RINGING_PATCH = 'cancel-dial-while-ringing';

export const CANCELLED_OUTCOME: CancelledOutcome = { status: 'cancelled', endReason: 'cancelled' };

/** The edge's longest wait for a machine's beep or the end of its greeting (voicemailDrop.ts maxGreetingWaitMs). */
export const SCREENING_WAIT_MS = 30_000;
/** Allowance per character of the voicemail message (speech runs about 15 characters a second; slow voices half that). */
const MESSAGE_MS_PER_CHAR = 150;

/**
 * How long one dial may take: ringing, then the answer, well past the ring timeout (after
 * which the edge CANCELs); a screened answer adds the wait for the verdict and the beep, and the message.
 */
export function dialTimeoutMs(dial: Pick<MediaEdgeDial, 'ringTimeoutMs' | 'screen' | 'voicemailMessage'>): number {
  const screening = dial.screen ? SCREENING_WAIT_MS + Math.max(30_000, (dial.voicemailMessage?.length ?? 0) * MESSAGE_MS_PER_CHAR) : 0;
  return dial.ringTimeoutMs + 60_000 + screening;
}

function dialer(startToCloseMs: number) {
  return proxyActivities<MediaEdgeDialActivities>({
    taskQueue: MEDIA_EDGE_DIAL_TASK_QUEUE,
    scheduleToStartTimeout: DIAL_PICKUP_TIMEOUT,
    startToCloseTimeout: startToCloseMs,
    heartbeatTimeout: DIAL_HEARTBEAT_TIMEOUT,
    // cancel-call waits for the edge to have sent CANCEL (or BYE to an answer that crossed it).
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: DIAL_ATTEMPTS },
  });
}

function hangUpOn(taskQueue: string) {
  return proxyActivities<MediaEdgeActivities & MediaEdgeCancelDialActivities>({
    taskQueue,
    scheduleToStartTimeout: EDGE_PICKUP_TIMEOUT,
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 1 },
  });
}

type Settled = { result: DialPhoneCallResult } | { err: unknown };

/** Why the dial activity failed for good, as the call's end and a System Note. */
function outcomeOfDialFailure(err: unknown): { outcome: ConversationOutcome; note: string } {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START') {
    return { outcome: { status: 'failed', endReason: 'no_media_edge' }, note: `No media edge with a SIP trunk took the dial within ${DIAL_PICKUP_TIMEOUT}: the call was not placed.` };
  }
  if (cause instanceof TimeoutFailure) {
    return {
      outcome: { status: 'failed', endReason: 'media_edge_lost' },
      note: `The media edge dialling the call stopped answering (${cause.timeoutType ?? 'timeout'}); the call was not dialled again.`,
    };
  }
  const message = cause instanceof ApplicationFailure || cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return { outcome: { status: 'failed', endReason: 'provider_error' }, note: `The dial failed on the media edge: ${message}` };
}

/** Dials through the trunk and, once answered, runs the script on the edge that holds the call. */
export async function runTrunkCall(ctx: CallContext, dial: MediaEdgeDial): Promise<ConversationOutcome | CancelledOutcome> {
  const cancelled = () => ctx.cancelRequested?.() ?? false;
  const note = (text: string): SystemNote => ({ at: new Date().toISOString(), kind: 'telephony', text });

  // 1. The dial, until it is answered or the call ends unanswered; ringing events set the progress.
  const dialScope = new CancellationScope();
  let settled: Settled | undefined;
  void dialScope
    .run(() =>
      dialer(dialTimeoutMs(dial)).dialPhoneCall({
        callId: ctx.input.callId,
        from: dial.from,
        to: dial.to,
        ringTimeoutMs: dial.ringTimeoutMs,
        ...(dial.screen ? { screen: true } : {}),
        ...(dial.voicemailMessage ? { voicemailMessage: dial.voicemailMessage } : {}),
      }),
    )
    .then(
      (result) => (settled = { result }),
      (err: unknown) => (settled = { err }),
    );
  let cancelSent = false;
  let edgeTold = false;
  let ringing = false;
  // The edge dialling the call: its `ringing` event names its own queue (runs recorded before
  // that replay without it), as its `answered` event does while the dial screens the answer.
  let ringingOn: string | undefined;
  let ringingQueueSeen = false;
  const dialEdge = () => ringingOn ?? ctx.events.peek('answered')?.media_task_queue;
  while (!settled) {
    await condition(() => settled !== undefined || (!cancelSent && cancelled()) || ctx.events.has('ringing') || (cancelSent && !edgeTold && dialEdge() !== undefined));
    const ringingQueue = ctx.events.peek('ringing')?.media_task_queue;
    if (ringingQueue && !ringingQueueSeen) {
      ringingQueueSeen = true;
      if (patched(CANCEL_DIAL_WHILE_RINGING_PATCH)) ringingOn = ringingQueue;
    }
    if (!cancelSent && cancelled()) {
      cancelSent = true;
      dialScope.cancel();
    }
    const edgeQueue = cancelSent && !edgeTold ? dialEdge() : undefined;
    if (edgeQueue) {
      // The dial's cancellation reaches the edge only with the dial's next heartbeat (up to 8 s):
      // the callee's phone would go on ringing, or the voicemail message begin. The edge's own
      // queue reaches it at once: CANCEL while it rings, BYE while the answer is screened. The
      // dial then settles cancelled; a failure here leaves the cancellation to get there.
      edgeTold = true;
      void hangUpOn(edgeQueue)
        .cancelDial({ callId: ctx.input.callId })
        .catch(() => undefined);
    }
    if (ctx.events.drop('ringing') && !ringing) {
      ringing = true;
      await ctx.setProgress('ringing');
    }
  }
  const done = settled as Settled;
  if ('err' in done) {
    if (cancelled() && isCancellation(done.err)) return CANCELLED_OUTCOME;
    const failure = outcomeOfDialFailure(done.err);
    await ctx.appendSystemNotes([note(failure.note)]);
    return cancelled() ? CANCELLED_OUTCOME : failure.outcome;
  }
  const { result } = done;
  if (result.outcome === 'ended') {
    if (result.voicemail) {
      // A machine: its message (when said) is the agent's turn, written with the detection's note.
      // Only a screened dial ends so, and no recorded history has one: older histories replay unchanged.
      const turns: ConversationTurn[] = result.voicemail.message ? [{ role: 'agent', text: result.voicemail.message.text }] : [];
      await ctx.record({ turns, notes: [{ ...note(result.note ?? 'An answering machine took the call.'), kind: 'voicemail_detection', data: result.voicemail }] });
    } else if (result.note) await ctx.appendSystemNotes([note(result.note)]);
    // The edge found the call cancelled (its claim answered 410) before this workflow saw the signal.
    return cancelled() || result.endReason === 'cancelled' ? CANCELLED_OUTCOME : outcomeOf(result.endReason);
  }

  // 2. Answered: the script runs on the edge that holds the call. A ringing event late behind the answer is stale.
  ctx.events.drop('ringing');
  if (cancelled()) return hangUpCancelled(result.mediaTaskQueue);
  await ctx.setProgress('in_conversation');
  const talkScope = new CancellationScope();
  let talked: { outcome: ConversationOutcome } | { err: unknown } | undefined;
  void talkScope.run(() => runMediaConversation(ctx, result.mediaTaskQueue)).then(
    (outcome) => (talked = { outcome }),
    (err: unknown) => (talked = { err }),
  );
  await condition(() => talked !== undefined || cancelled());
  if (talked === undefined) {
    // cancel-call in progress: the script stops where it is (what was said is written), then BYE.
    talkScope.cancel();
    await condition(() => talked !== undefined);
    return hangUpCancelled(result.mediaTaskQueue);
  }
  const over = talked as { outcome: ConversationOutcome } | { err: unknown };
  if ('err' in over) throw over.err;
  return over.outcome;

  async function hangUpCancelled(taskQueue: string): Promise<CancelledOutcome> {
    try {
      await hangUpOn(taskQueue).hangUpCaller({ callId: ctx.input.callId });
    } catch (err) {
      const why = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
      await ctx.appendSystemNotes([note(`The hang-up after cancel-call did not reach the media edge: ${why}`)]);
    }
    return CANCELLED_OUTCOME;
  }
}
