/**
 * How a phone call placed through a SIP trunk ends, from the INVITE's final answer
 * (docs/telephony.md, "Outbound calls"): the status table as one pure function, so
 * the media edge that dials and the tests read the same mapping.
 */
import type { EndReason, TerminalStatus } from './calls.js';

export interface SipDialEnd {
  status: Exclude<TerminalStatus, 'cancelled' | 'completed'>;
  endReason: EndReason;
  /**
   * A System Note for the call when the trunk failed it (status `failed`, `trunk_error`):
   * the SIP status line as the trunk sent it, or why the trunk could not be reached.
   */
  note?: string;
}

/** The status line of a SIP answer ("486 Busy Here"); status 0 means no answer came (the reason says why). */
export function sipStatusLine(status: number, reason: string): string {
  return status > 0 ? `${status} ${reason}`.trim() : reason;
}

/**
 * The end of an INVITE that got a final answer other than 2xx, or none (status 0: the trunk
 * was unreachable). A 487 is the answer to our own CANCEL and is mapped by whoever cancelled
 * (ring timeout: rang-out; cancel-call: cancelled); one that comes unasked is the trunk's failure.
 */
export function sipDialEnd(status: number, reason: string): SipDialEnd {
  switch (status) {
    case 486:
    case 600:
      return { status: 'User rejected', endReason: 'busy' };
    case 603:
      return { status: 'User rejected', endReason: 'declined' };
    case 408:
      return { status: 'rang-out', endReason: 'no_answer' };
    case 480:
    case 410:
      return { status: 'User unavailable', endReason: 'unreachable' };
    case 404:
    case 484:
      return { status: 'failed', endReason: 'invalid_number' };
    default: {
      const line = sipStatusLine(status, reason);
      const note = status > 0 ? `The SIP trunk refused the call: ${line}` : `The SIP trunk could not be reached: ${line}`;
      return { status: 'failed', endReason: 'trunk_error', note };
    }
  }
}

/** The end of a call nobody answered within the ring timeout (the edge sent CANCEL). */
export const RING_TIMEOUT_END: SipDialEnd = { status: 'rang-out', endReason: 'no_answer' };

/**
 * The SIP Call-ID of a call's INVITE, derived from the call id alone: every attempt to dial
 * the call names the same dialog, so a trunk (or the far end) sees a repeated INVITE as one.
 */
export function sipCallIdOf(callId: string): string {
  return `call-${callId}@voice-agent`;
}
