/**
 * Cutting audio into the channel's 20 ms frames, whole or as it streams in, and joining
 * frames back into one signal.
 */
import { FRAME_SAMPLES, type PcmFrame } from '../media/channel.js';

/** Frames of `frameSamples` samples; the last one is padded with silence (an empty input gives none). */
export function sliceFrames(samples: Int16Array, frameSamples = FRAME_SAMPLES): PcmFrame[] {
  const frames: PcmFrame[] = [];
  for (let at = 0; at < samples.length; at += frameSamples) {
    const frame = new Int16Array(frameSamples);
    frame.set(samples.subarray(at, Math.min(at + frameSamples, samples.length)));
    frames.push(frame);
  }
  return frames;
}

/** One signal made of the frames, in order. */
export function joinFrames(frames: readonly Int16Array[]): Int16Array {
  const out = new Int16Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const frame of frames) {
    out.set(frame, at);
    at += frame.length;
  }
  return out;
}

/** Gathers samples arriving in pieces of any size and hands out whole frames. */
export class FrameAssembler {
  private pending = new Int16Array(0);

  constructor(private readonly frameSamples = FRAME_SAMPLES) {}

  /** Adds samples; returns the frames now complete. */
  push(samples: Int16Array): PcmFrame[] {
    const all = new Int16Array(this.pending.length + samples.length);
    all.set(this.pending);
    all.set(samples, this.pending.length);
    const whole = all.length - (all.length % this.frameSamples);
    this.pending = all.slice(whole);
    const frames: PcmFrame[] = [];
    for (let at = 0; at < whole; at += this.frameSamples) frames.push(all.slice(at, at + this.frameSamples));
    return frames;
  }

  /** The samples left over, padded into one last frame (none when nothing is left). */
  flush(): PcmFrame[] {
    const rest = this.pending;
    this.pending = new Int16Array(0);
    return rest.length > 0 ? sliceFrames(rest, this.frameSamples) : [];
  }
}
