/**
 * The voice provider interface: how a call is placed on real or simulated telephony.
 *
 * A provider either reports the call's progress later through
 * `POST /internal/v1/calls/{call_id}/events` (mode `events`: the workflow waits for those
 * signals), or, like the simulator, answers with the whole course of the call up front
 * (mode `simulated`: the workflow plays it out with durable timers, so a simulated call
 * survives a worker restart exactly like a real one), or leaves the dial to a media edge
 * (mode `media_edge`: the SIP trunk, docs/telephony.md "Outbound calls").
 */
import type { ConversationTurn, EndReason, TerminalStatus } from '../domain/calls.js';

export interface PlaceCallRequest {
  callId: string;
  teamId: string;
  from: string | null;
  to: string;
  contact: Record<string, unknown>;
  script: { id: string; name: string; definition: unknown };
  objects: Record<string, unknown>;
  /** The call's own fields (call.* of a script: id, type, numbers, team, script). */
  call?: Record<string, unknown>;
}

/** How a simulated call goes, from dialling to hang-up. */
export interface SimulatedCallPlan {
  status: Exclude<TerminalStatus, 'cancelled'>;
  endReason: EndReason;
  /** Seconds from dialling until the callee answers (or until the call ends unanswered). */
  ringSeconds: number;
  /** Seconds from answering until the call ends; 0 when never answered. */
  talkSeconds: number;
  answered: boolean;
  turns: ConversationTurn[];
  recordingUrl: string | null;
  /**
   * The callee's answer to each ask step of the call's script, by step id, when the script
   * runs (an answered call that completes): the callee answers from its own record, so the
   * answers are part of the plan.
   */
  answers?: Record<string, string>;
  /** The callee asks not to be called again (the simulator's 3668): their number joins the do-not-call list. */
  doNotCall?: boolean;
}

export type PlacedCall =
  | { provider: string; providerCallId: string; mode: 'events' }
  | { provider: string; providerCallId: string; mode: 'simulated'; plan: SimulatedCallPlan }
  /**
   * A media edge dials (VOICE_PROVIDER=sip): the workflow runs the dial activity on the
   * edges' shared dial queue with these numbers, and the edge that takes it holds the call.
   */
  | { provider: string; providerCallId: string; mode: 'media_edge'; dial: MediaEdgeDial };

/** What the dial activity of a media edge needs (workflows/contracts.ts DialPhoneCallInput, less the call id). */
export interface MediaEdgeDial {
  from: string;
  to: string;
  ringTimeoutMs: number;
  /** Screen the answer for an answering machine (the script's voicemail_detection, on by default). */
  screen?: boolean;
  /** The script's voicemail_message, its template filled. */
  voicemailMessage?: string;
}

export interface VoiceProvider {
  readonly name: string;
  /** Starts dialling; must be idempotent per callId (a retried activity never dials twice). */
  placeCall(request: PlaceCallRequest): Promise<PlacedCall>;
  /** Ends a call in progress (best effort). */
  hangUp?(providerCallId: string): Promise<void>;
}
