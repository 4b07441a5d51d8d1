// A caller's answers as a browser sends them: festival-made speech (spokenAudio.ts) at 48 kHz
// in 20 ms Opus payloads, encoded ahead so that a caller spends no CPU encoding while it talks
// (test/e2e/converseCall, chaos/browserCaller.ts, bench/converse.ts, bench/voiceTurns.ts).
import OpusScript from 'opusscript';
import { resample } from '../../src/mediaEdge/audio/resample.js';
import { spoken } from './spokenAudio.js';

/** Samples in 20 ms at 48 kHz. */
const FRAME_SAMPLES_48K = 960;

/** 48 kHz mono audio as 20 ms Opus payloads, the last one padded with silence. */
export function opusFrames(pcm48k: Int16Array): Buffer[] {
  const encoder = new OpusScript(48_000, 1, OpusScript.Application.VOIP);
  try {
    const frames: Buffer[] = [];
    for (let at = 0; at < pcm48k.length; at += FRAME_SAMPLES_48K) {
      const frame = new Int16Array(FRAME_SAMPLES_48K);
      frame.set(pcm48k.subarray(at, Math.min(at + FRAME_SAMPLES_48K, pcm48k.length)));
      frames.push(Buffer.from(encoder.encode(Buffer.from(frame.buffer), FRAME_SAMPLES_48K)));
    }
    return frames;
  } finally {
    encoder.delete();
  }
}

/** One 20 ms Opus payload of silence: what a caller sends between its answers. */
export const opusSilence = (): Buffer => opusFrames(new Int16Array(FRAME_SAMPLES_48K))[0];

/** `text` spoken, as Opus payloads; `line` changes the 16 kHz speech first (a phone line's band). */
export async function spokenOpus(text: string, line: (pcm16k: Int16Array) => Int16Array = (pcm) => pcm): Promise<Buffer[]> {
  return opusFrames(resample(line(await spoken(text)), 16_000, 48_000));
}
