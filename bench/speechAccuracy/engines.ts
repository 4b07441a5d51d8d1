// The recognisers bench/speechAccuracy.ts compares, each through the SpeechRecognizer
// interface with the hint the conversation engine would give it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AnswerHint, SpeechRecognizer } from '../../src/mediaEdge/speech/interfaces.js';
import { PocketsphinxRecognizer } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { WhisperRecognizer } from '../../src/mediaEdge/speech/whisper.js';
import type { Utterance } from './scoring.js';

export const WHISPER_PYTHON = fileURLToPath(new URL('../../.tools/speech-venv/bin/python', import.meta.url));

export interface EngineConfig {
  id: EngineId;
  /** One line for the report. */
  description: string;
  /** Whether this configuration is a distinct way of hearing the utterance (a grammar needs a constrained answer). */
  applies(utterance: Utterance): boolean;
  /** The hint the session is started with. */
  hint(utterance: Utterance): AnswerHint;
  /** A ready recogniser, or why it cannot run here. */
  open(options: { whisperWorkers?: number }): Promise<SpeechRecognizer | string>;
}

export const ENGINE_IDS = ['pocketsphinx-grammar', 'pocketsphinx-general', 'whisper', 'whisper-prompt'] as const;
export type EngineId = (typeof ENGINE_IDS)[number];

const constrained = (u: Utterance) => u.expect !== 'free';
/** The hint an ask step gives: its expect and its phrases. */
const askHint = (u: Utterance): AnswerHint => ({ expect: u.expect, ...(u.phrases ? { phrases: u.phrases } : {}) });

async function pocketsphinx(): Promise<SpeechRecognizer | string> {
  const recognizer = new PocketsphinxRecognizer();
  try {
    await recognizer.warmUp();
    return recognizer;
  } catch (err) {
    await recognizer.close();
    return `pocketsphinx is not usable: ${(err as Error).message}`;
  }
}

async function whisper(prompt: 'none' | 'grammar', workers: number | undefined): Promise<SpeechRecognizer | string> {
  if (!existsSync(WHISPER_PYTHON)) return `the speech venv is missing (${WHISPER_PYTHON}; npm test installs it)`;
  const recognizer = new WhisperRecognizer({ python: WHISPER_PYTHON, prompt, ...(workers ? { workers } : {}) });
  try {
    await recognizer.warmUp();
    return recognizer;
  } catch (err) {
    await recognizer.close();
    return `the Whisper worker did not start: ${(err as Error).message}`;
  }
}

export const ENGINES: Record<EngineId, EngineConfig> = {
  'pocketsphinx-grammar': {
    id: 'pocketsphinx-grammar',
    description: "pocketsphinx with the hint's JSGF grammar (the default for constrained answers today)",
    applies: constrained,
    hint: askHint,
    open: () => pocketsphinx(),
  },
  'pocketsphinx-general': {
    id: 'pocketsphinx-general',
    description: "pocketsphinx's general en-us language model (today's default for free speech and for a name asked without phrases)",
    // Only where the edge uses it: every constrained kind has a grammar (measured once: 0–50 % exact on them).
    applies: (u) => u.expect === 'free' || u.expect === 'name',
    hint: () => ({ expect: 'free' }),
    open: () => pocketsphinx(),
  },
  whisper: {
    id: 'whisper',
    description: 'Whisper tiny.en (STT_PROVIDER=whisper) with no prompt',
    applies: () => true,
    hint: askHint,
    open: ({ whisperWorkers }) => whisper('none', whisperWorkers),
  },
  'whisper-prompt': {
    id: 'whisper-prompt',
    description: "Whisper with the hint's phrases and the grammar's words as its initial prompt (its default, prompt mode grammar)",
    applies: constrained,
    hint: askHint,
    open: ({ whisperWorkers }) => whisper('grammar', whisperWorkers),
  },
};
