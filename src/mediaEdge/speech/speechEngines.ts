/**
 * Choosing the speech engines from configuration, checked at start-up: TTS_PROVIDER
 * (`festival`, the default, or `espeak`) and STT_PROVIDER (`pocketsphinx`, the default).
 * A bad value, or an engine whose program or model is not installed, stops start-up with
 * an error naming the variable.
 */
import { existsSync } from 'node:fs';
import { EspeakSynthesizer } from './espeak.js';
import { FestivalSynthesizer } from './festival.js';
import { findExecutable } from './engineProcess.js';
import type { SpeechRecognizer, SpeechSynthesizer } from './interfaces.js';
import { POCKETSPHINX_MODEL_DIR, PocketsphinxRecognizer, pocketsphinxModelFiles } from './pocketsphinx.js';

export const TTS_PROVIDERS = ['festival', 'espeak'] as const;
export const STT_PROVIDERS = ['pocketsphinx'] as const;
export type TtsProvider = (typeof TTS_PROVIDERS)[number];
export type SttProvider = (typeof STT_PROVIDERS)[number];

export interface SpeechEnginesConfig {
  TTS_PROVIDER?: string;
  STT_PROVIDER?: string;
}

/** A configuration or installation problem; the message starts with the variable. */
export class SpeechConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = 'SpeechConfigError';
  }
}

export interface SpeechEngines {
  synthesizer: SpeechSynthesizer;
  recognizer: SpeechRecognizer;
  /** Loads voices and dictionaries now rather than on the first call. */
  warmUp(): Promise<void>;
  /** Stops every engine process. */
  close(): Promise<void>;
}

function choose<T extends string>(variable: string, value: string | undefined, allowed: readonly T[]): T {
  const chosen = (value ?? '').trim() || allowed[0];
  if (!(allowed as readonly string[]).includes(chosen)) {
    throw new SpeechConfigError(variable, `${variable} must be one of ${allowed.join(', ')} (got "${value}")`);
  }
  return chosen as T;
}

/** How programs are found: on PATH (tests pass their own). */
type ProgramLookup = (name: string) => string | undefined;

function requireProgram(lookUp: ProgramLookup, variable: string, provider: string, program: string, packages: string): string {
  const found = lookUp(program);
  if (!found) throw new SpeechConfigError(variable, `${variable}=${provider} needs the program ${program}, which is not installed (Debian: apt-get install ${packages})`);
  return found;
}

function requireFile(variable: string, provider: string, file: string, packages: string): void {
  if (!existsSync(file)) throw new SpeechConfigError(variable, `${variable}=${provider} needs ${file}, which is missing (Debian: apt-get install ${packages})`);
}

/** The configured synthesizer and recognizer; throws a SpeechConfigError when the configuration or the installation is wrong. */
export function createSpeechEngines(config: SpeechEnginesConfig = {}, lookUp: ProgramLookup = findExecutable): SpeechEngines {
  const tts = choose<TtsProvider>('TTS_PROVIDER', config.TTS_PROVIDER, TTS_PROVIDERS);
  const stt = choose<SttProvider>('STT_PROVIDER', config.STT_PROVIDER, STT_PROVIDERS);

  // Everything is checked before anything is started.
  const ttsBinary =
    tts === 'festival'
      ? requireProgram(lookUp, 'TTS_PROVIDER', tts, 'festival', 'festival festvox-kallpc16k')
      : requireProgram(lookUp, 'TTS_PROVIDER', tts, 'espeak-ng', 'espeak-ng');
  const sttBinary = requireProgram(lookUp, 'STT_PROVIDER', stt, 'pocketsphinx_continuous', 'pocketsphinx pocketsphinx-en-us');
  for (const file of Object.values(pocketsphinxModelFiles(POCKETSPHINX_MODEL_DIR))) requireFile('STT_PROVIDER', stt, file, 'pocketsphinx-en-us');

  const synthesizer: SpeechSynthesizer = tts === 'festival' ? new FestivalSynthesizer({ binary: ttsBinary }) : new EspeakSynthesizer({ binary: ttsBinary });
  const recognizer = new PocketsphinxRecognizer({ binary: sttBinary, modelDir: POCKETSPHINX_MODEL_DIR });

  return {
    synthesizer,
    recognizer,
    async warmUp() {
      try {
        await synthesizer.warmUp();
      } catch (err) {
        throw new SpeechConfigError('TTS_PROVIDER', `TTS_PROVIDER=${tts} does not work: ${(err as Error).message}`);
      }
      await recognizer.warmUp();
    },
    async close() {
      await Promise.all([synthesizer.close(), recognizer.close()]);
    },
  };
}
