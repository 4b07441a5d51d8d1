// RTP sessions a test file opens on loopback UDP, on a port range of its own (other files
// open sessions at the same time), each with a test-side far end (test/support/rtpPeer.ts);
// everything opened is closed after the file's tests.
import { after } from 'node:test';
import { openRtpSession, type RtpSession } from '../../src/mediaEdge/rtp/rtpSession.js';
import { RtpPeer, type RtpPeerOptions } from './rtpPeer.js';

export const LOOPBACK = '127.0.0.1';

export interface LoopbackRtp {
  /** An RTP session as the edge opens one, on the file's range. */
  session(options?: { inactivityMs?: number }): Promise<RtpSession>;
  /** A far end sending to `session` (the session sends to it only once told, or once it hears it). */
  peer(session: RtpSession, options?: RtpPeerOptions): Promise<RtpPeer>;
  /**
   * A session and a far end that send to each other with `payloadType` (default PCMU);
   * `peerTelephoneEvent` / `sessionTelephoneEvent`: the RFC 4733 payload type each side uses, if any.
   */
  call(options?: { payloadType?: 0 | 8; inactivityMs?: number; peerTelephoneEvent?: number; sessionTelephoneEvent?: number }): Promise<{ session: RtpSession; peer: RtpPeer }>;
}

export function loopbackRtp(portRange: { min: number; max: number }): LoopbackRtp {
  const sessions: RtpSession[] = [];
  const peers: RtpPeer[] = [];
  after(() => {
    for (const s of sessions) s.close();
    for (const p of peers) p.close();
  });
  const rtp: LoopbackRtp = {
    async session(options = {}) {
      const session = await openRtpSession({ portRange, bindAddress: LOOPBACK, ...options });
      sessions.push(session);
      return session;
    },
    async peer(session, options) {
      const peer = await RtpPeer.open({ address: LOOPBACK, port: session.localPort }, options);
      peers.push(peer);
      return peer;
    },
    async call({ payloadType = 0, inactivityMs, peerTelephoneEvent, sessionTelephoneEvent } = {}) {
      const session = await rtp.session(inactivityMs === undefined ? {} : { inactivityMs });
      const peer = await rtp.peer(session, { payloadType, ...(peerTelephoneEvent === undefined ? {} : { telephoneEventPayloadType: peerTelephoneEvent }) });
      session.setRemote({ address: LOOPBACK, port: peer.port, payloadType, ...(sessionTelephoneEvent === undefined ? {} : { telephoneEventPayloadType: sessionTelephoneEvent }) });
      return { session, peer };
    },
  };
  return rtp;
}
