/**
 * Choosing the speech engines from configuration, checked at start-up: TTS_PROVIDER
 * (`festival`, the default, `espeak`, or `piper`: settings in piperConfig.ts) and
 * STT_PROVIDER (`pocketsphinx`, the default),
 * and the engines' limits (FESTIVAL_MAX_QUEUED_PER_CALL, POCKETSPHINX_MAX_PROCESSES,
 * POCKETSPHINX_MAX_WAIT_MS, POCKETSPHINX_WARM_DECODERS). A bad value, or an engine whose program or model is not
 * installed, stops start-up with an error naming the variable. The cloud engines
 * (TTS_PROVIDER=elevenlabs, STT_PROVIDER=deepgram; their settings in cloudSpeechConfig.ts)
 * need their key and the default offline engine, which takes over a call when they fail;
 * so does Festival behind Piper. Which offline recogniser hears an answer is chosen per
 * audio band and per expect (STT_TELEPHONE_ENGINES, STT_WIDEBAND_ENGINES: recognizerChoice.ts).
 */
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { EspeakSynthesizer } from './espeak.js';
import { FESTIVAL_DEFAULT_MAX_QUEUED_PER_CALL, FestivalSynthesizer } from './festival.js';
import { findExecutable } from './engineProcess.js';
import { CLOUD_STT_PROVIDERS, CLOUD_TTS_PROVIDERS, createCloudSpeechEngines, type CloudSpeechConfig } from './cloudSpeechConfig.js';
import { FallbackRecognizer, FallbackSynthesizer, type FailoverListener } from './fallbackEngines.js';
import type { SpeechRecognizer, SpeechSynthesizer } from './interfaces.js';
import type { AudioBand } from '../media/channel.js';
import { recognizerForBand, recognizerTable, tableUses, type RecognizerChoiceConfig, type RecognizerTable } from './recognizerChoice.js';
import { PiperSynthesizer, type PiperOptions } from './piper.js';
import { SynthesisQueueFullError } from './sentenceRendering.js';
import { piperSettings } from './piperConfig.js';
import { readSpeechSettings, wholeNumber, type SettingFailure } from './speechSettings.js';
import { WhisperRecognizer } from './whisper.js';
import { whisperSettings } from './whisperConfig.js';
import {
  POCKETSPHINX_DEFAULT_MAX_PROCESSES,
  POCKETSPHINX_DEFAULT_MAX_WAIT_MS,
  POCKETSPHINX_MODEL_DIR,
  PocketsphinxRecognizer,
  pocketsphinxModelFiles,
} from './pocketsphinx.js';
import { POCKETSPHINX_DEFAULT_WARM_DECODERS } from './pocketsphinxDecoders.js';

export const TTS_PROVIDERS = ['festival', 'espeak', 'piper'] as const;
export const STT_PROVIDERS = ['pocketsphinx', 'whisper'] as const;
export type TtsProvider = (typeof TTS_PROVIDERS)[number];
export type SttProvider = (typeof STT_PROVIDERS)[number];

/** The variables read (process.env fits). */
export interface SpeechEnginesConfig extends CloudSpeechConfig, RecognizerChoiceConfig {
  TTS_PROVIDER?: string;
  STT_PROVIDER?: string;
  FESTIVAL_MAX_QUEUED_PER_CALL?: string;
  POCKETSPHINX_MAX_PROCESSES?: string;
  POCKETSPHINX_MAX_WAIT_MS?: string;
  POCKETSPHINX_WARM_DECODERS?: string;
  /** The python3 that runs pocketsphinx's warm decoders (default: python3 on PATH). */
  PYTHON3?: string;
  WHISPER_WORKERS?: string;
  WHISPER_MAX_QUEUED?: string;
  WHISPER_THREADS?: string;
  WHISPER_PROMPT?: string;
  PIPER_THREADS?: string;
  PIPER_MAX_QUEUED_PER_CALL?: string;
  PIPER_RENDER_TIMEOUT_MS?: string;
  PIPER_VOICE_MODEL?: string;
}


