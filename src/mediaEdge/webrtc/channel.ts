/**
 * The MediaChannel of one WebRTC call: the queue of agent audio, the inbound jitter buffer
 * and decoder, and the listeners. Driven by the process's FrameClock once the media is up:
 * each tick plays one inbound frame (silence while nothing is due) and sends at most one
 * outbound frame.
 *
 * Outbound, nothing is sent while the queue is empty (discontinuous transmission, as Opus
 * DTX does): no CPU or bandwidth for silence, and the browser's own jitter buffer plays
 * comfort silence. RTP timestamps keep counting wall-clock frames across the pause, and the
 * first packet after it carries the marker bit (the start of a talkspurt).
 *
 * A SIP trunk's RTP (src/mediaEdge/rtp/) uses this same channel with G.711 and
 * `silenceWhenIdle`: an empty queue sends encoded silence, because carriers and PBXs expect a
 * continuous stream (their own RTP timeouts, NAT bindings kept open). That silence is not agent
 * audio: the outbound listeners do not get it.
 *
 * Inbound audio is heard by the conversation engine, never played to a person, so a backlog
 * (the browser's packets arriving in a burst, or ticks this process missed while busy) is
 * caught up by handing over two frames a tick until the buffer is back to its depth, not by
 * skipping audio: skipped audio is lost words. The jitter buffer's own skip stays as a bound
 * (INBOUND_MAX_DEPTH_MS) for backlogs that catching up cannot clear.
 */
import { randomInt } from 'node:crypto';
import { FRAME_SAMPLES, type ChannelCloseReason, type MediaChannel, type PcmFrame } from '../media/channel.js';
import type { AudioCodec } from './codecs.js';
import { JitterBuffer, type JitterBufferPacket } from './jitterBuffer.js';

export interface OutboundRtp {
  payload: Buffer;
  timestamp: number;
  sequenceNumber: number;
  marker: boolean;
}

export interface ChannelStats {
  inboundFrames: number;
  /** Inbound frames filled with silence: nothing due (loss, late, or the far end not sending). */
  concealedFrames: number;
  outboundFrames: number;
  undecodable: number;
}

type Listener = (frame: PcmFrame) => void;

/**
 * Inbound backlog beyond which the jitter buffer skips (catching up clears anything smaller);
 * under the buffer's 1 s resync distance, so a backlog is skipped down, not restarted at.
 */
export const INBOUND_MAX_DEPTH_MS = 800;
/** Backlog over the depth, in frames, that makes a tick hand over a second frame. */
const CATCH_UP_FRAMES = 2;
const SILENT_FRAME = new Int16Array(FRAME_SAMPLES);
const NO_SAMPLES = new Int16Array(0);

export class WebRtcMediaChannel implements MediaChannel {
  readonly closed: Promise<ChannelCloseReason>;
  readonly jitter: JitterBuffer;
  readonly stats: ChannelStats = { inboundFrames: 0, concealedFrames: 0, outboundFrames: 0, undecodable: 0 };
  private settle!: (reason: ChannelCloseReason) => void;
  private closeReason: ChannelCloseReason | undefined;
  private readonly inboundListeners = new Set<Listener>();
  private readonly outboundListeners = new Set<Listener>();
  private queue: PcmFrame[] = [];
  private drainWaiters: (() => void)[] = [];
  /** Decoded inbound samples not yet played (a packet may hold more than one frame). */
  private carry: Int16Array = NO_SAMPLES;
  private ticks = 0;
  private readonly timestampBase = randomInt(0, 2 ** 31);
  private sequenceNumber = randomInt(0, 0x10000);
  private sentLastTick = false;

  constructor(
    private readonly codec: AudioCodec,
    private readonly sendRtp: (packet: OutboundRtp) => void,
    private readonly onListenerError: (err: unknown, direction: 'inbound' | 'outbound') => void,
    jitterDepthMs?: number,
    private readonly options: { silenceWhenIdle?: boolean } = {},
  ) {
    this.jitter = new JitterBuffer({ clockRate: codec.clockRate, depthMs: jitterDepthMs, maxDepthMs: INBOUND_MAX_DEPTH_MS });
    this.closed = new Promise((resolve) => (this.settle = resolve));
  }

  get isClosed(): boolean {
    return this.closeReason !== undefined;
  }

  onInbound(listener: Listener): () => void {
    this.inboundListeners.add(listener);
    return () => this.inboundListeners.delete(listener);
  }

  onOutbound(listener: Listener): () => void {
    this.outboundListeners.add(listener);
    return () => this.outboundListeners.delete(listener);
  }

