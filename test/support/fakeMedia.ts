// A stand-in for WebRTC media in the SIP layer's tests: answers any offer that has usable
// audio (the real offer check) with a fixed SDP, "connects" at once, and records each session.
import type { ChannelCloseReason, MediaChannel, PcmFrame } from '../../src/mediaEdge/media/channel.js';
import type { MediaAnswerer, MediaSession } from '../../src/mediaEdge/sip/userAgentServer.js';
import { checkAudioOffer } from '../../src/mediaEdge/webrtc/sdp.js';

export const FAKE_ANSWER_SDP = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\n';

export class FakeMediaSession implements MediaSession, MediaChannel {
  readonly answerSdp = FAKE_ANSWER_SDP;
  readonly connected = Promise.resolve();
  readonly closed: Promise<ChannelCloseReason>;
  readonly channel: MediaChannel = this;
  readonly enqueued: PcmFrame[] = [];
  closeReason: ChannelCloseReason | undefined;
  private settle!: (reason: ChannelCloseReason) => void;

  constructor(readonly codec: string) {
    this.closed = new Promise((resolve) => (this.settle = resolve));
  }

  onInbound(): () => void {
    return () => undefined;
  }
  onOutbound(): () => void {
    return () => undefined;
  }
  enqueue(frame: PcmFrame): void {
    this.enqueued.push(frame);
  }
  clear(): void {
    this.enqueued.length = 0;
  }
  drained(): Promise<void> {
    return Promise.resolve();
  }
  close(reason: ChannelCloseReason): Promise<void> {
    if (!this.closeReason) {
      this.closeReason = reason;
      this.settle(reason);
    }
    return Promise.resolve();
  }
}

export class FakeMediaAnswerer implements MediaAnswerer {
  readonly sessions: FakeMediaSession[] = [];
  /** Milliseconds each answer takes (to let a CANCEL arrive first). */
  answerDelayMs = 0;

  check(offerSdp: string) {
    return checkAudioOffer(offerSdp);
  }

  async answer(offerSdp: string): Promise<MediaSession> {
    const check = checkAudioOffer(offerSdp);
    if ('reject' in check) throw new Error(check.reject);
    if (this.answerDelayMs) await new Promise((r) => setTimeout(r, this.answerDelayMs));
    const session = new FakeMediaSession(check.codec);
    this.sessions.push(session);
    return session;
  }
}
