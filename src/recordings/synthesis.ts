/**
 * Offline speech for the recordings of simulated calls: text in, 16 kHz mono PCM out.
 * The default runs festival's `text2wave` (voice kal_diphone); anything with the same
 * signature can be injected instead (tests, or the media edge's synthesiser).
 */
import { spawn } from 'node:child_process';
import { decodeWav } from './wav.js';

export const SYNTHESIS_SAMPLE_RATE = 16_000;

/** Speaks `text`: 16 kHz mono signed 16-bit samples. */
export type SpeechSynthesis = (text: string) => Promise<Int16Array>;

/** The synthesiser is not installed here (text2wave not found). */
export class SynthesisUnavailableError extends Error {
  constructor(detail: string) {
    super(`speech synthesis is not available: ${detail}`);
    this.name = 'SynthesisUnavailableError';
  }
}

export function text2waveSynthesis(opts: { command?: string; voice?: string; timeoutMs?: number } = {}): SpeechSynthesis {
  const command = opts.command ?? 'text2wave';
  const voice = opts.voice ?? 'kal_diphone';
  const timeoutMs = opts.timeoutMs ?? 30_000;
  return (text) =>
    new Promise<Int16Array>((resolve, reject) => {
      // -o - writes the WAV to stdout (its header then carries no data size; decodeWav reads to the end).
      const child = spawn(command, ['-F', String(SYNTHESIS_SAMPLE_RATE), '-eval', `(voice_${voice})`, '-o', '-'], { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      let err = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.once('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(e.code === 'ENOENT' ? new SynthesisUnavailableError(`${command} not found (install festival)`) : e);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        if (code !== 0) return reject(new Error(`${command} exited with ${code ?? signal}: ${err.trim().slice(0, 300)}`));
        try {
          const wav = decodeWav(Buffer.concat(out));
          if (wav.sampleRate !== SYNTHESIS_SAMPLE_RATE || wav.channels !== 1) throw new Error(`${command} answered ${wav.sampleRate} Hz, ${wav.channels} channels`);
          resolve(wav.samples);
        } catch (e) {
          reject(e as Error);
        }
      });
      // Festival reads one line per utterance; the transcript's text is plain words.
      child.stdin.on('error', () => undefined);
      child.stdin.end(`${text.replace(/\s+/g, ' ').trim()}\n`);
    });
}