  enqueue(frame: PcmFrame): void {
    if (this.closeReason) return;
    if (frame.length === FRAME_SAMPLES) {
      this.queue.push(frame);
      return;
    }
    // Not a 20 ms frame: split into frames, the last padded with silence.
    for (let at = 0; at < frame.length; at += FRAME_SAMPLES) {
      const piece = new Int16Array(FRAME_SAMPLES);
      piece.set(frame.subarray(at, Math.min(at + FRAME_SAMPLES, frame.length)));
      this.queue.push(piece);
    }
  }

  clear(): void {
    this.queue = [];
    this.resolveDrained();
  }

  drained(): Promise<void> {
    if (this.queue.length === 0 || this.closeReason) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  /** performance.now() of the last RTP packet from the far end (or of the channel's start). */
  lastReceivedAt = performance.now();

  /** An RTP packet from the far end (any order). */
  receive(packet: JitterBufferPacket): void {
    if (this.closeReason) return;
    this.lastReceivedAt = performance.now();
    this.jitter.push(packet);
  }

  /** One 20 ms step: `sendTick` then `playTick`. */
  tick(): void {
    this.sendTick();
    this.playTick();
  }

  /** A step's first half (the clock runs every call's before any call's second): send at most one outbound frame. */
  sendTick(): void {
    if (this.closeReason) return;
    this.ticks++;
    this.sendOutbound();
  }

  /** A step's second half: play one inbound frame (two while catching up on a backlog). */
  playTick(): void {
    if (this.closeReason) return;
    this.playInbound();
    if (this.jitter.bufferedTicks > this.jitter.depthTicks + CATCH_UP_FRAMES * this.jitter.frameTicks) this.playInbound();
  }

  /** Settles `closed` (once); the owner tears the transport down. */
  close(reason: ChannelCloseReason): boolean {
    if (this.closeReason) return false;
    this.closeReason = reason;
    this.queue = [];
    this.resolveDrained();
    this.settle(reason);
    return true;
  }

  private playInbound(): void {
    let frame: Int16Array;
    if (!this.jitter.started) {
      frame = new Int16Array(FRAME_SAMPLES);
      this.stats.concealedFrames++;
    } else {
      while (this.carry.length < FRAME_SAMPLES) {
        const payload = this.jitter.take();
        const pcm = payload ? this.codec.decode(payload) : undefined;
        if (pcm && pcm.length > 0) {
          this.jitter.advance(Math.round((pcm.length * this.codec.clockRate) / 16_000));
          this.carry = concat(this.carry, pcm);
        } else {
          if (payload) {
            // Undecodable: its time is used up all the same.
            this.stats.undecodable++;
            this.jitter.advance(this.codec.frameTicks);
          } else {
            this.jitter.conceal(this.codec.frameTicks);
          }
          this.stats.concealedFrames++;
          this.carry = concat(this.carry, new Int16Array(FRAME_SAMPLES));
        }
      }
      if (this.carry.length === FRAME_SAMPLES) {
        // The usual case, a packet of one frame: its decoded array is the frame, no copy.
        frame = this.carry;
        this.carry = NO_SAMPLES;
      } else {
        frame = this.carry.slice(0, FRAME_SAMPLES);
        this.carry = this.carry.slice(FRAME_SAMPLES);
      }
    }
    this.stats.inboundFrames++;
    for (const listener of this.inboundListeners) {
      try {
        listener(frame);
      } catch (err) {
        this.onListenerError(err, 'inbound');
      }
    }
  }

  private sendOutbound(): void {
    const frame = this.queue.shift();
    if (!frame) {
      if (this.options.silenceWhenIdle) this.sendSilence();
      else this.sentLastTick = false;
      return;
    }
    const payload = this.codec.encode(frame);
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    this.sendRtp({
      payload,
      // Wall-clock frames, so a pause in sending shows as a timestamp gap.
      timestamp: (this.timestampBase + this.ticks * this.codec.frameTicks) % 2 ** 32,
      sequenceNumber: this.sequenceNumber,
      marker: !this.sentLastTick,
    });
    this.sentLastTick = true;
    this.stats.outboundFrames++;
    for (const listener of this.outboundListeners) {
      try {
        listener(frame);
      } catch (err) {
        this.onListenerError(err, 'outbound');
      }
    }
    if (this.queue.length === 0) this.resolveDrained();
  }

  /** One frame of silence, through the codec (its resampler keeps its history), told to no listener. */
  private sendSilence(): void {
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    this.sendRtp({
      payload: this.codec.encode(SILENT_FRAME),
      timestamp: (this.timestampBase + this.ticks * this.codec.frameTicks) % 2 ** 32,
      sequenceNumber: this.sequenceNumber,
      marker: false,
    });
    this.sentLastTick = true;
  }

  private resolveDrained(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function concat(a: Int16Array, b: Int16Array): Int16Array {
  if (a.length === 0) return b;
  const out = new Int16Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
