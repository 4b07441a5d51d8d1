// The browser's side of a WebRTC call, in Node with werift, for the media edge's tests and
// bench: offers audio (Opus with PCMU like a browser, or PCMU only), sends a tone as RTP
// every 20 ms (or frames encoded ahead by the caller), and decodes what the edge sends back.
import OpusScript from 'opusscript';
import { RTCPeerConnection, RTCRtpCodecParameters, RtpHeader, RtpPacket, type RTCRtpTransceiver } from 'werift';
import { decodeMulaw, encodeMulaw } from '../../src/mediaEdge/audio/mulaw.js';

export type OfferedCodecs = 'opus' | 'pcmu';

export class BrowserPeer {
  /** Decoded audio received from the edge (48 kHz for Opus, 8 kHz for PCMU). */
  received: number[] = [];
  receivedPackets = 0;
  markers = 0;
  readonly timestamps: number[] = [];
  private readonly pc: RTCPeerConnection;
  private transceiver!: RTCRtpTransceiver;
  private encoder?: OpusScript;
  private decoder?: OpusScript;
  private sendTimer?: NodeJS.Timeout;
  private seq = 1000;
  private ts = 5000;
  private phase = 0;
  codec: 'opus' | 'PCMU' | undefined;

  private readonly decode: boolean;
  private readonly packetListeners = new Set<(rtp: RtpPacket) => void>();

