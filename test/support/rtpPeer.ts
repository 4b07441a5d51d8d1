// The far end of a phone call's media, for tests and the benchmark: a UDP socket that sends
// G.711 at 8 kHz in 20 ms RTP packets (speech, silence or keypad digits as RFC 4733 events)
// and decodes what the edge sends back. Packets are built here with the edge's own packet
// helpers only where the RTP header is concerned; the audio is this peer's own encoding.
import { createSocket, type Socket } from 'node:dgram';
import { decodeAlaw, decodeMulaw, encodeAlaw, encodeMulaw } from '../../src/mediaEdge/audio/mulaw.js';
import { buildRtpPacket, parseRtpPacket } from '../../src/mediaEdge/rtp/rtpPacket.js';
import { telephoneEventPayloads } from '../../src/mediaEdge/rtp/telephoneEvent.js';

export const PHONE_FRAME = 160; // 20 ms at 8 kHz

export interface RtpPeerOptions {
  payloadType?: 0 | 8;
  telephoneEventPayloadType?: number;
  /** Keep the decoded audio received (default true; the benchmark only counts packets). */
  keepAudio?: boolean;
}

export class RtpPeer {
  /** Decoded 8 kHz audio received, in arrival order. */
  received: number[] = [];
  receivedPackets = 0;
  /** Where the edge's packets came from (the edge's port). */
  lastSource: { address: string; port: number } | undefined;
  readonly arrivals: number[] = [];
  private sequenceNumber = 1000;
  private timestamp = 80_000;
  private readonly ssrc = 0x1234_5678;
  private timer: NodeJS.Timeout | undefined;
  private readonly packetListeners = new Set<(payloadType: number, payload: Uint8Array) => void>();

  private constructor(
    readonly socket: Socket,
    private target: { address: string; port: number },
    readonly options: RtpPeerOptions,
  ) {
    socket.on('message', (datagram, source) => {
      const packet = parseRtpPacket(datagram);
      if ('drop' in packet) return;
      this.receivedPackets++;
      this.arrivals.push(performance.now());
      this.lastSource = source;
      for (const listener of this.packetListeners) listener(packet.payloadType, packet.payload);
      if (packet.payloadType !== this.payloadType || this.options.keepAudio === false) return;
      const pcm = this.payloadType === 0 ? decodeMulaw(packet.payload) : decodeAlaw(packet.payload);
      for (const sample of pcm) this.received.push(sample);
    });
  }

  static async open(target: { address: string; port: number }, options: RtpPeerOptions = {}): Promise<RtpPeer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new RtpPeer(socket, target, options);
  }

  get port(): number {
    return this.socket.address().port;
  }

  get payloadType(): 0 | 8 {
    return this.options.payloadType ?? 0;
  }

  retarget(target: { address: string; port: number }): void {
    this.target = target;
  }

  onPacket(listener: (payloadType: number, payload: Uint8Array) => void): () => void {
    this.packetListeners.add(listener);
    return () => this.packetListeners.delete(listener);
  }

  /** One 20 ms packet of 8 kHz audio (PHONE_FRAME samples), the clock moving on. */
  sendFrame(samples: Int16Array, overrides: { sequenceNumber?: number; timestamp?: number } = {}): void {
    const payload = this.payloadType === 0 ? encodeMulaw(samples) : encodeAlaw(samples);
    this.sendRaw(
      buildRtpPacket({
        marker: false,
        payloadType: this.payloadType,
        sequenceNumber: overrides.sequenceNumber ?? (this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff),
        timestamp: overrides.timestamp ?? (this.timestamp += PHONE_FRAME),
        ssrc: this.ssrc,
        payload,
      }),
    );
  }

  sendRaw(datagram: Uint8Array): void {
    this.socket.send(datagram, this.target.port, this.target.address);
  }

  /**
   * Plays 8 kHz audio in real time, one packet per 20 ms (against the monotonic clock, so it
   * does not drift), then silence until stop() when `thenSilence`. Resolves when the audio is sent.
   */
  play(samples: Int16Array, options: { thenSilence?: boolean } = {}): Promise<void> {
    this.stop();
    const frames: Int16Array[] = [];
    for (let at = 0; at < samples.length; at += PHONE_FRAME) {
      const frame = new Int16Array(PHONE_FRAME);
      frame.set(samples.subarray(at, Math.min(at + PHONE_FRAME, samples.length)));
      frames.push(frame);
    }
    return new Promise((resolve) => {
      const start = performance.now();
      let sent = 0;
      const step = () => {
        const due = Math.floor((performance.now() - start) / 20) + 1;
        while (sent < due) {
          const frame = frames[sent];
          if (frame) this.sendFrame(frame);
          else if (options.thenSilence) this.sendFrame(new Int16Array(PHONE_FRAME));
          sent++;
          if (sent === frames.length) resolve();
        }
        if (sent < frames.length || options.thenSilence) this.timer = setTimeout(step, start + sent * 20 - performance.now());
      };
      if (frames.length === 0) resolve();
      step();
    });
  }

  /** Sends silence in real time until stop(). */
  keepAlive(): void {
    void this.play(new Int16Array(0), { thenSilence: true });
  }

  /** Keypad digits as RFC 4733 events (one per 20 ms), audio paused meanwhile; resolves when sent. */
  async sendDigits(digits: string, pt = this.options.telephoneEventPayloadType ?? 101): Promise<void> {
    const wasPlaying = this.timer !== undefined;
    this.stop();
    for (const digit of digits) {
      const timestamp = (this.timestamp += PHONE_FRAME);
      const payloads = telephoneEventPayloads(digit, { durationMs: 100 });
      for (const [i, payload] of payloads.entries()) {
        this.sendRaw(buildRtpPacket({ marker: i === 0, payloadType: pt, sequenceNumber: (this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff), timestamp, ssrc: this.ssrc, payload }));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      this.timestamp += payloads.length * PHONE_FRAME;
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    if (wasPlaying) this.keepAlive();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  close(): void {
    this.stop();
    this.socket.close();
  }
}
