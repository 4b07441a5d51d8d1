import { jitterLateFrames, jitterUnderruns } from '../../metrics/edgeMetrics.js';

/**
 * A fixed-delay jitter buffer for one inbound RTP stream, in RTP clock ticks. Pure (but for
 * the edge's late-frame and underrun counters, docs/observability.md): the
 * caller pushes packets as they arrive and, once per 20 ms of wall clock, takes the packet
 * due at the playout point (or none: a gap, which the caller fills with silence) and advances
 * the playout point by what it played.
 *
 * - Playout starts `depth` behind the first packet's timestamp, so packets up to `depth` late
 *   (60 ms by default, three 20 ms frames) still arrive in time; they are played in timestamp
 *   order whatever order they came in.
 * - A missing packet is concealed (the caller plays silence) and skipped when later packets
 *   are waiting; when none are (the sender is late or has paused), the playout point holds
 *   instead, so a sender clock slightly slower than ours does not turn into late packets.
 * - A packet whose time has passed is dropped as late; a second copy of a timestamp as a
 *   duplicate.
 * - Latency is capped: when more than `maxDepth` is buffered (a burst after a network stall, or
 *   a sender clock faster than ours), the oldest packets are skipped down to `depth`.
 * - A timestamp far from the playout point (a new SSRC, a sender restart, a jump after a
 *   long pause) restarts the buffer at that packet.
 * Sequence numbers only count losses for the statistics: the timestamp orders playout.
 */

export interface JitterBufferOptions {
  /** RTP clock rate (48 000 for Opus, 8000 for PCMU). */
  clockRate: number;
  /** Playout delay behind the first packet, ms (default 60). */
  depthMs?: number;
  /** Above this much buffered audio the oldest is skipped, ms (default depth + 100). */
  maxDepthMs?: number;
  /** A packet this far from the playout point restarts the buffer, ms (default 1000). */
  resyncMs?: number;
}

export interface JitterBufferPacket {
  sequenceNumber: number;
  timestamp: number;
  ssrc: number;
  payload: Uint8Array;
}

export interface JitterBufferStats {
  received: number;
  played: number;
  late: number;
  duplicate: number;
  /** Skipped to cap the latency. */
  skipped: number;
  /** Frames of silence played while later packets waited: the initial depth, and packets lost or later than the depth. */
  concealed: number;
  /** Frames played as silence with nothing buffered (the far end late or not sending). */
  underruns: number;
  /** Gaps in the sequence numbers. */
  lost: number;
  resyncs: number;
}

export type PushResult = 'accepted' | 'late' | 'duplicate' | 'resync';

interface Buffered {
  /** Extended (unwrapped) timestamp. */
  at: number;
  payload: Uint8Array;
}

const WRAP = 2 ** 32;
const HALF = 2 ** 31;

export class JitterBuffer {
  readonly depthTicks: number;
  /** Ticks in one 20 ms frame: the playout step. */
  readonly frameTicks: number;
  private readonly maxDepthTicks: number;
  private readonly resyncTicks: number;
  /** Sorted by `at`. */
  private packets: Buffered[] = [];
  private playout: number | undefined;
  private ssrc: number | undefined;
  /** Extended timestamp of the last raw timestamp seen, to unwrap the next. */
  private lastExtended = 0;
  private lastRaw = 0;
  private lastSequence: number | undefined;
  readonly stats: JitterBufferStats = { received: 0, played: 0, late: 0, duplicate: 0, skipped: 0, concealed: 0, underruns: 0, lost: 0, resyncs: 0 };

  constructor(private readonly options: JitterBufferOptions) {
    const ticksPerMs = options.clockRate / 1000;
    const depthMs = options.depthMs ?? 60;
    this.depthTicks = Math.round(depthMs * ticksPerMs);
    this.frameTicks = Math.round(20 * ticksPerMs);
    this.maxDepthTicks = Math.round((options.maxDepthMs ?? depthMs + 100) * ticksPerMs);
    this.resyncTicks = Math.round((options.resyncMs ?? 1000) * ticksPerMs);
  }

  /** Whether a packet has arrived yet (before it, nothing is due). */
  get started(): boolean {
    return this.playout !== undefined;
  }

  /** Buffered audio ahead of the playout point, in ticks. */
  get bufferedTicks(): number {
    if (this.playout === undefined || this.packets.length === 0) return 0;
    return this.packets[this.packets.length - 1].at - this.playout;
  }

