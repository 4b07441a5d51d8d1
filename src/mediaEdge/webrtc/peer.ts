/**
 * WebRTC audio in Node with werift (ICE, DTLS-SRTP, RTP in TypeScript). The edge always
 * answers: it takes the browser's offer, gathers all its candidates before answering (SIP
 * carries one offer and one answer, no trickle), and advertises loopback, the machine's
 * addresses and any configured public address as host candidates. No STUN or TURN of its own:
 * the edge is meant to be reachable directly; the browser's candidates (srflx/relay through its
 * own ICE servers) do the NAT traversal.
 */
import { RTCPeerConnection, RTCRtpCodecParameters, RtpHeader, RtpPacket, type RTCRtpTransceiver } from 'werift';
import type { Logger } from '../../logging/logger.js';
import type { ChannelCloseReason, MediaChannel } from '../media/channel.js';
import { WebRtcMediaChannel, type ChannelStats, type OutboundRtp } from './channel.js';
import { createCodec, type CodecName } from './codecs.js';
import type { FrameClock } from './frameClock.js';
import type { JitterBufferStats } from './jitterBuffer.js';

export interface WebRtcOptions {
  /** Addresses advertised as host candidates before the machine's own (a public address behind 1:1 NAT). */
  advertisedAddresses?: string[];
  /** Also advertise 127.0.0.1 (default true: a browser on the same machine). */
  includeLoopback?: boolean;
  /** UDP port range for ICE sockets (default: any free port); a call takes one port per advertised address. */
  portRange?: [number, number];
  /** Inbound jitter buffer depth (default 60 ms). */
  jitterDepthMs?: number;
  /** ICE and DTLS must complete within this after the answer (default 15 s). */
  connectTimeoutMs?: number;
  /** No RTP from the browser for this long counts as lost media (default 15 s; browsers send even when muted). */
  mediaTimeoutMs?: number;
  /** How long a disconnected ICE may take to recover before the media counts as lost (default 10 s). */
  disconnectGraceMs?: number;
  /** Candidate gathering is cut off after this (default 3 s). */
  gatherTimeoutMs?: number;
}

const codecParameters = (codec: CodecName): RTCRtpCodecParameters =>
  codec === 'opus'
    ? new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48_000, channels: 2 })
    : new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1 });

export interface WebRtcCallStats {
  codec: CodecName;
  channel: ChannelStats;
  jitter: JitterBufferStats;
}

/** One browser's audio: the peer connection and the MediaChannel over it. */
export class WebRtcCall {
  readonly channel: MediaChannel;
  /** Resolves when ICE and DTLS are up; rejects when they fail or time out. */
  readonly connected: Promise<void>;
  private readonly media: WebRtcMediaChannel;
  private stopTicks: (() => void) | undefined;
  private connectTimer: NodeJS.Timeout | undefined;
  private disconnectTimer: NodeJS.Timeout | undefined;
  private markConnected!: () => void;
  private failConnect!: (err: Error) => void;
  private shutdown: Promise<void> | undefined;

  constructor(
    private readonly pc: RTCPeerConnection,
    private readonly transceiver: RTCRtpTransceiver,
    readonly codec: CodecName,
    readonly answerSdp: string,
    private readonly clock: FrameClock,
    private readonly logger: Logger,
    options: WebRtcOptions,
  ) {
    const audioCodec = createCodec(codec);
    this.media = new WebRtcMediaChannel(
      audioCodec,
      (packet) => this.send(packet),
      (err, direction) => logger.error({ err, direction }, 'media channel listener threw'),
      options.jitterDepthMs,
    );
    this.channel = this.media;
    this.connected = new Promise<void>((resolve, reject) => {
      this.markConnected = resolve;
      this.failConnect = reject;
    });
    // A rejection nobody awaits must not become an unhandled one.
    this.connected.catch(() => undefined);
    void this.media.closed.then(() => audioCodec.close());

    const receive = (rtp: RtpPacket) =>
      this.media.receive({ sequenceNumber: rtp.header.sequenceNumber, timestamp: rtp.header.timestamp, ssrc: rtp.header.ssrc, payload: rtp.payload });
    for (const track of transceiver.receiver.tracks) track.onReceiveRtp.subscribe(receive);
    // A track the browser adds later (a new SSRC) plays into the same channel.
    pc.onTrack.subscribe((track) => track.onReceiveRtp.subscribe(receive));
    pc.connectionStateChange.subscribe((state) => this.onConnectionState(state, options));
    this.connectTimer = setTimeout(() => {
      this.failConnect(new Error('ICE/DTLS did not connect in time'));
      this.logger.warn({ timeoutMs: options.connectTimeoutMs ?? 15_000 }, 'media did not connect in time');
      void this.close('media_lost');
    }, options.connectTimeoutMs ?? 15_000);
  }

