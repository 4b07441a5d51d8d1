/**
 * One phone call's media over a SIP trunk: a UDP socket on an RTP port, G.711 (PCMU or PCMA)
 * at 8 kHz with 20 ms packets, RFC 4733 keypad digits, and the call as a MediaChannel of 16 kHz
 * frames, so the conversation engine, the speech engines and the recorder serve it unchanged.
 *
 * - Decoding, resampling, the jitter buffer and the outbound queue are the WebRTC transport's
 *   channel (webrtc/channel.ts), given a G.711 codec; it is ticked by the process's shared
 *   20 ms FrameClock, so a phone call paces its frames like a browser call. Unlike WebRTC, the
 *   stream is continuous: silence is sent while the agent says nothing.
 * - Symmetric RTP: packets go to the address and port the SDP named until the first valid
 *   packet arrives; from then on to wherever the far end's packets come from (a far end behind
 *   NAT cannot receive on the port it wrote in its SDP), and packets from anywhere else are
 *   dropped.
 * - Hostile input: a datagram that is not RTP, comes from elsewhere, or carries a payload type
 *   not negotiated is dropped and counted (`stats.dropped`); nothing a packet holds can throw
 *   out of the socket's handler.
 * - No valid packet for `inactivityMs` (RTP_INACTIVITY_SECONDS) closes the channel `media_lost`.
 * - RTCP is not sent; RTCP multiplexed onto the port is dropped as such.
 *
 * Interface shared with the SIP side (docs/telephony.md): openRtpSession, RtpSession, RtpMediaChannel,
 * as agreed, with additions only: the options `clock`, `logger`, `jitterDepthMs`; on the session
 * `receiveDigit` (keys from SIP INFO), `sendDigits`, `sendingTo` and `stats`; `band` on the channel.
 */
import { randomInt } from 'node:crypto';
import type { Socket } from 'node:dgram';
import { createLogger, type Logger } from '../../logging/logger.js';
import type { ChannelCloseReason, MediaChannel, PcmFrame } from '../media/channel.js';
import { WebRtcMediaChannel, type OutboundRtp } from '../webrtc/channel.js';
import { createCodec, type AudioCodec } from '../webrtc/codecs.js';
import { FrameClock } from '../webrtc/frameClock.js';
import type { JitterBufferStats } from '../webrtc/jitterBuffer.js';
import { portAllocatorFor, type BoundPort, type PortRange } from './portAllocator.js';
import { buildRtpPacket, parseRtpPacket, type RtpDropReason } from './rtpPacket.js';
import { isKeypadDigit, TelephoneEventReceiver, telephoneEventPayloads } from './telephoneEvent.js';

/** Where the far end receives, as its SDP says, and what it sends. */
export interface RemoteMedia {
  address: string;
  port: number;
  /** 0 = PCMU, 8 = PCMA. */
  payloadType: 0 | 8;
  /** The payload type of RFC 4733 telephone events, when the far end sends or takes them. */
  telephoneEventPayloadType?: number;
}

/** Default of RTP_INACTIVITY_SECONDS. */
export const DEFAULT_RTP_INACTIVITY_MS = 10_000;

export interface RtpSessionOptions {
  portRange: PortRange;
  bindAddress: string;
  /** No valid RTP for this long closes the channel `media_lost` (default 10 s). */
  inactivityMs?: number;
  /** The process's 20 ms clock (default: one shared by every RTP session of the process). */
  clock?: FrameClock;
  logger?: Logger;
  /** Inbound jitter buffer depth, ms (default 60). */
  jitterDepthMs?: number;
}

export type RtpDropCounts = Partial<Record<RtpDropReason | 'before_remote' | 'foreign_source' | 'payload_type' | 'handler_error', number>>;

export interface RtpSessionStats {
  /** Valid packets taken (audio and telephone events). */
  received: number;
  sent: number;
  dropped: RtpDropCounts;
  digits: number;
  jitter: JitterBufferStats;
  concealedFrames: number;
}

export interface RtpSession {
  localPort: number;
  /** The far end's media from its SDP; may be called again (a re-INVITE) with new values. */
  setRemote(remote: RemoteMedia): void;
  channel: RtpMediaChannel;
  /** Ends the call's media: the channel closes `local_hangup` (unless closed already), the port is released. Idempotent. */
  close(): void;
  /** A key press the signalling carried (a SIP INFO, telephoneEvent.ts digitFromSipInfo): heard as a digit like an RFC 4733 event. */
  receiveDigit(digit: string): void;
  /** Sends keypad digits as RFC 4733 events, one after the other (the far end must have offered telephone-event). */
  sendDigits(digits: string, options?: { durationMs?: number }): void;
  /** Where packets go now: the SDP's address, or the latched source of the far end's packets. */
  readonly sendingTo: { address: string; port: number } | undefined;
  readonly stats: RtpSessionStats;
}

/** A MediaChannel that also hears keypad digits and can be hung up with a reason. */
export interface RtpMediaChannel extends MediaChannel {
  onDigit(listener: (digit: string) => void): () => void;
  /** Closes the channel with `reason` (the first reason wins); the session's port is released. */
  hangUp(reason: ChannelCloseReason): void;
}

