/**
 * The converse step inside the script runner (docs/agents.md): the model and the caller take
 * turns, each turn one activity on the voice (the edge holding the call), until the model
 * calls a tool (the script goes on at the tool's next), the step's max_turns or the call's
 * model caps are reached (on_max_turns, else next), or the model service fails (on_error,
 * else the script stops and the call ends failed / provider_error with a System Note).
 * Deterministic: the model's answers come back as activity results, which the history keeps.
 */
import type { SystemNote } from '../src/domain/calls.js';
import type { TranscriptTurn } from '../src/domain/authCheck/index.js';
import type { ConverseStep } from '../src/domain/scripts/definition.js';
import { CONVERSE_NOTE_KIND } from '../src/domain/scripts/modelUsage.js';
import { renderSpeech } from '../src/domain/scripts/steps.js';
import { getVariable, renderTemplate, setVariable, type Scope } from '../src/domain/scripts/templates.js';
import type { ConverseMessage, ConverseToolDefinition, ConverseTurnInput, ConverseTurnResult, ConverseUsage } from './converseContracts.js';

/** One answer's token cap: a spoken reply is short; the call's cap may leave less. */
export const MAX_REPLY_TOKENS = 400;
/** What the model reads for a turn the caller let pass in silence. */
export const SILENT_TURN = '(The caller said nothing.)';

/** The call's model use so far, against its caps (the script's model_limits). */
export interface ModelBudget {
  turnsCap: number;
  tokensCap: number;
  turns: number;
  usage: ConverseUsage;
}

export function modelBudget(limits: { turns_per_call?: number; tokens_per_call?: number } | undefined, defaults: { turns_per_call: number; tokens_per_call: number }): ModelBudget {
  return {
    turnsCap: limits?.turns_per_call ?? defaults.turns_per_call,
    tokensCap: limits?.tokens_per_call ?? defaults.tokens_per_call,
    turns: 0,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}

/** What the step did: where the script goes, what was said, and its notes. */
export interface ConverseStepRun {
  /** The step to go on at; undefined: the step's default next. */
  next?: string;
  /** The model service failed and the step has no on_error: the script stops here. */
  failed?: boolean;
  turns: TranscriptTurn[];
  notes: SystemNote[];
  outcome: Record<string, unknown>;
}

export type ConverseTurn = (input: Omit<ConverseTurnInput, 'callId' | 'noSpeechTimeoutMs'>) => Promise<ConverseTurnResult>;

const now = () => new Date().toISOString();

function addUsage(into: ConverseUsage, usage: ConverseUsage): void {
  into.prompt_tokens += usage.prompt_tokens;
  into.completion_tokens += usage.completion_tokens;
  into.total_tokens += usage.total_tokens;
}

/**
 * Runs one converse step. `onTurns` gets each turn's transcript lines as soon as the turn is
 * over, so what was said is written even if the call ends in a later turn; `onEnded` gets the
 * step's summary note (its usage) when the call ends during the step.
 */
export async function runConverseStep(
  step: ConverseStep,
  scope: Scope,
  converse: ConverseTurn | undefined,
  budget: ModelBudget,
  onTurns: (turns: TranscriptTurn[]) => Promise<void>,
  onEnded: (notes: SystemNote[]) => Promise<void>,
): Promise<ConverseStepRun> {
  const progress = { modelTurns: 0, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } };
  try {
    return await converseTurns(step, scope, converse, budget, onTurns, progress);
  } catch (err) {
    // The call ended mid-step (the caller hung up, the media was lost): its model use still counts.
    if (progress.modelTurns > 0) {
      await onEnded([{ at: now(), kind: CONVERSE_NOTE_KIND, text: `Converse step "${step.id}" was under way when the call ended.`, data: { step_id: step.id, model_turns: progress.modelTurns, usage: { ...progress.usage }, ended: true } }]);
    }
    throw err;
  }
}