  /** `decode: false` keeps no received audio (a benchmark's callers only time the packets: see onPacket). */
  constructor(
    readonly offered: OfferedCodecs,
    options: { decode?: boolean } = {},
  ) {
    this.decode = options.decode ?? true;
    const codecs =
      offered === 'opus'
        ? [
            new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48_000, channels: 2, parameters: 'minptime=10;useinbandfec=1' }),
            new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1 }),
          ]
        : [new RTCRtpCodecParameters({ mimeType: 'audio/PCMU', clockRate: 8000, channels: 1 })];
    this.pc = new RTCPeerConnection({ codecs: { audio: codecs, video: [] }, iceServers: [], iceAdditionalHostAddresses: ['127.0.0.1'] });
  }

  get rate(): number {
    return this.codec === 'PCMU' ? 8000 : 48_000;
  }

  get connectionState(): string {
    return this.pc.connectionState;
  }

  /** The SDP offer, with every candidate gathered. */
  async offer(): Promise<string> {
    this.transceiver = this.pc.addTransceiver('audio', { direction: 'sendrecv' });
    // The receiving track exists once the answer is applied.
    this.pc.onTrack.subscribe((track) => track.onReceiveRtp.subscribe((rtp) => this.onRtp(rtp)));
    await this.pc.setLocalDescription(await this.pc.createOffer());
    if (this.pc.iceGatheringState !== 'complete') {
      await new Promise<void>((resolve) => {
        this.pc.iceGatheringStateChange.subscribe((state) => state === 'complete' && resolve());
      });
    }
    return this.pc.localDescription!.sdp;
  }

  async accept(answerSdp: string): Promise<void> {
    this.codec = /a=rtpmap:\d+ opus\/48000/i.test(answerSdp) ? 'opus' : 'PCMU';
    if (this.codec === 'opus') {
      this.encoder = new OpusScript(48_000, 1, OpusScript.Application.VOIP);
      this.decoder = new OpusScript(48_000, 1, OpusScript.Application.VOIP);
    }
    await this.pc.setRemoteDescription({ type: 'answer', sdp: answerSdp });
  }

  async connected(timeoutMs = 10_000): Promise<void> {
    if (this.pc.connectionState === 'connected') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not connected within ${timeoutMs} ms (${this.pc.connectionState})`)), timeoutMs);
      this.pc.connectionStateChange.subscribe((state) => {
        if (state === 'connected') {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }

  /** Sends a sine tone, one RTP packet per 20 ms of wall clock (a browser's sender does not drift), until stopSending. */
  startTone(frequency: number, amplitude: number): void {
    this.stopSending();
    const start = performance.now();
    let sent = 0;
    this.sendTimer = setInterval(() => {
      const due = Math.floor((performance.now() - start) / 20) + 1;
      for (; sent < due; sent++) this.sendFrame(frequency, amplitude);
    }, 5);
  }

  /** Sends one payload already encoded in the negotiated codec (20 ms of audio) as the next RTP packet. */
  sendEncoded(payload: Buffer, marker = false): void {
    const header = new RtpHeader({ sequenceNumber: this.seq++ & 0xffff, timestamp: this.ts >>> 0, payloadType: 0, marker });
    this.ts += this.codec === 'opus' ? 960 : 160;
    this.transceiver.sender.sendRtp(new RtpPacket(header, payload)).catch(() => undefined);
  }

  /** Calls `listener` with every RTP packet from the edge, as it arrives. */
  onPacket(listener: (rtp: RtpPacket) => void): () => void {
    this.packetListeners.add(listener);
    return () => this.packetListeners.delete(listener);
  }

  stopSending(): void {
    clearInterval(this.sendTimer);
    this.sendTimer = undefined;
  }

  private sendFrame(frequency: number, amplitude: number): void {
    const samples = this.rate / 50;
    const pcm = new Int16Array(samples);
    for (let i = 0; i < samples; i++) {
      pcm[i] = Math.round(amplitude * Math.sin(this.phase));
      this.phase += (2 * Math.PI * frequency) / this.rate;
    }
    this.sendEncoded(this.codec === 'opus' ? this.encoder!.encode(Buffer.from(pcm.buffer), samples) : Buffer.from(encodeMulaw(pcm)));
  }

  private onRtp(rtp: RtpPacket): void {
    this.receivedPackets++;
    if (rtp.header.marker) this.markers++;
    this.timestamps.push(rtp.header.timestamp);
    for (const listener of this.packetListeners) listener(rtp);
    if (!this.decode) return;
    if (this.codec === 'opus' && this.decoder) {
      const pcm = this.decoder.decode(rtp.payload);
      const samples = new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.length));
      for (const s of samples) this.received.push(s);
    } else if (this.codec === 'PCMU') {
      for (const s of decodeMulaw(rtp.payload)) this.received.push(s);
    }
  }

  async close(): Promise<void> {
    this.stopSending();
    await this.pc.close().catch(() => undefined);
    this.encoder?.delete();
    this.decoder?.delete();
    this.encoder = this.decoder = undefined;
  }
}

/** Power of one frequency in a signal, normalised to amplitude (Goertzel). */
export function toneAmplitude(samples: ArrayLike<number>, frequency: number, rate: number): number {
  const k = 2 * Math.cos((2 * Math.PI * frequency) / rate);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < samples.length; i++) {
    const s0 = samples[i] + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  return (2 * Math.sqrt(Math.max(0, s1 * s1 + s2 * s2 - k * s1 * s2))) / samples.length;
}

/** Dominant frequency by counting zero crossings. */
export function zeroCrossingFrequency(samples: ArrayLike<number>, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) if ((samples[i - 1] < 0) !== (samples[i] < 0)) crossings++;
  return (crossings / 2) * (rate / samples.length);
}

export function rms(samples: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i] * samples[i];
  return Math.sqrt(sum / Math.max(1, samples.length));
}

/** A sine tone as 20 ms frames of 16 kHz PCM. */
export function toneFrames(frequency: number, amplitude: number, frames: number): Int16Array[] {
  const out: Int16Array[] = [];
  let phase = 0;
  for (let f = 0; f < frames; f++) {
    const frame = new Int16Array(320);
    for (let i = 0; i < 320; i++) {
      frame[i] = Math.round(amplitude * Math.sin(phase));
      phase += (2 * Math.PI * frequency) / 16_000;
    }
    out.push(frame);
  }
  return out;
}
