/**
 * The transfer step's contracts between the call workflow and the media edge (docs/scripts.md,
 * "Transfer"; the edge's side is src/mediaEdge/callTransfer.ts). Kept beside contracts.ts, whose
 * other edge activities every media edge test fake implements; only a transfer needs these.
 */
import type { EdgeSystemNotes } from './contracts.js';

/** How a transfer step reaches the person (docs/scripts.md, "Transfer"). */
export type TransferMode = 'bridge' | 'refer';

export interface TransferCallerInput {
  callId: string;
  stepId: string;
  /** E.164 (dialled through the trunk) or a SIP URI (dialled at its host). */
  to: string;
  mode: TransferMode;
  /** The caller ID the person sees (the call's own number, E.164); absent: anonymous. */
  from?: string;
  /** Said to the person once they answer, before the legs are joined (bridge only). */
  announcement?: string;
  /** Bridge: ring the person this long, then CANCEL (the step's ring_timeout_seconds); absent: the edge's default (30 s). */
  ringTimeoutMs?: number;
}

/** One line said while the legs were joined: the caller's (`user`) or the person's (`agent`). */
export interface BridgedTurn {
  role: 'agent' | 'user';
  text: string;
}

export type TransferCallerResult = (
  | {
      outcome: 'transferred';
      /** How it went: a REFER the far end took, or a bridge (also after a refused REFER). */
      mode: TransferMode;
      /** The SIP status of a REFER that was refused before the bridge took over. */
      referRefused?: number;
      /** Bridge: which leg hung up first. */
      endedBy?: 'caller' | 'person';
      /** Bridge: what each side said while joined, in order. */
      turns?: BridgedTurn[];
    }
  | {
      /** The person was not reached (busy, no answer, unreachable, no trunk): the script goes on. */
      outcome: 'not_answered';
      reason: string;
      /** The SIP final status, when one came. */
      status?: number;
    }
) &
  EdgeSystemNotes;

/**
 * The transfer activity of a media edge, on its own queue with the others; apart from
 * MediaEdgeActivities because only a transfer step needs it (and it may last as long as the call).
 */
export interface MediaEdgeTransferActivities {
  /**
   * Hands the caller to a person: REFER (falling back to a bridge when refused), or a bridge
   * (dial, announcement, the legs joined until either side hangs up, then BYE to the other).
   * Fails CallerHungUp when the caller leaves before the person answers.
   */
  transferCaller(input: TransferCallerInput): Promise<TransferCallerResult>;
}