let sharedClock: FrameClock | undefined;
let defaultLogger: Logger | undefined;

/** Opens a session on a free even port of the range; throws RtpPortsExhaustedError when none is free. */
export async function openRtpSession(opts: RtpSessionOptions): Promise<RtpSession> {
  const logger = opts.logger ?? (defaultLogger ??= createLogger('warn', 2));
  const clock = opts.clock ?? (sharedClock ??= new FrameClock((err) => logger.error({ err }, 'RTP media tick failed')));
  const bound = await portAllocatorFor(opts.portRange).bind(opts.bindAddress);
  return new G711RtpSession(bound, clock, logger, opts.inactivityMs ?? DEFAULT_RTP_INACTIVITY_MS, opts.jitterDepthMs);
}

/** PCMU or PCMA, as the far end's answer decides; both tick at 8 kHz, so the channel is built before it is known. */
class NegotiatedG711 implements AudioCodec {
  readonly clockRate = 8000;
  readonly frameTicks = 160;
  private codec: AudioCodec = createCodec('PCMU');

  get name() {
    return this.codec.name;
  }

  use(payloadType: 0 | 8): void {
    const name = payloadType === 0 ? 'PCMU' : 'PCMA';
    if (name !== this.codec.name) this.codec = createCodec(name);
  }

  decode(payload: Uint8Array): Int16Array {
    return this.codec.decode(payload);
  }

  encode(frame: Int16Array): Buffer {
    return this.codec.encode(frame);
  }

  close(): void {
    this.codec.close();
  }
}

class G711RtpSession implements RtpSession {
  readonly localPort: number;
  readonly channel: RtpMediaChannel;
  private readonly socket: Socket;
  private readonly media: WebRtcMediaChannel;
  private readonly codec = new NegotiatedG711();
  private readonly events = new TelephoneEventReceiver();
  private readonly digitListeners = new Set<(digit: string) => void>();
  private readonly ssrc = randomInt(0, 2 ** 32);
  private sequenceNumber = randomInt(0, 0x10000);
  private lastTimestamp: number | undefined;
  private remote: RemoteMedia | undefined;
  private latched: { address: string; port: number } | undefined;
  private lastValidAt = performance.now();
  private stopTicks: (() => void) | undefined;
  /** Telephone-event packets waiting to go, one per tick (null: a tick of pause between two key presses). */
  private outboundEvents: ({ payload: Uint8Array; first: boolean } | null)[] = [];
  /** The RTP timestamp of the event being sent: its first packet's. */
  private eventTimestamp = 0;
  private counts = { received: 0, sent: 0, digits: 0 };
  private readonly dropped: RtpDropCounts = {};

  constructor(
    private readonly bound: BoundPort,
    private readonly clock: FrameClock,
    private readonly logger: Logger,
    private readonly inactivityMs: number,
    jitterDepthMs: number | undefined,
  ) {
    this.localPort = bound.port;
    this.socket = bound.socket;
    this.media = new WebRtcMediaChannel(
      this.codec,
      (packet) => this.sendAudio(packet),
      (err, direction) => logger.error({ err, direction }, 'media channel listener threw'),
      jitterDepthMs,
      { silenceWhenIdle: true },
    );
    this.channel = this.channelFacade();
    this.socket.on('message', (datagram, source) => {
      try {
        this.receive(datagram, source);
      } catch (err) {
        this.drop('handler_error');
        this.logger.warn({ err }, 'RTP packet handler failed; packet dropped');
      }
    });
    this.socket.on('error', (err) => this.logger.warn({ err, port: this.localPort }, 'RTP socket error'));
    void this.media.closed.then((reason) => this.teardown(reason));
  }

  get sendingTo(): { address: string; port: number } | undefined {
    return this.latched ?? (this.remote ? { address: this.remote.address, port: this.remote.port } : undefined);
  }

  get stats(): RtpSessionStats {
    return { ...this.counts, dropped: { ...this.dropped }, jitter: { ...this.media.jitter.stats }, concealedFrames: this.media.stats.concealedFrames };
  }

  setRemote(remote: RemoteMedia): void {
    if (this.media.isClosed) return;
    if (remote.payloadType !== 0 && remote.payloadType !== 8) throw new RangeError(`RTP payload type ${String(remote.payloadType)} is not G.711 (0 or 8)`);
    if (!Number.isInteger(remote.port) || remote.port < 1 || remote.port > 65_535) throw new RangeError(`RTP port ${remote.port} is not a UDP port`);
    const moved = this.remote && (this.remote.address !== remote.address || this.remote.port !== remote.port);
    this.remote = remote;
    // A re-INVITE naming a new address starts the latching afresh.
    if (moved) this.latched = undefined;
    this.codec.use(remote.payloadType);
    if (!this.stopTicks) {
      this.lastValidAt = performance.now();
      this.stopTicks = this.clock.subscribe(
        () => this.sendTick(),
        () => this.media.playTick(),
      );
    }
  }

