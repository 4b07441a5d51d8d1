// The caller's voice in speech tests: sentences spoken by Festival's text2wave (the
// kal_diphone voice, 16 kHz) at test time, trimmed to the speech itself, with helpers to
// put silence or noise around them.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { readWav, toMono } from '../../src/mediaEdge/audio/wav.js';
import { trimEdgeSilence } from '../../src/mediaEdge/speech/speakableText.js';
import { whiteNoise } from './loopbackChannel.js';

const run = promisify(execFile);
const cache = new Map<string, Promise<Int16Array>>();

/** `text` spoken by text2wave as 16 kHz samples, without the silence around it. */
export function spoken(text: string): Promise<Int16Array> {
  let audio = cache.get(text);
  if (!audio) {
    audio = (async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'spoken-'));
      try {
        const input = path.join(dir, 'speech.txt');
        const file = path.join(dir, 'speech.wav');
        writeFileSync(input, text);
        await run('text2wave', ['-F', String(SAMPLE_RATE), '-eval', '(voice_kal_diphone)', '-o', file, input], { timeout: 20_000 });
        return toMono(readWav(readFileSync(file)));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    })();
    cache.set(text, audio);
  }
  return audio.then((samples) => trimEdgeSilence(samples, 0, 0).slice());
}

/** `samples` with `beforeMs` of silence before and `afterMs` after, on a line with white noise at `noiseDbfs` (none when undefined). */
export function onLine(samples: Int16Array, beforeMs: number, afterMs: number, noiseDbfs?: number): Int16Array {
  const before = Math.round((beforeMs * SAMPLE_RATE) / 1000);
  const out = new Int16Array(before + samples.length + Math.round((afterMs * SAMPLE_RATE) / 1000));
  out.set(samples, before);
  if (noiseDbfs !== undefined) {
    const noise = whiteNoise(out.length, noiseDbfs, 7);
    for (let i = 0; i < out.length; i++) out[i] = Math.max(-32768, Math.min(32767, out[i] + noise[i]));
  }
  return out;
}