  push(packet: JitterBufferPacket): PushResult {
    this.stats.received++;
    if (this.playout === undefined || packet.ssrc !== this.ssrc) return this.restart(packet);
    const at = this.unwrap(packet.timestamp);
    if (Math.abs(at - this.playout) > this.resyncTicks) return this.restart(packet);
    this.countLoss(packet.sequenceNumber);
    if (at < this.playout) {
      this.stats.late++;
      jitterLateFrames.inc();
      return 'late';
    }
    // Insert in timestamp order; most packets go at the end.
    let i = this.packets.length;
    while (i > 0 && this.packets[i - 1].at > at) i--;
    if (i > 0 && this.packets[i - 1].at === at) {
      this.stats.duplicate++;
      return 'duplicate';
    }
    this.packets.splice(i, 0, { at, payload: packet.payload });
    return 'accepted';
  }

  /**
   * The packet due at the playout point, removed from the buffer, or undefined for a gap.
   * The caller then calls `advance` with the duration it played (the packet's, or one frame).
   */
  take(): Uint8Array | undefined {
    if (this.playout === undefined) return undefined;
    const newest = this.packets[this.packets.length - 1]?.at;
    if (newest !== undefined && newest - this.playout > this.maxDepthTicks) {
      // Cap the latency: skip the oldest packets, back down to `depth` behind the newest.
      const target = newest - this.depthTicks;
      while (this.packets.length > 0 && this.packets[0].at < target) {
        this.packets.shift();
        this.stats.skipped++;
      }
      this.playout = target;
    }
    // Anything older than the playout point can no longer be played.
    while (this.packets.length > 0 && this.packets[0].at < this.playout) {
      this.packets.shift();
      this.stats.late++;
      jitterLateFrames.inc();
    }
    // Due: a packet that starts within the current frame. Playing it re-aligns the playout point
    // to its timestamp (after a pause in sending, a talkspurt need not start on our 20 ms grid).
    if (this.packets.length > 0 && this.packets[0].at < this.playout + this.frameTicks) {
      const packet = this.packets.shift()!;
      this.playout = packet.at;
      this.stats.played++;
      return packet.payload;
    }
    return undefined;
  }

  /** Moves the playout point on by `ticks`: what was just played. */
  advance(ticks: number): void {
    if (this.playout !== undefined) this.playout += ticks;
  }

  /**
   * Nothing was due and the caller played `ticks` of silence. With later packets waiting, the
   * due one is lost: move on. With none, the far end is late or silent (a sender clock a little
   * slower than ours, a pause in sending): hold the playout point, so the next packet plays when
   * it comes instead of arriving late; the latency cap trims the delay this adds.
   */
  conceal(ticks: number): void {
    if (this.playout === undefined) return;
    if (this.packets.length > 0) {
      this.playout += ticks;
      this.stats.concealed++;
    } else {
      this.stats.underruns++;
      jitterUnderruns.inc();
    }
  }

  private restart(packet: JitterBufferPacket): PushResult {
    const first = this.playout === undefined;
    if (!first) this.stats.resyncs++;
    this.ssrc = packet.ssrc;
    this.lastRaw = packet.timestamp;
    this.lastExtended = packet.timestamp;
    this.lastSequence = packet.sequenceNumber;
    this.packets = [{ at: packet.timestamp, payload: packet.payload }];
    this.playout = packet.timestamp - this.depthTicks;
    return first ? 'accepted' : 'resync';
  }

  private unwrap(timestamp: number): number {
    let diff = (timestamp - this.lastRaw) % WRAP;
    if (diff >= HALF) diff -= WRAP;
    else if (diff < -HALF) diff += WRAP;
    const extended = this.lastExtended + diff;
    if (diff > 0) {
      this.lastRaw = timestamp;
      this.lastExtended = extended;
    }
    return extended;
  }

  private countLoss(sequenceNumber: number): void {
    if (this.lastSequence === undefined) {
      this.lastSequence = sequenceNumber;
      return;
    }
    const gap = (sequenceNumber - this.lastSequence + 0x10000) % 0x10000;
    // Forward within half the space: the newest so far; anything else is a reordered packet.
    if (gap > 0 && gap < 0x8000) {
      this.stats.lost += gap - 1;
      this.lastSequence = sequenceNumber;
    } else if (gap !== 0) {
      // A reordered packet fills a gap counted as lost.
      this.stats.lost = Math.max(0, this.stats.lost - 1);
    }
  }
}
