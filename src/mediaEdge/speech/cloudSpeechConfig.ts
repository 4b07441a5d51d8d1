/**
 * The cloud engines' settings (docs/speech.md, "Deepgram" and "ElevenLabs"), checked at
 * start-up: a key is required only when its engine is chosen; every other setting has a
 * default, and a bad value of any of them stops start-up naming the variable (keys are
 * never echoed).
 */
import { DEEPGRAM_DEFAULT_BASE_URL, DEEPGRAM_DEFAULT_MODEL, DeepgramRecognizer } from './deepgram.js';
import {
  ELEVENLABS_DEFAULT_BASE_URL,
  ELEVENLABS_DEFAULT_MODEL_ID,
  ELEVENLABS_DEFAULT_VOICE_ID,
  ELEVENLABS_OUTPUT_FORMATS,
  ElevenLabsSynthesizer,
  type ElevenLabsOutputFormat,
} from './elevenlabs.js';
import { checkBaseUrl } from './vendorSocket.js';

export const CLOUD_TTS_PROVIDERS = ['elevenlabs'] as const;
export const CLOUD_STT_PROVIDERS = ['deepgram'] as const;
export type CloudTtsProvider = (typeof CLOUD_TTS_PROVIDERS)[number];
export type CloudSttProvider = (typeof CLOUD_STT_PROVIDERS)[number];

export const SPEECH_CLOUD_DEFAULT_CONNECT_TIMEOUT_MS = 2_000;
export const SPEECH_CLOUD_DEFAULT_ANSWER_TIMEOUT_MS = 2_000;

/** The variables read (process.env fits). */
export interface CloudSpeechConfig {
  DEEPGRAM_API_KEY?: string;
  DEEPGRAM_BASE_URL?: string;
  DEEPGRAM_MODEL?: string;
  ELEVENLABS_API_KEY?: string;
  ELEVENLABS_BASE_URL?: string;
  ELEVENLABS_VOICE_ID?: string;
  ELEVENLABS_MODEL_ID?: string;
  ELEVENLABS_OUTPUT_FORMAT?: string;
  SPEECH_CLOUD_CONNECT_TIMEOUT_MS?: string;
  SPEECH_CLOUD_ANSWER_TIMEOUT_MS?: string;
}

/** Reports a bad setting: (variable, message starting with it); never returns. */
export type ConfigFailure = (variable: string, message: string) => never;

export interface CloudSpeechEngines {
  recognizer?: DeepgramRecognizer;
  synthesizer?: ElevenLabsSynthesizer;
}

const NAME = /^[A-Za-z0-9._-]{1,100}$/;

/** Checks every cloud setting, and makes the chosen cloud engines. */
export function createCloudSpeechEngines(
  config: CloudSpeechConfig,
  chosen: { tts?: CloudTtsProvider; stt?: CloudSttProvider },
  fail: ConfigFailure,
): CloudSpeechEngines {
  const value = (name: keyof CloudSpeechConfig) => config[name]?.trim() || undefined;
  const url = (name: 'DEEPGRAM_BASE_URL' | 'ELEVENLABS_BASE_URL', fallback: string) => {
    const given = value(name);
    if (given === undefined) return fallback;
    const problem = checkBaseUrl(given);
    return problem ? fail(name, `${name} ${problem} (got "${given}")`) : given;
  };
  const name = (variable: 'DEEPGRAM_MODEL' | 'ELEVENLABS_VOICE_ID' | 'ELEVENLABS_MODEL_ID', fallback: string) => {
    const given = value(variable);
    if (given === undefined) return fallback;
    return NAME.test(given) ? given : fail(variable, `${variable} must be a name of letters, digits, '.', '_' or '-' (got "${given}")`);
  };
  const key = (variable: 'DEEPGRAM_API_KEY' | 'ELEVENLABS_API_KEY', provider: string, needed: boolean) => {
    const given = value(variable);
    if (given === undefined) return needed ? fail(variable, `${provider} needs ${variable}`) : undefined;
    // Named, never shown: it is a secret.
    return /^[\x21-\x7e]+$/.test(given) ? given : fail(variable, `${variable} must be printable characters without spaces`);
  };
  const millis = (variable: 'SPEECH_CLOUD_CONNECT_TIMEOUT_MS' | 'SPEECH_CLOUD_ANSWER_TIMEOUT_MS', fallback: number) => {
    const given = value(variable);
    if (given === undefined) return fallback;
    const n = Number(given);
    return /^\d+$/.test(given) && n >= 100 && n <= 60_000 ? n : fail(variable, `${variable} must be a whole number of milliseconds from 100 to 60000 (got "${given}")`);
  };

  const deepgram = {
    apiKey: key('DEEPGRAM_API_KEY', 'STT_PROVIDER=deepgram', chosen.stt === 'deepgram'),
    baseUrl: url('DEEPGRAM_BASE_URL', DEEPGRAM_DEFAULT_BASE_URL),
    model: name('DEEPGRAM_MODEL', DEEPGRAM_DEFAULT_MODEL),
  };
  const outputFormat = value('ELEVENLABS_OUTPUT_FORMAT') ?? 'pcm_16000';
  if (!(ELEVENLABS_OUTPUT_FORMATS as readonly string[]).includes(outputFormat)) {
    fail('ELEVENLABS_OUTPUT_FORMAT', `ELEVENLABS_OUTPUT_FORMAT must be one of ${ELEVENLABS_OUTPUT_FORMATS.join(', ')} (got "${outputFormat}")`);
  }
  const elevenLabs = {
    apiKey: key('ELEVENLABS_API_KEY', 'TTS_PROVIDER=elevenlabs', chosen.tts === 'elevenlabs'),
    baseUrl: url('ELEVENLABS_BASE_URL', ELEVENLABS_DEFAULT_BASE_URL),
    voiceId: name('ELEVENLABS_VOICE_ID', ELEVENLABS_DEFAULT_VOICE_ID),
    modelId: name('ELEVENLABS_MODEL_ID', ELEVENLABS_DEFAULT_MODEL_ID),
    outputFormat: outputFormat as ElevenLabsOutputFormat,
  };
  const timeouts = {
    connectTimeoutMs: millis('SPEECH_CLOUD_CONNECT_TIMEOUT_MS', SPEECH_CLOUD_DEFAULT_CONNECT_TIMEOUT_MS),
    answerTimeoutMs: millis('SPEECH_CLOUD_ANSWER_TIMEOUT_MS', SPEECH_CLOUD_DEFAULT_ANSWER_TIMEOUT_MS),
  };

  return {
    recognizer: chosen.stt === 'deepgram' ? new DeepgramRecognizer({ ...deepgram, apiKey: deepgram.apiKey!, ...timeouts }) : undefined,
    synthesizer: chosen.tts === 'elevenlabs' ? new ElevenLabsSynthesizer({ ...elevenLabs, apiKey: elevenLabs.apiKey!, ...timeouts }) : undefined,
  };
}
