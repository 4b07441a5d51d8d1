// The callers' voices of bench/speechAccuracy.ts: every offline synthesiser on this machine
// speaking the labelled set at two speeds, cached as 16 kHz WAV files in a git-ignored
// folder (made again when missing), and each utterance in two bands: wideband as spoken,
// and as a telephone line delivers it (test/support/telephoneBand.ts).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { joinFrames } from '../../src/mediaEdge/audio/frames.js';
import { readWav, toMono, writeWav } from '../../src/mediaEdge/audio/wav.js';
import { findExecutable } from '../../src/mediaEdge/speech/engineProcess.js';
import { EspeakSynthesizer } from '../../src/mediaEdge/speech/espeak.js';
import type { SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { trimEdgeSilence } from '../../src/mediaEdge/speech/speakableText.js';
import { onLine } from '../../test/support/spokenAudio.js';
import { overTelephone } from '../../test/support/telephoneBand.js';

const run = promisify(execFile);

export const SPEEDS = ['normal', 'fast'] as const;
export type Speed = (typeof SPEEDS)[number];
export const BANDS = ['wideband', 'telephone'] as const;
export type Band = (typeof BANDS)[number];

/** Silence around each utterance: the endpointer's pre-roll before the speech, its hangover after (the session hears both). */
const LEAD_MS = 200;
const TRAIL_MS = 400;

export const AUDIO_CACHE_DIR = fileURLToPath(new URL('./.audio/', import.meta.url));
/** Where engineer P's Piper synthesiser lives; the bench uses it when the file exists. */
const PIPER_MODULE = fileURLToPath(new URL('../../src/mediaEdge/speech/piper.ts', import.meta.url));
const PIPER_AT_LENGTH_SCALE = fileURLToPath(new URL('./piperAtLengthScale.py', import.meta.url));
const PIPER_FAST_LENGTH_SCALE = 0.8;
const SPEECH_PYTHON = fileURLToPath(new URL('../../.tools/speech-venv/bin/python', import.meta.url));

export interface BenchVoice {
  name: string;
  /** What the speeds mean for this voice (for the report). */
  speeds: Record<Speed, string>;
  /** 16 kHz samples of `text` at `speed`. */
  render(text: string, speed: Speed): Promise<Int16Array>;
  close(): Promise<void>;
}

/** 16 kHz samples of `text` in Festival's kal_diphone voice (text2wave), its durations stretched by `stretch`. */
export async function festivalLine(text: string, stretch: number, timeoutMs = 30_000): Promise<Int16Array> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-voice-'));
  try {
    const input = path.join(dir, 'line.txt');
    const file = path.join(dir, 'line.wav');
    writeFileSync(input, text);
    const args = ['-F', String(SAMPLE_RATE), '-eval', '(voice_kal_diphone)', '-eval', `(Parameter.set 'Duration_Stretch ${stretch})`, '-o', file, input];
    await run('text2wave', args, { timeout: timeoutMs });
    return toMono(readWav(readFileSync(file)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Festival's kal_diphone voice through text2wave (what the tests' callers speak), faster by stretching durations by 0.8. */
function festivalVoice(): BenchVoice {
  const stretch: Record<Speed, number> = { normal: 1, fast: 0.8 };
  return {
    name: 'festival',
    speeds: { normal: 'kal_diphone, Duration_Stretch 1', fast: 'Duration_Stretch 0.8 (25 % faster)' },
    render: (text, speed) => festivalLine(text, stretch[speed]),
    async close() {},
  };
}

/** All a synthesiser says for `text`, as one buffer. */
export async function synthesizeAll(synthesizer: SpeechSynthesizer, text: string): Promise<Int16Array> {
  const frames: Int16Array[] = [];
  for await (const frame of synthesizer.synthesize(text)) frames.push(frame);
  return joinFrames(frames);
}

/** espeak-ng through the edge's own synthesiser (resampled to 16 kHz), at its 165 and at 210 words a minute. */
function espeakVoice(): BenchVoice {
  const engines: Record<Speed, EspeakSynthesizer> = { normal: new EspeakSynthesizer({ wordsPerMinute: 165 }), fast: new EspeakSynthesizer({ wordsPerMinute: 210 }) };
  return {
    name: 'espeak-ng',
    speeds: { normal: 'en-us, 165 words/min', fast: '210 words/min' },
    render: (text, speed) => synthesizeAll(engines[speed], text),
    async close() {},
  };
}

/** What the bench needs of a Piper module (checked when it is loaded, since the file may not exist yet). */
type SynthesizerClass = new (options: { python: string; script?: string }) => SpeechSynthesizer;

/**
 * Piper through engineer P's synthesiser (src/mediaEdge/speech/piper.ts), when it exists. Its
 * worker takes no speed, so the fast voice runs the worker through piperAtLengthScale.py
 * (Piper's length scale 0.8), which the environment of the process it starts tells.
 */
async function piperVoice(): Promise<BenchVoice | string> {
  if (!existsSync(PIPER_MODULE)) return 'src/mediaEdge/speech/piper.ts does not exist (yet)';
  const loaded = (await import(pathToFileURL(PIPER_MODULE).href)) as Record<string, unknown>;
  const Synthesizer = loaded.PiperSynthesizer as SynthesizerClass | undefined;
  if (typeof Synthesizer !== 'function') return 'src/mediaEdge/speech/piper.ts exports no PiperSynthesizer';
  if (!existsSync(SPEECH_PYTHON)) return `the speech venv is missing (${SPEECH_PYTHON}; npm test installs it)`;
  // Started on the first utterance not in the cache: a run from cached audio starts no worker.
  let started: Promise<Record<Speed, SpeechSynthesizer>> | undefined;
  const start = async () => {
    const engines: Record<Speed, SpeechSynthesizer> = {
      normal: new Synthesizer({ python: SPEECH_PYTHON }),
      fast: new Synthesizer({ python: SPEECH_PYTHON, script: PIPER_AT_LENGTH_SCALE }),
    };
    try {
      await engines.normal.warmUp();
      process.env.BENCH_PIPER_LENGTH_SCALE = String(PIPER_FAST_LENGTH_SCALE);
      try {
        await engines.fast.warmUp();
      } finally {
        delete process.env.BENCH_PIPER_LENGTH_SCALE;
      }
    } catch (err) {
      await Promise.all([engines.normal.close(), engines.fast.close()]);
      throw new Error(`Piper did not start: ${(err as Error).message}`);
    }
    return engines;
  };
  return {
    name: 'piper',
    speeds: { normal: 'en_US-joe-medium, length scale 1', fast: `length scale ${PIPER_FAST_LENGTH_SCALE}` },
    render: async (text, speed) => synthesizeAll((await (started ??= start()))[speed], text),
    close: async () => {
      const engines = await started?.catch(() => undefined);
      if (engines) await Promise.all([engines.normal.close(), engines.fast.close()]);
    },
  };
}

export const VOICE_NAMES = ['festival', 'espeak-ng', 'piper'] as const;

/** The voices asked for that this machine has; the others with the reason they are missing. */
export async function openVoices(names: readonly string[]): Promise<{ voices: BenchVoice[]; missing: Record<string, string> }> {
  const voices: BenchVoice[] = [];
  const missing: Record<string, string> = {};
  for (const name of names) {
    if (name === 'festival') {
      if (findExecutable('text2wave')) voices.push(festivalVoice());
      else missing[name] = 'text2wave is not installed (Debian: festival festvox-kallpc16k)';
    } else if (name === 'espeak-ng') {
      if (findExecutable('espeak-ng')) voices.push(espeakVoice());
      else missing[name] = 'espeak-ng is not installed';
    } else if (name === 'piper') {
      const piper = await piperVoice().catch((err: Error) => `Piper could not be loaded: ${err.message}`);
      if (typeof piper === 'string') missing[name] = piper;
      else voices.push(piper);
    } else {
      missing[name] = `unknown voice (known: ${VOICE_NAMES.join(', ')})`;
    }
  }
  return { voices, missing };
}

/** An utterance's audio, read from the cache or rendered and cached, with the silence around it as an endpointer delivers it. */
export async function utteranceAudio(voice: BenchVoice, speed: Speed, text: string): Promise<Int16Array> {
  const key = createHash('sha256').update(JSON.stringify([voice.name, voice.speeds[speed], text])).digest('hex').slice(0, 16);
  const file = path.join(AUDIO_CACHE_DIR, voice.name, `${speed}-${key}.wav`);
  let speech: Int16Array;
  if (existsSync(file)) {
    speech = toMono(readWav(readFileSync(file)));
  } else {
    speech = trimEdgeSilence(await voice.render(text, speed), 0, 0).slice();
    if (speech.length === 0) throw new Error(`${voice.name} (${speed}) made no audio for "${text}"`);
    mkdirSync(path.dirname(file), { recursive: true });
    // Written aside and renamed, so a bench running beside this one never reads half a file.
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, writeWav({ sampleRate: SAMPLE_RATE, channels: 1, samples: speech }));
    renameSync(partial, file);
  }
  return onLine(speech, LEAD_MS, TRAIL_MS);
}

/** The audio in a band: as spoken (16 kHz), or band-limited through 8 kHz μ-law and back. */
export function inBand(samples: Int16Array, band: Band): Int16Array {
  return band === 'wideband' ? samples : overTelephone(samples);
}
