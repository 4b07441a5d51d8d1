/**
 * The activities of a media edge instance, on its own task queue (docs/media-edge.md).
 * Each one runs on the edge that holds the call's media, heartbeats while audio plays or
 * the edge listens, and stops when the workflow cancels it (the caller hung up). When the
 * media is gone it fails with a typed, non-retryable failure the call workflow maps to an
 * end reason: CallerHungUp (hang-up) or CallMediaLost (dropout).
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import {
  CALL_MEDIA_LOST,
  CALLER_HUNG_UP,
  type AskCallerInput,
  type AskCallerResult,
  type MediaEdgeActivities,
  type SpeakToCallerInput,
  type SpeakToCallerResult,
} from '../../workflows/contracts.js';
import type { MediaEdgeTransferActivities, TransferCallerInput, TransferCallerResult } from '../../workflows/transferContracts.js';
import type { ConverseTurnInput, ConverseTurnResult, MediaEdgeConverseActivities } from '../../workflows/converseContracts.js';
import { runConverseTurn, type ConverseTurnDeps } from './conversation/converseTurn.js';
import type { Logger } from '../logging/logger.js';
import { CallerLeftError, type CallTransfers } from './callTransfer.js';
import type { LiveCall, LiveCalls } from './liveCalls.js';
import type { ChannelCloseReason } from './media/channel.js';

/** Heartbeat this often: well inside the workflow's heartbeat timeout. */
export const HEARTBEAT_INTERVAL_MS = 1_000;

/** The details of a CallerHungUp or CallMediaLost failure (the call workflow reads `started`, and `said` of a converse turn). */
export interface MediaGoneDetails {
  started: boolean;
  /** A converse turn's words the caller heard before the call ended (the workflow cannot know them: they were the model's). */
  said?: string;
}

/**
 * The failure of an activity whose call's media is gone. Its details say whether the
 * activity had begun on the call (`{ started }`): a line it had begun playing was heard,
 * at least in part, and belongs in the transcript.
 */
function mediaGone(callId: string, reason: ChannelCloseReason | undefined, started: boolean, said?: string): ApplicationFailure {
  const details = [{ started, ...(said ? { said } : {}) } satisfies MediaGoneDetails];
  if (reason === 'remote_hangup') return ApplicationFailure.create({ message: `The caller hung up call ${callId}`, type: CALLER_HUNG_UP, nonRetryable: true, details });
  const why = reason === 'media_lost' ? 'its media was lost' : reason === 'local_hangup' ? 'it was hung up' : 'it is not on this media edge';
  return ApplicationFailure.create({ message: `Call ${callId} has no media: ${why}`, type: CALL_MEDIA_LOST, nonRetryable: true, details });
}

/** Runs `work` while the activity heartbeats, its controller aborted when the workflow cancels the activity. */
async function whileHeartbeating<T>(work: (abort: AbortController, cancelled: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const abort = new AbortController();
  const onCancel = () => abort.abort(ctx.cancellationSignal.reason);
  ctx.cancellationSignal.addEventListener('abort', onCancel);
  const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_INTERVAL_MS);
  ctx.heartbeat();
  try {
    return await work(abort, ctx.cancellationSignal);
  } finally {
    clearInterval(heartbeat);
    ctx.cancellationSignal.removeEventListener('abort', onCancel);
  }
}

/**
 * Runs `work` for the call while heartbeating; aborts it when the workflow cancels the
 * activity or the call's media ends, and turns the end of the media into its failure.
 */
async function withCallMedia<T>(calls: LiveCalls, callId: string, work: (call: LiveCall, signal: AbortSignal) => Promise<T>, saidSoFar?: () => string | undefined): Promise<T> {
  const call = calls.get(callId);
  if (!call) throw mediaGone(callId, calls.endingOf(callId), false);
  return whileHeartbeating(async (abort, cancelled) => {
    let closedReason: ChannelCloseReason | undefined;
    const closed = call.channel.closed.then((reason) => {
      closedReason = reason;
      abort.abort(new Error(`media closed: ${reason}`));
      return reason;
    });
    try {
      return await Promise.race([work(call, abort.signal), closed.then((reason) => Promise.reject(mediaGone(callId, reason, true, saidSoFar?.())))]);
    } catch (err) {
      if (cancelled.aborted) throw err;
      if (closedReason) throw mediaGone(callId, closedReason, true, saidSoFar?.());
      throw err;
    }
  });
}

