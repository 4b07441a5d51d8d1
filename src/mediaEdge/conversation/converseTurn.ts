/**
 * One model turn of a converse step, on the edge that holds the call (docs/agents.md): the
 * model's answer is streamed, split into sentences as the tokens arrive, and each sentence is
 * spoken as soon as it is complete, so the caller hears the first one before the model has
 * finished; then the edge listens for the caller's answer. A tool call's arguments are
 * checked here against the tool's schema (the workflow decides what follows). No Temporal
 * here: the converseTurn activity (activities.ts) wraps it.
 */
import type { SystemNote } from '../../domain/calls.js';
import { LlmError, type ChatCompletion, type ChatCompletionsClient } from '../../llm/chatCompletions.js';
import { SentenceSplitter } from '../../llm/sentences.js';
import type { CheckedToolCall, ConverseToolDefinition, ConverseTurnInput, ConverseTurnResult, ConverseUsage } from '../../../workflows/converseContracts.js';
import type { EarlyModelTurns } from './earlyModelTurns.js';
import type { SentenceSource } from './engine.js';

/** What a converse turn needs of the call's conversation. */
export interface ConverseVoice {
  speakSentences(source: SentenceSource, options: { signal: AbortSignal }): Promise<{ said: string; interrupted: boolean; firstFrameAt?: number; systemNotes?: SystemNote[] }>;
  /** `noSpeechTimerAfter`: the agent is still speaking; the caller's time to start counts once it settles. `onPause`: the words so far when the caller pauses. */
  listen(options: { timeoutMs: number; signal: AbortSignal; noSpeechTimerAfter?: Promise<unknown>; onPause?: (textSoFar: string) => void }): Promise<{ kind: 'utterance'; text: string; keyed?: boolean; systemNotes?: SystemNote[] } | { kind: 'silence'; systemNotes?: SystemNote[] }>;
  /** Settles when the call's media ends (an early answer for the next turn is then cancelled). */
  ended?: Promise<unknown>;
}

/** Checks a value against a JSON Schema: undefined when it matches, else why not. */
export type SchemaCheck = (schema: Record<string, unknown>, value: unknown) => string | undefined;

export interface ConverseTurnDeps {
  /** Undefined when no model is configured (LLM_BASE_URL / LLM_API_KEY): every model turn fails not_configured. */
  llm: ChatCompletionsClient | undefined;
  checkArguments: SchemaCheck;
  /** A retryable failure before the first token is tried again after this long, once (nothing was said yet). */
  retryDelayMs?: number;
  /** The conversation engine's clock (epoch ms): the first frame's time is read on it. */
  now?: () => number;
  /** The edge's early answers: the next turn asked once the caller's answer is recognised (earlyModelTurns.ts); absent: asked when its activity comes. */
  earlyTurns?: EarlyModelTurns;
}

/** Sentences handed from the model's stream to the speaking engine. */
export class SentenceQueue implements SentenceSource {
  private readonly ready: string[] = [];
  private ended = false;
  private waiting: ((sentence: string | undefined) => void) | undefined;

  push(sentence: string): void {
    if (this.waiting) {
      const wake = this.waiting;
      this.waiting = undefined;
      wake(sentence);
    } else this.ready.push(sentence);
  }

  end(): void {
    this.ended = true;
    this.waiting?.(undefined);
    this.waiting = undefined;
  }

