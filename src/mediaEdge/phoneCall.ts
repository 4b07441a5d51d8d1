/**
 * A phone call through the SIP trunk once its dialog is up, whichever side called
 * (docs/telephony.md): the RTP session's channel as the call the edge's `onCall` takes,
 * exactly like a browser call. Outbound (phoneDialer.ts, after the callee's 200) and inbound
 * (inboundPhoneCalls.ts, after our 200 is ACKed) both build it here.
 *
 *   far end's BYE      → channel closed remote_hangup
 *   no RTP (inactivity) → channel closed media_lost, and BYE to the far end
 *   the agent hangs up → channel closed local_hangup, and BYE
 *   INFO with a key    → a digit on the channel (as an RFC 4733 event is)
 */
import type { Logger } from '../logging/logger.js';
import type { MediaChannel } from './media/channel.js';
import type { RtpSession } from './rtp/rtpSession.js';
import { digitFromSipInfo } from './rtp/telephoneEvent.js';
import type { SipDialog } from './sip/trunk/sipTrunkAgent.js';

/** An established phone call, as the edge's `onCall` takes it (the same as a browser call's). */
export interface PhoneCall {
  callId: string;
  channel: MediaChannel;
  /** PCMU or PCMA. */
  codec: string;
  /** The agent ends the call: BYE, channel closed `local_hangup`. */
  hangUp(): Promise<void>;
  /** The call's SIP dialog (a phone call's; a transfer by REFER sends it there); absent on a browser call. */
  dialog?: SipDialog;
}

/** The codec name of a G.711 payload type. */
export const g711Codec = (payloadType: 0 | 8): 'PCMU' | 'PCMA' => (payloadType === 8 ? 'PCMA' : 'PCMU');

/** Ties the dialog and the RTP session together as one call: either side's end ends both. */
export function establishedPhoneCall(callId: string, rtp: RtpSession, dialog: SipDialog, codec: string, log: Logger): PhoneCall {
  const channel = rtp.channel;
  let byeSent: Promise<void> | undefined;
  const bye = () => (byeSent ??= dialog.bye().catch((err: unknown) => log.warn({ err }, 'BYE failed')));
  const stopWatching = dialog.onEnded(() => channel.hangUp('remote_hangup'));
  // Keys a far end sends as SIP INFO (instead of RFC 4733 events) answer asks all the same.
  const stopInfo = dialog.onInfo((contentType, body) => {
    const digit = digitFromSipInfo(contentType, body);
    if (digit) rtp.receiveDigit(digit);
  });
  void channel.closed.then((reason) => {
    stopWatching();
    stopInfo();
    // No RTP for the inactivity limit (media_lost): the far end is told with a BYE too.
    if (reason !== 'remote_hangup') void bye();
    rtp.close();
  });
  return {
    callId,
    channel,
    codec,
    dialog,
    hangUp: async () => {
      channel.hangUp('local_hangup');
      await bye();
    },
  };
}
