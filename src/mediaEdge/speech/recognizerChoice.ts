/**
 * Which offline recogniser hears an answer, per audio band and per `expect`
 * (STT_TELEPHONE_ENGINES, STT_WIDEBAND_ENGINES), from the accuracy benchmark
 * (bench/speechAccuracy.ts; docs/speech.md, "Which recogniser per band and expect"): on the
 * telephone band Whisper beat pocketsphinx for every expect, so a phone call's answers go to
 * Whisper when it is installed; browser calls (wideband) keep STT_PROVIDER's engine.
 *
 * A setting is `auto`, one engine for every expect (`whisper`), or `expect=engine` pairs
 * (`yes_no=pocketsphinx,digits=whisper`; an expect not named takes STT_PROVIDER's engine).
 * `free` stands for `text` too.
 */
import type { AudioBand } from '../media/channel.js';
import type { AnswerExpectation, AnswerHint, RecognitionSession, SpeechRecognizer } from './interfaces.js';
import type { SettingFailure } from './speechSettings.js';

export const OFFLINE_RECOGNIZERS = ['pocketsphinx', 'whisper'] as const;
export type OfflineRecognizer = (typeof OFFLINE_RECOGNIZERS)[number];

/** The expects a table names (`text` is heard as `free`). */
export const TABLE_EXPECTS = ['yes_no', 'digits', 'number', 'date', 'name', 'free'] as const;
type TableExpect = (typeof TABLE_EXPECTS)[number];

/** The engine per expect of one band. */
export type ExpectEngines = Record<TableExpect, OfflineRecognizer>;
export type RecognizerTable = Record<AudioBand, ExpectEngines>;

export interface RecognizerChoiceConfig {
  STT_TELEPHONE_ENGINES?: string;
  STT_WIDEBAND_ENGINES?: string;
}

const VARIABLE: Record<AudioBand, keyof RecognizerChoiceConfig> = { telephone: 'STT_TELEPHONE_ENGINES', wideband: 'STT_WIDEBAND_ENGINES' };

function everyExpect(engine: OfflineRecognizer): ExpectEngines {
  return Object.fromEntries(TABLE_EXPECTS.map((expect) => [expect, engine])) as ExpectEngines;
}

function isEngine(value: string): value is OfflineRecognizer {
  return (OFFLINE_RECOGNIZERS as readonly string[]).includes(value);
}

/**
 * The table from configuration. `auto`: the telephone band goes to Whisper for every expect
 * when `whisperInstalled`, otherwise to `defaultEngine` (STT_PROVIDER's); wideband to
 * `defaultEngine`. `fail` names the variable of a bad value.
 */
export function recognizerTable(config: RecognizerChoiceConfig, defaultEngine: OfflineRecognizer, whisperInstalled: boolean, fail: SettingFailure): RecognizerTable {
  const read = (band: AudioBand): ExpectEngines => {
    const variable = VARIABLE[band];
    const value = (config[variable] ?? '').trim().toLowerCase();
    if (value === '' || value === 'auto') return everyExpect(band === 'telephone' && whisperInstalled ? 'whisper' : defaultEngine);
    if (isEngine(value)) return everyExpect(value);
    const engines = everyExpect(defaultEngine);
    for (const pair of value.split(',').map((p) => p.trim()).filter(Boolean)) {
      const [expect, engine, extra] = pair.split('=').map((p) => p.trim());
      const kind = expect === 'text' ? 'free' : expect;
      if (extra !== undefined || engine === undefined || !(TABLE_EXPECTS as readonly string[]).includes(kind) || !isEngine(engine)) {
        fail(
          variable,
          `${variable} must be auto, one of ${OFFLINE_RECOGNIZERS.join(', ')}, or expect=engine pairs such as yes_no=pocketsphinx,digits=whisper (expects: ${TABLE_EXPECTS.join(', ')}, text) (got "${config[variable]}")`,
        );
      }
      engines[kind as TableExpect] = engine as OfflineRecognizer;
    }
    return engines;
  };
  return { telephone: read('telephone'), wideband: read('wideband') };
}

/** Whether the table sends any answer to `engine`. */
export function tableUses(table: RecognizerTable, engine: OfflineRecognizer): boolean {
  return Object.values(table).some((engines) => Object.values(engines).includes(engine));
}

function tableExpect(expect: AnswerExpectation | undefined): TableExpect {
  return expect === undefined || expect === 'text' ? 'free' : expect;
}

/**
 * The recogniser of one band: each session goes to the engine its answer's `expect` names
 * (no hint: free speech). The engines are the edge's, shared; it neither warms them up nor
 * closes them.
 */
export class RecognizerByExpect implements SpeechRecognizer {
  readonly name: string;

  constructor(
    private readonly engines: ExpectEngines,
    private readonly recognizers: Record<OfflineRecognizer, SpeechRecognizer | undefined>,
  ) {
    this.name = [...new Set(Object.values(engines))].join('+');
  }

  /** The recogniser that hears an answer of this kind. */
  engineFor(expect: AnswerExpectation | undefined): SpeechRecognizer {
    const engine = this.engines[tableExpect(expect)];
    const recognizer = this.recognizers[engine];
    if (!recognizer) throw new Error(`no ${engine} recogniser was made for this table`);
    return recognizer;
  }

  start(options: { hint?: AnswerHint; signal?: AbortSignal } = {}): RecognitionSession {
    return this.engineFor(options.hint?.expect).start(options);
  }

  async warmUp(): Promise<void> {}
  async close(): Promise<void> {}
}

/** The recogniser a call on `band` uses: the shared one when the band's table is all `defaultEngine`, otherwise one that chooses per expect. */
export function recognizerForBand(
  table: RecognizerTable,
  band: AudioBand,
  defaultEngine: OfflineRecognizer,
  recognizers: Record<OfflineRecognizer, SpeechRecognizer | undefined>,
): SpeechRecognizer {
  const engines = table[band];
  if (Object.values(engines).every((engine) => engine === defaultEngine)) return recognizers[defaultEngine]!;
  return new RecognizerByExpect(engines, recognizers);
}