  next(): Promise<string | undefined> {
    if (this.ready.length) return Promise.resolve(this.ready.shift());
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

/**
 * The answer's first piece goes to the synthesiser at its first clause of this many words
 * (docs/agents.md, "Latency"): at 40 tokens a second each word saved is about 30 ms of the
 * turn; fewer words would make the agent's first audio a fragment ("Well,").
 */
const FIRST_CLAUSE_WORDS = 4;

const NO_USAGE: ConverseUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/** Each tool call with its arguments parsed and checked against its tool's parameters. */
export function checkToolCalls(calls: ChatCompletion['toolCalls'], tools: readonly ConverseToolDefinition[], check: SchemaCheck): CheckedToolCall[] {
  return calls.map((call) => {
    const tool = tools.find((t) => t.name === call.name);
    if (!tool) return { ...call, error: `there is no tool named ${call.name}; the tools are ${tools.map((t) => t.name).join(', ') || 'none'}` };
    let value: unknown;
    try {
      value = JSON.parse(call.arguments || '{}');
    } catch {
      return { ...call, error: 'the arguments are not valid JSON' };
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ...call, error: 'the arguments must be a JSON object' };
    const why = check(tool.parameters, value);
    return why ? { ...call, error: why } : { ...call, value: value as Record<string, unknown> };
  });
}

function errorOf(err: unknown): { code: string; message: string; status?: number } {
  if (err instanceof LlmError) return { code: err.code, message: err.message, ...(err.status !== undefined ? { status: err.status } : {}) };
  return { code: 'unknown', message: err instanceof Error ? err.message : String(err) };
}

/**
 * The next model turn asked now that the caller's answer is known, as the workflow will ask it
 * (converseStep.ts: this turn's words as the assistant's message, as `said`, then the caller's
 * as the user's), when one follows. Should the two ever differ, the activity's request does not
 * match and the early answer is cancelled: a lost head start, never a wrong answer.
 *
 * Also asked on the words so far when the caller pauses (`heard` then holds them): when the
 * pause turns out to be the end and the final text is the same, the answer asked at the pause
 * is the one kept (EarlyModelTurns.ask), begun the hangover and the recognition sooner.
 */
function askNextEarly(deps: ConverseTurnDeps, voice: ConverseVoice, input: ConverseTurnInput, assistant: ConverseTurnInput['messages'], heard: ConverseTurnResult['heard'], usage: ConverseUsage): void {
  const next = input.next;
  if (!deps.llm || !deps.earlyTurns || !next || heard?.kind !== 'utterance' || !heard.text) return;
  const tokensLeft = next.tokensLeft - usage.total_tokens;
  if (tokensLeft <= 0) return;
  const tools = input.say !== undefined ? (next.tools ?? []) : input.tools;
  const messages = [...(input.say !== undefined ? (next.messages ?? []) : input.messages), ...assistant, { role: 'user' as const, content: heard.text }];
  deps.earlyTurns.ask(input.callId, deps.llm, { messages, ...(tools.length ? { tools } : {}), maxTokens: Math.max(1, Math.min(next.maxReplyTokens, tokensLeft)) }, voice.ended);
}

/** Runs one turn; a failure of the model is an answer (model_error), a failure of the call's media is thrown. */
export async function runConverseTurn(deps: ConverseTurnDeps, voice: ConverseVoice, input: ConverseTurnInput, signal: AbortSignal): Promise<ConverseTurnResult> {
  const now = deps.now ?? (() => performance.timeOrigin + performance.now());
  const started = now();
  const systemNotes: SystemNote[] = [];
  const keepNotes = <T extends { systemNotes?: SystemNote[] }>(answer: T): T => {
    if (answer.systemNotes?.length) systemNotes.push(...answer.systemNotes);
    return answer;
  };
  const finish = (result: Omit<ConverseTurnResult, 'systemNotes'>): ConverseTurnResult => (systemNotes.length ? { ...result, systemNotes } : result);
  // What a pause in the caller's answer asks early, once this turn knows what it said (set below).
  let askAtPause: ((textSoFar: string) => void) | undefined;
  const onPause = (textSoFar: string) => askAtPause?.(textSoFar);
  const listen = (stop: AbortSignal, agentSpeaking: Promise<unknown>) => voice.listen({ timeoutMs: input.noSpeechTimeoutMs, signal: stop, noSpeechTimerAfter: agentSpeaking, onPause }).then(keepNotes);
  const heardOf = (h: Awaited<ReturnType<typeof listen>>): ConverseTurnResult['heard'] =>
    h.kind === 'utterance' ? { kind: 'utterance', text: h.text, ...(h.keyed ? { keyed: true } : {}) } : { kind: 'silence' };
  // Listening from the start, as an ask does while its prompt plays: the recogniser is ready
  // (pocketsphinx's model loaded) when the caller speaks, and a barge-in's words are the answer.
  // The caller's time to start counts once the agent has stopped; a model may still be finishing.
  const speakWhileListening = async (source: SentenceSource) => {
    const stopListening = new AbortController();
    const speaking = voice.speakSentences(source, { signal });
    const listening = listen(AbortSignal.any([signal, stopListening.signal]), speaking);
    listening.catch(() => undefined);
    try {
      return { spoken: keepNotes(await speaking), listening, stopListening: (reason: Error) => stopListening.abort(reason) };
    } catch (err) {
      stopListening.abort(err);
      throw err;
    }
  };

  if (input.say !== undefined) {
    const line = new SentenceQueue();
    line.push(input.say);
    line.end();
    const { spoken, listening } = await speakWhileListening(line);
    // The workflow adds the line to the conversation only when some of it was said.
    const assistant: ConverseTurnInput['messages'] = spoken.said ? [{ role: 'assistant', content: spoken.said }] : [];
    askAtPause = (text) => askNextEarly(deps, voice, input, assistant, { kind: 'utterance', text }, NO_USAGE);
    const heard = heardOf(await listening);
    askNextEarly(deps, voice, input, assistant, heard, NO_USAGE);
    return finish({ outcome: 'answered', said: spoken.said, interrupted: spoken.interrupted, content: '', toolCalls: [], usage: NO_USAGE, heard });
  }
  if (!deps.llm) {
    return finish({ outcome: 'model_error', said: '', interrupted: false, content: '', toolCalls: [], usage: NO_USAGE, error: { code: 'not_configured', message: 'no language model is configured on the media edge (LLM_BASE_URL, LLM_API_KEY)' } });
  }
  const llm = deps.llm;

  const timings: NonNullable<ConverseTurnResult['timings']> = { startedAt: Math.round(started) };
  const queue = new SentenceQueue();
  const model = new AbortController();
  const onAbort = () => model.abort(signal.reason);
  signal.addEventListener('abort', onAbort);
  let streamed = false;
  const ask = async (): Promise<ChatCompletion> => {
    const splitter = new SentenceSplitter({ firstClauseWords: FIRST_CLAUSE_WORDS });
    for (let attempt = 1; ; attempt++) {
      try {
        const request = { messages: input.messages, ...(input.tools.length ? { tools: input.tools } : {}), maxTokens: input.maxTokens };
        const onText = (delta: string) => {
          if (!streamed) timings.firstTokenMs = Math.round(now() - started);
          streamed = true;
          for (const sentence of splitter.push(delta)) {
            timings.firstSentenceMs ??= Math.round(now() - started);
            queue.push(sentence);
          }
        };
        // The answer asked when the caller's last words were recognised, if it was asked with exactly this request.
        const early = attempt === 1 ? deps.earlyTurns?.take(input.callId, request) : undefined;
        if (early) timings.askedEarlyMs = Math.max(0, Math.round(started - early.askedAt));
        const completion = await (early ? early.follow(onText, model.signal) : llm.stream({ ...request, signal: model.signal }, onText));
        const rest = splitter.flush();
        if (rest) {
          timings.firstSentenceMs ??= Math.round(now() - started);
          queue.push(rest);
        }
        return completion;
      } catch (err) {
        // Retried only before anything was streamed: once words are spoken, a second answer would repeat them.
        if (streamed || attempt >= 2 || !(err instanceof LlmError) || !err.retryable || model.signal.aborted) throw err;
        await new Promise((resolve) => setTimeout(resolve, err.retryAfterMs ?? deps.retryDelayMs ?? 500));
      }
    }
  };
  const answer = ask().then(
    (completion) => ({ completion }),
    (err: unknown) => ({ err }),
  );
  void answer.then(() => queue.end());
  try {
    const { spoken, listening, stopListening } = await speakWhileListening(queue);
    const settled = await answer;
    if (spoken.firstFrameAt !== undefined) timings.firstAudioMs = Math.round(spoken.firstFrameAt - started);
    const base = { said: spoken.said, interrupted: spoken.interrupted, timings };
    if ('err' in settled) {
      stopListening(new Error('the model failed'));
      await listening.catch(() => undefined);
      if (signal.aborted) throw settled.err;
      return finish({ ...base, outcome: 'model_error', content: '', toolCalls: [], usage: NO_USAGE, error: errorOf(settled.err) });
    }
    const { completion } = settled;
    const usage = { prompt_tokens: completion.usage.promptTokens, completion_tokens: completion.usage.completionTokens, total_tokens: completion.usage.totalTokens };
    if (completion.toolCalls.length) {
      stopListening(new Error('the model called a tool'));
      await listening.catch(() => undefined);
      return finish({ ...base, outcome: 'tool_calls', content: completion.content, toolCalls: checkToolCalls(completion.toolCalls, input.tools, deps.checkArguments), usage });
    }
    const assistant: ConverseTurnInput['messages'] = [{ role: 'assistant', content: spoken.said }];
    askAtPause = (text) => askNextEarly(deps, voice, input, assistant, { kind: 'utterance', text }, usage);
    const heard = heardOf(await listening);
    askNextEarly(deps, voice, input, assistant, heard, usage);
    return finish({ ...base, outcome: 'answered', content: completion.content, toolCalls: [], usage, heard });
  } catch (err) {
    model.abort(err);
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
