/**
 * A call's language-model usage (docs/agents.md, "Usage"), as get-call-result shows it: read
 * from the converse steps' System Notes, which the call workflow writes as each step ends.
 */

export interface ModelUsage {
  model_turns: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A call's model caps when its script's model_limits leaves them out. */
export const MODEL_LIMIT_DEFAULTS = { turns_per_call: 40, tokens_per_call: 60_000 } as const;

/** The System Note kind of a converse step's summary (its data: step_id, model_turns, usage). */
export const CONVERSE_NOTE_KIND = 'converse';
/** The System Note kind of an LLM post-call analysis (ANALYSER=llm; its data: model, outcome, usage when the model answered). */
export const ANALYSIS_NOTE_KIND = 'llm_analysis';

/**
 * The call's model usage from its System Notes: the converse steps' summaries added up, and the
 * tokens of an LLM post-call analysis (not a turn); null when the model was not used.
 */
export function modelUsageFromNotes(notes: ReadonlyArray<{ kind: string; data?: unknown }> | null | undefined): ModelUsage | null {
  let found = false;
  const total = { model_turns: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (const note of notes ?? []) {
    if (note.kind !== CONVERSE_NOTE_KIND && note.kind !== ANALYSIS_NOTE_KIND) continue;
    const data = note.data as { model_turns?: number; usage?: Partial<ModelUsage> } | undefined;
    if (!data?.usage) continue;
    found = true;
    total.model_turns += data.model_turns ?? 0;
    total.prompt_tokens += data.usage.prompt_tokens ?? 0;
    total.completion_tokens += data.usage.completion_tokens ?? 0;
    total.total_tokens += data.usage.total_tokens ?? 0;
  }
  return found ? total : null;
}
