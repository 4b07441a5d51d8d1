/**
 * RTP packets (RFC 3550 §5.1) as a SIP trunk's media carries them: parsed from whatever a UDP
 * socket receives, which may be anything. A packet that is not well-formed RTP is never
 * thrown over: the parser says why, and the session drops it and counts the reason.
 */

export interface RtpPacket {
  marker: boolean;
  payloadType: number;
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  /** The payload, padding removed (a view into the datagram). */
  payload: Uint8Array;
}

/** Why a datagram was not taken as RTP; the session counts each. */
export type RtpDropReason = 'too_short' | 'version' | 'rtcp' | 'csrc_overrun' | 'extension_overrun' | 'padding';

export const RTP_HEADER_BYTES = 12;

/** The packet a datagram holds, or why it holds none. */
export function parseRtpPacket(datagram: Uint8Array): RtpPacket | { drop: RtpDropReason } {
  if (datagram.length < RTP_HEADER_BYTES) return { drop: 'too_short' };
  const first = datagram[0];
  if (first >> 6 !== 2) return { drop: 'version' };
  const second = datagram[1];
  // RTCP multiplexed on the port (RFC 5761): packet types 200-204 read as marker + payload type 72-76.
  if (second >= 200 && second <= 204) return { drop: 'rtcp' };
  let offset = RTP_HEADER_BYTES + (first & 0x0f) * 4;
  if (offset > datagram.length) return { drop: 'csrc_overrun' };
  if (first & 0x10) {
    if (offset + 4 > datagram.length) return { drop: 'extension_overrun' };
    offset += 4 + ((datagram[offset + 2] << 8) | datagram[offset + 3]) * 4;
    if (offset > datagram.length) return { drop: 'extension_overrun' };
  }
  let end = datagram.length;
  if (first & 0x20) {
    const padding = datagram[datagram.length - 1];
    if (padding === 0 || end - padding < offset) return { drop: 'padding' };
    end -= padding;
  }
  return {
    marker: (second & 0x80) !== 0,
    payloadType: second & 0x7f,
    // Read byte by byte: no DataView object per packet.
    sequenceNumber: (datagram[2] << 8) | datagram[3],
    timestamp: uint32At(datagram, 4),
    ssrc: uint32At(datagram, 8),
    payload: datagram.subarray(offset, end),
  };
}

function uint32At(bytes: Uint8Array, at: number): number {
  return ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0;
}

/** A version-2 RTP packet with no CSRCs, extension or padding. */
export function buildRtpPacket(packet: RtpPacket): Buffer {
  const out = Buffer.allocUnsafe(RTP_HEADER_BYTES + packet.payload.length);
  out[0] = 0x80;
  out[1] = (packet.marker ? 0x80 : 0) | (packet.payloadType & 0x7f);
  out.writeUInt16BE(packet.sequenceNumber & 0xffff, 2);
  out.writeUInt32BE(packet.timestamp >>> 0, 4);
  out.writeUInt32BE(packet.ssrc >>> 0, 8);
  out.set(packet.payload, RTP_HEADER_BYTES);
  return out;
}