export function createMediaEdgeActivities(deps: {
  calls: LiveCalls;
  logger: Logger;
  transfers?: CallTransfers;
  /** The model client and the arguments' check of converse steps (absent: every model turn fails not_configured). */
  converse?: ConverseTurnDeps;
}): MediaEdgeActivities & MediaEdgeTransferActivities & MediaEdgeConverseActivities {
  return {
    /** Plays an agent line; the caller may barge in. */
    async speakToCaller(input: SpeakToCallerInput): Promise<SpeakToCallerResult> {
      return withCallMedia(deps.calls, input.callId, (call, signal) => call.conversation.speak(input.text, { bargeIn: true, signal }));
    },

    /** Plays the prompt (barge-in allowed), then listens for the caller's answer. */
    async askCaller(input: AskCallerInput): Promise<AskCallerResult> {
      return withCallMedia(deps.calls, input.callId, async (call, signal) => {
        const heard = await call.conversation.ask(input.prompt, input.hint, { noSpeechTimeoutMs: input.noSpeechTimeoutMs, signal });
        deps.logger.debug({ callId: input.callId, stepId: input.stepId, kind: heard.kind }, 'caller answered');
        return heard;
      });
    },

    /**
     * One model turn of a converse step (conversation/converseTurn.ts): the answer streamed and
     * spoken sentence by sentence, then the caller's answer heard. Never retried (it speaks).
     */
    async converseTurn(input: ConverseTurnInput): Promise<ConverseTurnResult> {
      // What the caller has heard of this turn so far: a call that ends mid-turn still writes it (MediaGoneDetails.said).
      const playing: { said?: () => string } = {};
      return withCallMedia(deps.calls, input.callId, async (call, signal) => {
        const { speakSentences, listen } = call.conversation;
        if (!speakSentences || !listen) throw ApplicationFailure.create({ message: `Call ${input.callId} cannot hold a model conversation on this edge`, type: CALL_MEDIA_LOST, nonRetryable: true, details: [{ started: false }] });
        const result = await runConverseTurn(
          deps.converse ?? { llm: undefined, checkArguments: () => undefined },
          {
            speakSentences: (source, opts) => speakSentences.call(call.conversation, source, { ...opts, playing: (said) => (playing.said = said) }),
            listen: (opts) => listen.call(call.conversation, { ...opts, converseTurn: true }),
            ended: call.channel.closed,
          },
          input,
          signal,
        );
        deps.logger.debug({ callId: input.callId, stepId: input.stepId, turn: input.turn, outcome: result.outcome, usage: result.usage, timings: result.timings }, 'converse turn');
        return result;
      }, () => playing.said?.());
    },

    /** Sends BYE; a call already gone is fine (the caller left first, or the edge lost it). */
    async hangUpCaller(input: { callId: string }): Promise<void> {
      await deps.calls.get(input.callId)?.hangUp();
    },

    /**
     * Hands the caller to a person (callTransfer.ts). Not in withCallMedia: once joined, the
     * caller's hang-up ends the bridge, not the activity with a failure. Before that, the caller's
     * end fails it CallerHungUp / CallMediaLost like any line.
     */
    async transferCaller(input: TransferCallerInput): Promise<TransferCallerResult> {
      const call = deps.calls.get(input.callId);
      if (!call) throw mediaGone(input.callId, deps.calls.endingOf(input.callId), false);
      if (!deps.transfers) return { outcome: 'not_answered', reason: 'this media edge has no SIP trunk to dial the person through' };
      const transfers = deps.transfers;
      return whileHeartbeating(async (abort) => {
        try {
          const result = await transfers.transfer(call, input, abort.signal);
          deps.logger.info({ callId: input.callId, stepId: input.stepId, outcome: result.outcome }, 'transfer settled');
          return result;
        } catch (err) {
          if (err instanceof CallerLeftError) throw mediaGone(input.callId, err.reason, true);
          throw err;
        }
      });
    },
  };
}
