/**
 * espeak-ng as the agent voice (TTS_PROVIDER=espeak): one process per line, its WAV read
 * from stdout as it is written (22.05 kHz, resampled to 16 kHz on the fly). Starts fast
 * (about 30 ms), but pocketsphinx recognises its speech badly, so it is not the default.
 */
import { spawn } from 'node:child_process';
import { SAMPLE_RATE, type PcmFrame } from '../media/channel.js';
import { FrameAssembler } from '../audio/frames.js';
import { Resampler } from '../audio/resample.js';
import { int16FromLittleEndian, readWavLayout, type WavLayout } from '../audio/wav.js';
import { stopProcess } from './engineProcess.js';
import type { SpeechSynthesizer, SynthesisOptions } from './interfaces.js';
import { hasWords, plainText } from './speakableText.js';

export interface EspeakOptions {
  binary?: string;
  /** An espeak-ng voice (default en-us). */
  voice?: string;
  /** Words per minute (espeak-ng's default is 175). */
  wordsPerMinute?: number;
}

export class EspeakSynthesizer implements SpeechSynthesizer {
  readonly name = 'espeak';
  private readonly binary: string;
  private readonly args: string[];

  constructor(options: EspeakOptions = {}) {
    this.binary = options.binary ?? 'espeak-ng';
    this.args = ['--stdout', '-v', options.voice ?? 'en-us', '-s', String(options.wordsPerMinute ?? 165)];
  }

  async warmUp(): Promise<void> {
    // Nothing stays loaded between lines; one throwaway line brings the voice data into the page cache.
    for await (const frame of this.synthesize('ready')) void frame;
  }

  async *synthesize(text: string, options: SynthesisOptions = {}): AsyncIterable<PcmFrame> {
    const line = plainText(text);
    if (!hasWords(line) || options.signal?.aborted) return;
    // spawns: espeak-ng
    const child = spawn(this.binary, this.args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const stopped = () => void stopProcess(child, 200);
    options.signal?.addEventListener('abort', stopped, { once: true });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => (stderr = (stderr + d).slice(-2000)));
    child.stdin.on('error', () => undefined);
    child.stdin.end(line);
    const exited = new Promise<number | null>((resolve, reject) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', reject);
    });
    exited.catch(() => undefined); // awaited below
    try {
      let header = Buffer.alloc(0);
      let layout: WavLayout | undefined;
      let resampler: Resampler | undefined;
      let odd: Buffer = Buffer.alloc(0);
      const frames = new FrameAssembler();
      for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
        if (options.signal?.aborted) return;
        let bytes = chunk;
        if (!layout) {
          header = Buffer.concat([header, chunk]);
          layout = readWavLayout(header);
          if (!layout) continue;
          if (layout.channels !== 1) throw new Error(`espeak-ng wrote ${layout.channels} channels`);
          if (layout.sampleRate !== SAMPLE_RATE) resampler = new Resampler(layout.sampleRate, SAMPLE_RATE);
          bytes = header.subarray(layout.dataOffset);
        }
        const joined = odd.length ? Buffer.concat([odd, bytes]) : bytes;
        odd = joined.length % 2 ? Buffer.from(joined.subarray(joined.length - 1)) : Buffer.alloc(0);
        const samples = int16FromLittleEndian(joined.subarray(0, joined.length - odd.length));
        for (const frame of frames.push(resampler ? resampler.push(samples) : samples)) yield frame;
      }
      if (options.signal?.aborted) return;
      const code = await exited;
      if (code !== 0) throw new Error(`espeak-ng failed (code ${code}): ${stderr.trim() || 'no output'}`);
      if (resampler) for (const frame of frames.push(resampler.flush())) yield frame;
      for (const frame of frames.flush()) yield frame;
    } finally {
      options.signal?.removeEventListener('abort', stopped);
      await stopProcess(child, 200);
    }
  }

  async close(): Promise<void> {
    // Each line's process ends with the line.
  }
}