/** The engines' limits; empty counts as unset. */
const limitsSchema = z.object({
  FESTIVAL_MAX_QUEUED_PER_CALL: wholeNumber(1, 1000).default(FESTIVAL_DEFAULT_MAX_QUEUED_PER_CALL),
  POCKETSPHINX_MAX_PROCESSES: wholeNumber(1, 1000).default(POCKETSPHINX_DEFAULT_MAX_PROCESSES),
  POCKETSPHINX_MAX_WAIT_MS: wholeNumber(0, 60_000).default(POCKETSPHINX_DEFAULT_MAX_WAIT_MS),
  POCKETSPHINX_WARM_DECODERS: wholeNumber(0, 1000).default(POCKETSPHINX_DEFAULT_WARM_DECODERS),
});

export type SpeechLimits = z.infer<typeof limitsSchema>;

/** The limits from configuration; a SpeechConfigError names the first bad one. */
export function speechLimits(config: SpeechEnginesConfig): SpeechLimits {
  return readSpeechSettings(limitsSchema, { ...config }, stopStartUp);
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

/** Stops start-up with a SpeechConfigError naming the variable. */
export const stopStartUp: SettingFailure = (variable, message) => {
  throw new SpeechConfigError(variable, message);
};

export interface SpeechEngines {
  synthesizer: SpeechSynthesizer;
  recognizer: SpeechRecognizer;
  /**
   * The engines of one call. A cloud engine gets the offline one behind it, and Piper gets
   * Festival: one retry of a failed utterance or line (Piper's is its own, per sentence),
   * then the offline engine for the rest of the call, which `onFailover` reports
   * (docs/speech.md). The other offline engines are shared as they are. The recogniser of a
   * call whose audio is on the telephone band (`band`, default wideband) is the band's
   * choice per expect (`recognizers`).
   */
  forCall(onFailover: FailoverListener, options?: { band?: AudioBand }): { synthesizer: SpeechSynthesizer; recognizer: SpeechRecognizer };
  /** Which offline engine hears each expect, per band. */
  readonly recognizers: RecognizerTable;
  /** Loads voices and dictionaries now rather than on the first call. */
  warmUp(): Promise<void>;
  /** Stops every engine process. */
  close(): Promise<void>;
}

function choose<T extends string>(variable: string, value: string | undefined, allowed: readonly T[], cloud: readonly string[] = []): T {
  const chosen = (value ?? '').trim() || allowed[0];
  if (!(allowed as readonly string[]).includes(chosen)) {
    const orCloud = cloud.length > 0 ? `, or the cloud engine ${cloud.join(', ')}` : '';
    throw new SpeechConfigError(variable, `${variable} must be one of ${allowed.join(', ')} (got "${value}")${orCloud}`);
  }
  return chosen as T;
}

/** The cloud engine `value` names, if it names one. */
function cloudChoice<T extends string>(value: string | undefined, cloud: readonly T[]): T | undefined {
  const chosen = (value ?? '').trim();
  return (cloud as readonly string[]).includes(chosen) ? (chosen as T) : undefined;
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

/** What tests may change of the engines that configuration does not reach (a stand-in worker script). */
export interface SpeechEngineOverrides {
  piper?: Partial<PiperOptions>;
}

/** The configured synthesizer and recognizer; throws a SpeechConfigError when the configuration or the installation is wrong. */
export function createSpeechEngines(config: SpeechEnginesConfig = {}, lookUp: ProgramLookup = findExecutable, overrides: SpeechEngineOverrides = {}): SpeechEngines {
  const ttsCloud = cloudChoice(config.TTS_PROVIDER, CLOUD_TTS_PROVIDERS);
  const sttCloud = cloudChoice(config.STT_PROVIDER, CLOUD_STT_PROVIDERS);
  // Behind a cloud engine stands the default offline one, which takes over when it fails.
  const tts = ttsCloud ? TTS_PROVIDERS[0] : choose<TtsProvider>('TTS_PROVIDER', config.TTS_PROVIDER, TTS_PROVIDERS, CLOUD_TTS_PROVIDERS);
  const stt = sttCloud ? STT_PROVIDERS[0] : choose<SttProvider>('STT_PROVIDER', config.STT_PROVIDER, STT_PROVIDERS, CLOUD_STT_PROVIDERS);
  const limits = speechLimits(config);
  const whisper = whisperSettings(config, stt === 'whisper', stopStartUp);
  const whisperInstalled = stt === 'whisper' || isWhisperInstalled(config);
  const table = recognizerTable(config, stt, whisperInstalled, stopStartUp);
  // Named in a table (not chosen by `auto`): it must be installed, and is loaded at start-up.
  const whisperNamed = (['STT_TELEPHONE_ENGINES', 'STT_WIDEBAND_ENGINES'] as const).find((v) => /whisper/i.test(config[v] ?? ''));
  if (whisperNamed && !whisperInstalled) whisperSettings(config, true, (_, message) => stopStartUp(whisperNamed, `${whisperNamed} names whisper: ${message}`));
  const piper = piperSettings(config, tts === 'piper', stopStartUp);
  const cloud = createCloudSpeechEngines(config, { tts: ttsCloud, stt: sttCloud }, stopStartUp);

  // Everything is checked before anything is started.
  // Piper runs in the speech venv, which piperSettings checked.
  const ttsBinary =
    tts === 'festival'
      ? requireProgram(lookUp, 'TTS_PROVIDER', ttsCloud ?? tts, 'festival', 'festival festvox-kallpc16k')
      : tts === 'espeak'
        ? requireProgram(lookUp, 'TTS_PROVIDER', tts, 'espeak-ng', 'espeak-ng')
        : undefined;
  // Festival takes over a call whose Piper fails, as it does for ElevenLabs.
  const festivalBehindPiper =
    tts === 'piper'
      ? new FestivalSynthesizer({ binary: requireProgram(lookUp, 'TTS_PROVIDER', tts, 'festival', 'festival festvox-kallpc16k'), maxQueuedPerCall: limits.FESTIVAL_MAX_QUEUED_PER_CALL })
      : undefined;
  const sttBinary = requireProgram(lookUp, 'STT_PROVIDER', sttCloud ?? stt, 'pocketsphinx_continuous', 'pocketsphinx pocketsphinx-en-us');
  for (const file of Object.values(pocketsphinxModelFiles(POCKETSPHINX_MODEL_DIR))) requireFile('STT_PROVIDER', sttCloud ?? stt, file, 'pocketsphinx-en-us');
  // Warm decoders for free speech run in python3 (the standard library only); 0 starts pocketsphinx_continuous per utterance.
  const python =
    limits.POCKETSPHINX_WARM_DECODERS > 0 && (stt === 'pocketsphinx' || tableUses(table, 'pocketsphinx'))
      ? requireProgram(lookUp, 'POCKETSPHINX_WARM_DECODERS', String(limits.POCKETSPHINX_WARM_DECODERS), (config.PYTHON3 ?? '').trim() || 'python3', 'python3')
      : undefined;
  const pocketsphinxOptions = {
    binary: sttBinary,
    modelDir: POCKETSPHINX_MODEL_DIR,
    maxProcesses: limits.POCKETSPHINX_MAX_PROCESSES,
    maxWaitMs: limits.POCKETSPHINX_MAX_WAIT_MS,
    python,
    warmDecoders: limits.POCKETSPHINX_WARM_DECODERS,
  };

  // Piper's worker is started on warm-up (or its first line), not here.
  const synthesizer: SpeechSynthesizer =
    tts === 'festival'
      ? new FestivalSynthesizer({ binary: ttsBinary, maxQueuedPerCall: limits.FESTIVAL_MAX_QUEUED_PER_CALL })
      : tts === 'espeak'
        ? new EspeakSynthesizer({ binary: ttsBinary })
        : new PiperSynthesizer({ ...piper, ...overrides.piper });
  // Whisper is started on warm-up (or its first utterance), not here.
  const recognizer: SpeechRecognizer =
    stt === 'whisper'
      ? new WhisperRecognizer(whisper)
      : new PocketsphinxRecognizer(pocketsphinxOptions);

  // The engines the table sends answers to besides STT_PROVIDER's; an auto-chosen Whisper starts with the first phone answer.
  const extraWhisper = stt !== 'whisper' && tableUses(table, 'whisper') ? new WhisperRecognizer(whisperSettings(config, true, stopStartUp)) : undefined;
  const extraPocketsphinx =
    stt !== 'pocketsphinx' && tableUses(table, 'pocketsphinx')
      ? new PocketsphinxRecognizer(pocketsphinxOptions)
      : undefined;
  const offline = {
    pocketsphinx: stt === 'pocketsphinx' ? recognizer : extraPocketsphinx,
    whisper: stt === 'whisper' ? recognizer : extraWhisper,
  };
  const offlineFor = (band: AudioBand) => recognizerForBand(table, band, stt, offline);

  return {
    synthesizer: cloud.synthesizer ?? synthesizer,
    recognizer: cloud.recognizer ?? recognizer,
    recognizers: table,
    forCall(onFailover, options = {}) {
      const heard = offlineFor(options.band ?? 'wideband');
      return {
        synthesizer: cloud.synthesizer
          ? new FallbackSynthesizer(cloud.synthesizer, synthesizer, onFailover)
          : festivalBehindPiper
            ? // Piper retries a failed sentence itself; a full queue is the call's, not Piper failing.
              new FallbackSynthesizer(synthesizer, festivalBehindPiper, onFailover, { retries: 0, isEngineFailure: (err) => !(err instanceof SynthesisQueueFullError) })
            : synthesizer,
        recognizer: cloud.recognizer ? new FallbackRecognizer(cloud.recognizer, heard, onFailover) : heard,
      };
    },
    async warmUp() {
      try {
        await synthesizer.warmUp();
      } catch (err) {
        throw new SpeechConfigError('TTS_PROVIDER', `TTS_PROVIDER=${tts} does not work: ${(err as Error).message}`);
      }
      try {
        await festivalBehindPiper?.warmUp();
      } catch (err) {
        throw new SpeechConfigError('TTS_PROVIDER', `TTS_PROVIDER=${tts} needs festival behind it, which does not work: ${(err as Error).message}`);
      }
      try {
        await recognizer.warmUp();
      } catch (err) {
        if (stt !== 'whisper') throw err;
        throw new SpeechConfigError('STT_PROVIDER', `STT_PROVIDER=whisper does not work: ${(err as Error).message}`);
      }
      await extraPocketsphinx?.warmUp();
      if (extraWhisper && whisperNamed) {
        try {
          await extraWhisper.warmUp();
        } catch (err) {
          throw new SpeechConfigError(whisperNamed, `${whisperNamed} names whisper, which does not work: ${(err as Error).message}`);
        }
      }
    },
    async close() {
      await Promise.all([synthesizer.close(), recognizer.close(), extraWhisper?.close(), extraPocketsphinx?.close(), festivalBehindPiper?.close(), cloud.synthesizer?.close(), cloud.recognizer?.close()]);
    },
  };
}

/** Whether the speech venv holds Whisper (the bootstrap installs it with STT_PROVIDER=whisper, and for the tests). */
function isWhisperInstalled(config: SpeechEnginesConfig): boolean {
  try {
    whisperSettings(config, true, stopStartUp);
    return true;
  } catch {
    return false;
  }
}