  get stats(): WebRtcCallStats {
    return { codec: this.codec, channel: { ...this.media.stats }, jitter: { ...this.media.jitter.stats } };
  }

  get isClosed(): boolean {
    return this.media.isClosed;
  }

  /** Closes the channel with `reason` (the first reason wins) and the peer connection. */
  close(reason: ChannelCloseReason): Promise<void> {
    this.media.close(reason);
    this.shutdown ??= this.teardown();
    return this.shutdown;
  }

  private async teardown(): Promise<void> {
    const { channel, jitter } = this.stats;
    this.logger.info({ codec: this.codec, ...channel, jitter }, 'media closed');
    clearTimeout(this.connectTimer);
    clearTimeout(this.disconnectTimer);
    this.stopTicks?.();
    this.failConnect(new Error('call closed'));
    try {
      await this.pc.close();
    } catch (err) {
      this.logger.warn({ err }, 'peer connection close failed');
    }
  }

  private onConnectionState(state: string, options: WebRtcOptions): void {
    if (this.media.isClosed) return;
    switch (state) {
      case 'connected':
        clearTimeout(this.connectTimer);
        clearTimeout(this.disconnectTimer);
        this.disconnectTimer = undefined;
        if (!this.stopTicks) {
          const timeoutMs = options.mediaTimeoutMs ?? 15_000;
          this.media.lastReceivedAt = performance.now();
          let ticks = 0;
          this.stopTicks = this.clock.subscribe(
            () => this.media.sendTick(),
            () => {
              this.media.playTick();
              // Once a second: has the browser gone quiet on the wire (gone without a word)?
              if (++ticks % 50 === 0 && performance.now() - this.media.lastReceivedAt > timeoutMs) {
                this.logger.warn({ timeoutMs }, 'no RTP from the browser: media lost');
                void this.close('media_lost');
              }
            },
          );
        }
        this.markConnected();
        this.logger.info({ codec: this.codec }, 'media connected');
        break;
      case 'disconnected':
        this.disconnectTimer ??= setTimeout(() => {
          this.logger.warn('media stayed disconnected');
          void this.close('media_lost');
        }, options.disconnectGraceMs ?? 10_000);
        break;
      case 'failed':
      case 'closed':
        this.logger.warn({ state }, 'media lost');
        this.failConnect(new Error(`connection ${state}`));
        void this.close('media_lost');
        break;
    }
  }

  private send(packet: OutboundRtp): void {
    const header = new RtpHeader({ sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, marker: packet.marker, payloadType: 0 });
    this.transceiver.sender.sendRtp(new RtpPacket(header, packet.payload)).catch((err: unknown) => {
      this.logger.debug({ err }, 'RTP send failed');
    });
  }
}

/** Makes WebRtcCalls from browsers' offers. */
export class WebRtcEndpoint {
  constructor(
    private readonly clock: FrameClock,
    private readonly options: WebRtcOptions = {},
  ) {}

  /** Answers an offer (already checked by checkAudioOffer) in `codec`; throws when werift cannot use it. */
  async answer(offerSdp: string, codec: CodecName, logger: Logger): Promise<WebRtcCall> {
    const advertised = [...(this.options.advertisedAddresses ?? []), ...((this.options.includeLoopback ?? true) ? ['127.0.0.1'] : [])];
    const pc = new RTCPeerConnection({
      codecs: { audio: [codecParameters(codec)], video: [] },
      headerExtensions: { audio: [], video: [] },
      iceServers: [],
      iceAdditionalHostAddresses: advertised,
      ...(this.options.portRange ? { icePortRange: this.options.portRange } : {}),
    });
    try {
      await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
      const transceiver = pc.getTransceivers().find((t) => t.kind === 'audio');
      if (!transceiver) throw new Error('no audio transceiver after the offer');
      transceiver.setDirection('sendrecv');
      // DTLS server (setup:passive): the browser starts the handshake. As DTLS client werift
      // keeps retransmitting an unanswered ClientHello for ~30 s, even after close.
      const answer = await pc.createAnswer();
      await pc.setLocalDescription({ type: 'answer', sdp: answer.sdp.replace('a=setup:active', 'a=setup:passive') });
      await gathered(pc, this.options.gatherTimeoutMs ?? 3000);
      const answerSdp = pc.localDescription?.sdp;
      if (!answerSdp) throw new Error('no local description');
      return new WebRtcCall(pc, transceiver, codec, answerSdp, this.clock, logger, this.options);
    } catch (err) {
      await pc.close().catch(() => undefined);
      throw err;
    }
  }
}

function gathered(pc: RTCPeerConnection, timeoutMs: number): Promise<void> {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    const { unSubscribe } = pc.iceGatheringStateChange.subscribe((state) => {
      if (state === 'complete') done();
    });
    function done() {
      clearTimeout(timer);
      unSubscribe();
      resolve();
    }
  });
}