  sendDigits(digits: string, options: { durationMs?: number } = {}): void {
    for (const digit of digits) if (!isKeypadDigit(digit)) throw new RangeError(`not a keypad digit: ${JSON.stringify(digit)}`);
    for (const digit of digits) {
      telephoneEventPayloads(digit, { durationMs: options.durationMs }).forEach((payload, i) => this.outboundEvents.push({ payload, first: i === 0 }));
      // A pause between key presses, as a hand makes.
      this.outboundEvents.push(null, null, null);
    }
  }

  close(): void {
    this.media.close('local_hangup');
  }

  receiveDigit(digit: string): void {
    if (this.media.isClosed || !isKeypadDigit(digit)) return;
    this.emitDigit(digit.toUpperCase());
  }

  private channelFacade(): RtpMediaChannel {
    const media = this.media;
    return {
      // G.711 at 8 kHz: the recognisers are chosen for the telephone band (speech/recognizerChoice.ts).
      band: 'telephone',
      closed: media.closed,
      onInbound: (listener: (frame: PcmFrame) => void) => media.onInbound(listener),
      onOutbound: (listener: (frame: PcmFrame) => void) => media.onOutbound(listener),
      enqueue: (frame: PcmFrame) => media.enqueue(frame),
      clear: () => media.clear(),
      drained: () => media.drained(),
      onDigit: (listener: (digit: string) => void) => {
        this.digitListeners.add(listener);
        return () => this.digitListeners.delete(listener);
      },
      hangUp: (reason: ChannelCloseReason) => {
        media.close(reason);
      },
    };
  }

  private sendTick(): void {
    if (performance.now() - this.lastValidAt > this.inactivityMs) {
      this.logger.warn({ inactivityMs: this.inactivityMs, port: this.localPort }, 'no RTP from the far end: media lost');
      this.media.close('media_lost');
      return;
    }
    this.media.sendTick();
    const event = this.outboundEvents.shift();
    if (event && this.remote?.telephoneEventPayloadType !== undefined) {
      // An event is stamped with the time its key went down: the audio packet of the same tick.
      if (event.first) this.eventTimestamp = this.lastTimestamp ?? 0;
      this.send(this.remote.telephoneEventPayloadType, event.payload, this.eventTimestamp, event.first);
    }
  }

  private receive(datagram: Buffer, source: { address: string; port: number }): void {
    if (this.media.isClosed) return;
    const remote = this.remote;
    if (!remote) return this.drop('before_remote');
    const packet = parseRtpPacket(datagram);
    if ('drop' in packet) return this.drop(packet.drop);
    if (this.latched && (this.latched.address !== source.address || this.latched.port !== source.port)) return this.drop('foreign_source');
    if (packet.payloadType === remote.payloadType) {
      this.media.receive({ sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, ssrc: packet.ssrc, payload: packet.payload });
    } else if (packet.payloadType === remote.telephoneEventPayloadType) {
      const digit = this.events.receive(packet.ssrc, packet.timestamp, packet.payload);
      if (digit) this.emitDigit(digit);
    } else {
      return this.drop('payload_type');
    }
    this.counts.received++;
    this.lastValidAt = performance.now();
    if (!this.latched) {
      this.latched = { address: source.address, port: source.port };
      if (source.address !== remote.address || source.port !== remote.port) {
        this.logger.info({ sdp: `${remote.address}:${remote.port}`, actual: `${source.address}:${source.port}` }, 'symmetric RTP: sending where the far end sends from');
      }
    }
  }

  private emitDigit(digit: string): void {
    this.counts.digits++;
    for (const listener of this.digitListeners) {
      try {
        listener(digit);
      } catch (err) {
        this.logger.error({ err }, 'digit listener threw');
      }
    }
  }

  private sendAudio(packet: OutboundRtp): void {
    if (!this.remote) return;
    this.lastTimestamp = packet.timestamp;
    this.send(this.remote.payloadType, packet.payload, packet.timestamp, packet.marker);
  }

  private send(payloadType: number, payload: Uint8Array, timestamp: number, marker: boolean): void {
    const to = this.sendingTo;
    if (!to || this.media.isClosed) return;
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    const datagram = buildRtpPacket({ marker, payloadType, sequenceNumber: this.sequenceNumber, timestamp, ssrc: this.ssrc, payload });
    this.counts.sent++;
    // No callback: a send that fails is a lost packet, which RTP expects; asking to be told of
    // each send would cost every packet a completion callback.
    this.socket.send(datagram, to.port, to.address);
  }

  private drop(reason: keyof RtpDropCounts): void {
    this.dropped[reason] = (this.dropped[reason] ?? 0) + 1;
  }

  private teardown(reason: ChannelCloseReason): void {
    this.stopTicks?.();
    this.stopTicks = undefined;
    this.outboundEvents = [];
    this.digitListeners.clear();
    this.bound.release();
    this.codec.close();
    this.logger.debug({ reason, port: this.localPort, ...this.stats }, 'RTP session closed');
  }
}