async function converseTurns(
  step: ConverseStep,
  scope: Scope,
  converse: ConverseTurn | undefined,
  budget: ModelBudget,
  onTurns: (turns: TranscriptTurn[]) => Promise<void>,
  progress: { modelTurns: number; usage: ConverseUsage },
): Promise<ConverseStepRun> {
  const notes: SystemNote[] = [];
  const usage = progress.usage;
  const summary = (text: string, data: Record<string, unknown>): SystemNote => ({
    at: now(),
    kind: CONVERSE_NOTE_KIND,
    text,
    data: { step_id: step.id, model_turns: modelTurns, usage: { ...usage }, ...data },
  });
  let modelTurns = 0;
  if (!converse) {
    notes.push(summary(`Converse step "${step.id}": this call cannot hold a model conversation (it has no media edge); the script goes on${step.on_error ? ` at step "${step.on_error}"` : ' no further'}.`, { error: 'no_voice' }));
    return step.on_error ? { next: step.on_error, turns: [], notes, outcome: { error: 'no_voice' } } : { failed: true, turns: [], notes, outcome: { error: 'no_voice' } };
  }
  // What the model sees: these instructions, the conversation, the tools' definitions; nothing else of the call.
  const messages: ConverseMessage[] = [{ role: 'system', content: renderTemplate(step.instructions, (name) => getVariable(scope, name)) }];
  const tools = step.tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  const heardTurns = async (result: ConverseTurnResult) => {
    const turns: TranscriptTurn[] = [];
    if (result.said) turns.push({ role: 'agent', text: result.said });
    if (result.heard?.kind === 'utterance') turns.push({ role: 'user', text: result.heard.text });
    if (turns.length) await onTurns(turns);
    if (result.heard?.kind === 'utterance') messages.push({ role: 'user', content: result.heard.text });
    else if (result.heard?.kind === 'silence') messages.push({ role: 'user', content: SILENT_TURN });
  };

  if (step.first_line) {
    const line = renderSpeech(step.first_line, scope);
    const result = await converse({ stepId: step.id, turn: 0, messages: [], tools: [], maxTokens: 0, say: line, ...nextTurn(0, { messages, tools }) });
    if (result.said) messages.push({ role: 'assistant', content: result.said });
    await heardTurns(result);
  }

  let toolErrorAnswered = false;
  /**
   * What the edge needs to ask the model for the next turn as soon as the caller has answered
   * (docs/agents.md, "Latency"): given when the turn caps let a model turn follow this one (the
   * loop's check below; the token cap the edge checks with this turn's tokens).
   */
  function nextTurn(turnsSoFar: number, conversation?: { messages: ConverseMessage[]; tools: ConverseToolDefinition[] }): { next?: ConverseTurnInput['next'] } {
    if (turnsSoFar >= step.max_turns || budget.turns >= budget.turnsCap) return {};
    return { next: { tokensLeft: budget.tokensCap - budget.usage.total_tokens, maxReplyTokens: MAX_REPLY_TOKENS, ...conversation } };
  }
  for (;;) {
    const capped = modelTurns >= step.max_turns ? 'max_turns' : budget.turns >= budget.turnsCap ? 'turns_per_call' : budget.usage.total_tokens >= budget.tokensCap ? 'tokens_per_call' : undefined;
    if (capped) {
      const why = capped === 'max_turns' ? `its max_turns (${step.max_turns})` : capped === 'turns_per_call' ? `the call's model turn cap (${budget.turnsCap})` : `the call's model token cap (${budget.tokensCap})`;
      notes.push(summary(`Converse step "${step.id}" reached ${why} without a tool call; the script goes on${step.on_max_turns ? ` at step "${step.on_max_turns}"` : ' at its next step'}.`, { reached: capped }));
      return { next: step.on_max_turns, turns: [], notes, outcome: { reached: capped, model_turns: modelTurns, usage } };
    }
    modelTurns++;
    progress.modelTurns = modelTurns;
    budget.turns++;
    const result = await converse({
      stepId: step.id,
      turn: budget.turns,
      messages,
      tools,
      maxTokens: Math.max(1, Math.min(MAX_REPLY_TOKENS, budget.tokensCap - budget.usage.total_tokens)),
      ...nextTurn(modelTurns),
    });
    addUsage(usage, result.usage);
    addUsage(budget.usage, result.usage);

    if (result.outcome === 'model_error') {
      if (result.said) await onTurns([{ role: 'agent', text: result.said }]);
      const error = result.error ?? { code: 'unknown', message: 'the model service failed' };
      notes.push(
        summary(
          `Converse step "${step.id}": the model service failed (${error.code}: ${error.message}); ${step.on_error ? `the script goes on at step "${step.on_error}"` : 'the script stops and the call ends'}.`,
          { error },
        ),
      );
      const outcome = { error: error.code, model_turns: modelTurns, usage };
      return step.on_error ? { next: step.on_error, turns: [], notes, outcome } : { failed: true, turns: [], notes, outcome };
    }

    if (result.outcome === 'tool_calls') {
      if (result.said) await onTurns([{ role: 'agent', text: result.said }]);
      messages.push({ role: 'assistant', content: result.said || null, tool_calls: result.toolCalls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })) });
      const valid = result.toolCalls.find((call) => call.error === undefined && call.value !== undefined);
      const tool = valid && step.tools.find((t) => t.name === valid.name);
      if (valid && tool) {
        setVariable(scope, `steps.${step.id}.tool`, { name: tool.name, arguments: valid.value });
        if (tool.variable) setVariable(scope, tool.variable, valid.value);
        notes.push(summary(`Converse step "${step.id}": the model called ${tool.name}; the script goes on at step "${tool.next}".`, { tool: tool.name, arguments: valid.value }));
        return { next: tool.next, turns: [], notes, outcome: { tool: tool.name, arguments: valid.value, model_turns: modelTurns, usage } };
      }
      const errors = result.toolCalls.map((call) => ({ name: call.name, error: call.error ?? 'not a tool of this step' }));
      if (toolErrorAnswered) {
        notes.push(summary(`Converse step "${step.id}": the model called a tool wrongly again (${errors.map((e) => `${e.name}: ${e.error}`).join('; ')}); ${step.on_error ? `the script goes on at step "${step.on_error}"` : 'the script stops and the call ends'}.`, { error: { code: 'invalid_tool_call', errors } }));
        const outcome = { error: 'invalid_tool_call', model_turns: modelTurns, usage };
        return step.on_error ? { next: step.on_error, turns: [], notes, outcome } : { failed: true, turns: [], notes, outcome };
      }
      // Answered back once: the model may correct its call in the next turn (nothing was heard meanwhile).
      toolErrorAnswered = true;
      for (const call of result.toolCalls) messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ error: call.error ?? 'not a tool of this step' }) });
      notes.push({ at: now(), kind: 'converse_tool_error', text: `Converse step "${step.id}": the model called a tool wrongly (${errors.map((e) => `${e.name}: ${e.error}`).join('; ')}); the error was answered back to it.`, data: { step_id: step.id, errors } });
      continue;
    }

    // What the model said as the caller heard it: a barge-in cuts it.
    messages.push({ role: 'assistant', content: result.said });
    await heardTurns(result);
  }
}
