/**
 * ANALYSER=llm (docs/agents.md, "ANALYSER=llm"): a language model reads the call and fills
 * call_summary, structured_data (the script's own keys) and objectives (each met or not), in
 * JSON that must match a schema built from the script. The transcript, the turns and the
 * recording URL stay the deterministic analyser's (facts, not judgement).
 *
 * Retries are the analyseCall activity's: while the model's service fails in a way a retry can
 * help (5xx, 429, timeout, network), an attempt before the FALLBACK_ATTEMPT-th throws and the
 * activity tries again after its backoff; at that attempt, or at once for an answer that fails
 * validation or a refusal no retry helps (401, 403, 400), the deterministic analyser fills the
 * fields and a System Note says why. Either way the call's fields arrive.
 *
 * What the model sees: this call's turns, its status, the contact fields the script itself
 * uses, the script's objectives and structured_data keys. Never System Notes (webhook answers),
 * other contacts, keys or another team's data.
 */
import type { CallAnalysis } from '../db/repositories/calls.js';
import type { SystemNote } from '../domain/calls.js';
import { ANALYSIS_NOTE_KIND } from '../domain/scripts/modelUsage.js';
import { LlmError, type ChatCompletionsClient, type ChatUsage } from '../llm/chatCompletions.js';
import { checkJsonText, type JsonSchema } from '../llm/jsonSchema.js';
import type { AnalysisContext, AnalysisInput, CallAnalyser } from './analyser.js';

/** The activity attempt at which a model service still failing gives way to the deterministic analyser. */
export const FALLBACK_ATTEMPT = 3;
/** The System Note of an LLM analysis (one per call): what the model did, or why it did not; its usage counts in the call's. */
export const LLM_ANALYSIS_NOTE_KIND = ANALYSIS_NOTE_KIND;

interface ModelAnswer {
  call_summary: string;
  structured_data: Record<string, string | number | boolean | null>;
  objectives: { objective: string; met: boolean }[];
}

/** The JSON Schema the model's answer must match: the script's structured_data keys and objectives. */
export function analysisSchema(input: Pick<AnalysisInput, 'objectives' | 'structuredData'>): JsonSchema {
  const keys = Object.keys(input.structuredData ?? {});
  return {
    type: 'object',
    additionalProperties: false,
    required: ['call_summary', 'structured_data', 'objectives'],
    properties: {
      call_summary: { type: 'string', description: 'Two to four sentences: who was called, what happened, how it ended.' },
      structured_data: {
        type: 'object',
        additionalProperties: false,
        required: keys,
        properties: Object.fromEntries(
          keys.map((key) => [key, { type: ['string', 'number', 'boolean', 'null'], description: `The value of ${input.structuredData![key]} the call established; null when it did not.` }]),
        ),
      },
      objectives: {
        type: 'array',
        description: 'Each objective of the script once, in order, met only when the transcript shows it was achieved.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['objective', 'met'],
          properties: { objective: input.objectives.length ? { type: 'string', enum: input.objectives } : { type: 'string' }, met: { type: 'boolean' } },
        },
      },
    },
  };
}

const INSTRUCTIONS = [
  'You analyse a finished phone call placed by a voice agent, from its transcript.',
  'Answer with JSON only, matching the given schema.',
  'call_summary: two to four plain sentences.',
  'structured_data: for each key, the value the caller gave or the call established, else null. Do not guess.',
  'objectives: every objective listed, once each, in the same order; met is true only when the transcript shows it was achieved.',
].join(' ');

/** What the model is told: this call only (docs/agents.md, "What the model sees"). */
export function analysisPrompt(input: AnalysisInput): string {
  const contact = Object.fromEntries(
    (input.contactFields ?? []).filter((f) => f in input.contact).map((f) => [f, input.contact[f as keyof AnalysisInput['contact']] ?? null]),
  );
  return JSON.stringify({
    script: input.scriptName,
    call: { status: input.status, end_reason: input.endReason, duration_seconds: input.durationSeconds },
    contact,
    objectives: input.objectives,
    structured_data_keys: input.structuredData ?? {},
    transcript: input.turns.map((t) => ({ role: t.role, text: t.text })),
  });
}

/** The answer's objectives, each of the script's once in its order; undefined when the model left one out or repeated one. */
function objectivesInOrder(answer: ModelAnswer, objectives: string[]): { objective: string; met: boolean }[] | undefined {
  const seen = new Map<string, boolean>();
  for (const o of answer.objectives) {
    if (seen.has(o.objective)) return undefined;
    seen.set(o.objective, o.met);
  }
  if (seen.size !== objectives.length || objectives.some((o) => !seen.has(o))) return undefined;
  return objectives.map((objective) => ({ objective, met: seen.get(objective)! }));
}

export interface LlmAnalyserOptions {
  client: ChatCompletionsClient;
  /** Fills the facts, and everything when the model cannot. */
  fallback: CallAnalyser;
  fallbackAttempt?: number;
}

export class LlmAnalyser implements CallAnalyser {
  readonly name = 'llm';
  private readonly fallbackAttempt: number;

  constructor(private readonly options: LlmAnalyserOptions) {
    this.fallbackAttempt = options.fallbackAttempt ?? FALLBACK_ATTEMPT;
  }

  async analyse(input: AnalysisInput, context: AnalysisContext = {}): Promise<CallAnalysis> {
    const base = await this.options.fallback.analyse(input, context);
    // Nothing was said: nothing for a model to read.
    if (input.turns.length === 0) return base;
    const model = this.options.client.model;
    const fallBack = (why: string, usage?: ChatUsage): CallAnalysis => ({
      ...base,
      systemNotes: [
        note(`The language model (${model}) could not analyse the call: ${why}. The deterministic analyser filled the result.`, { model, outcome: 'fallback', reason: why, usage: usage && wireUsage(usage) }),
      ],
    });
    let answer;
    try {
      answer = await this.options.client.complete({
        messages: [
          { role: 'system', content: INSTRUCTIONS },
          { role: 'user', content: analysisPrompt(input) },
        ],
        jsonSchema: { name: 'call_analysis', schema: analysisSchema(input) },
        temperature: 0,
        signal: context.signal,
      });
    } catch (err) {
      if (!(err instanceof LlmError) || err.code === 'aborted') throw err;
      const attempt = context.attempt ?? this.fallbackAttempt;
      if (err.retryable && attempt < this.fallbackAttempt) throw err;
      return fallBack(err.retryable ? `its service failed ${attempt} time(s), the last with ${err.message}` : err.message);
    }
    const checked = checkJsonText<ModelAnswer>(analysisSchema(input), answer.content);
    if (!checked.ok) return fallBack(`its answer did not match the schema (${checked.message.slice(0, 300)})`, answer.usage);
    const objectives = objectivesInOrder(checked.value, input.objectives);
    if (!objectives) return fallBack('its answer did not give each objective once', answer.usage);
    return {
      ...base,
      call_summary: checked.value.call_summary,
      structured_data: { ...base.structured_data, ...checked.value.structured_data },
      objectives,
      systemNotes: [note(`The language model (${model}) analysed the call.`, { model, outcome: 'analysed', usage: wireUsage(answer.usage) })],
    };
  }
}

function wireUsage(usage: ChatUsage) {
  return { prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.totalTokens };
}

function note(text: string, data: Record<string, unknown>): SystemNote {
  return { at: new Date().toISOString(), kind: LLM_ANALYSIS_NOTE_KIND, text, data };
}
