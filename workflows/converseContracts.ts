/**
 * The converse step's activity on the media edge (docs/agents.md): one model turn per
 * activity, so each turn's prompt and answer are in the workflow's history. Apart from
 * MediaEdgeActivities because only a converse step needs it. The message and tool shapes are
 * the chat-completions protocol's (src/llm/chatCompletions.ts), repeated here as plain types
 * so the workflow bundle holds none of the client.
 */
import type { EdgeSystemNotes } from './contracts.js';

export interface ConverseToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model sent it. */
  arguments: string;
}

export type ConverseMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ConverseToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ConverseToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments (type object). */
  parameters: Record<string, unknown>;
}

export interface ConverseTurnInput {
  callId: string;
  stepId: string;
  /** The model turn's number within the call, from 1 (0: the step's first_line, said without the model). */
  turn: number;
  /** The conversation so far, the system prompt first. Empty when `say` is set. */
  messages: ConverseMessage[];
  tools: ConverseToolDefinition[];
  /** The answer's token cap (max_tokens): what the call's token cap leaves, at most the reply cap. */
  maxTokens: number;
  /** A fixed line said instead of asking the model (the step's first_line). */
  say?: string;
  /** How long the caller has to start answering once the agent's words have played. */
  noSpeechTimeoutMs: number;
  /**
   * Present when a model turn follows the caller's answer (no turn cap stops it): the edge may
   * ask the model for it as soon as the answer is recognised (docs/agents.md, "Latency"). The
   * next turn's token cap is min(maxReplyTokens, tokensLeft less this turn's tokens); none
   * follows when that is not above 0. `messages` and `tools`: the conversation before this
   * turn's words when `say` is set (the input's own are empty then).
   */
  next?: { tokensLeft: number; maxReplyTokens: number; messages?: ConverseMessage[]; tools?: ConverseToolDefinition[] };
}

/** A tool call as the edge checked it: its arguments parsed and validated against the tool's parameters, or why not. */
export interface CheckedToolCall extends ConverseToolCall {
  /** The parsed arguments when they are valid. */
  value?: Record<string, unknown>;
  /** Why the call is invalid (unknown tool, not JSON, not matching the schema); absent when valid. */
  error?: string;
}

export interface ConverseUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ConverseTurnResult extends EdgeSystemNotes {
  /**
   * answered: the agent spoke and the caller's answer (or silence) is in `heard`;
   * tool_calls: the model called tools (whatever text came first was spoken; nothing was heard);
   * model_error: the model service failed (what was said before is in `said`).
   */
  outcome: 'answered' | 'tool_calls' | 'model_error';
  /** What the caller heard: the sentences played, the one cut by a barge-in up to where it was cut. */
  said: string;
  /** A barge-in (or the call's end) cut the agent's words short. */
  interrupted: boolean;
  /** The model's whole text answer, as streamed ('' for first_line or a tools-only answer). */
  content: string;
  toolCalls: CheckedToolCall[];
  usage: ConverseUsage;
  heard?: { kind: 'utterance'; text: string; keyed?: boolean } | { kind: 'silence' };
  error?: { code: string; message: string; status?: number };
  /**
   * When the turn began on the edge (epoch ms, the conversation engine's clock), and ms from then:
   * the model's first token, its first whole sentence, the first agent audio (bench/converse.ts);
   * askedEarlyMs: the model was asked this long before the turn began (the caller's answer was
   * recognised then: earlyModelTurns.ts), so its first token may come at once.
   */
  timings?: { startedAt?: number; firstTokenMs?: number; firstSentenceMs?: number; firstAudioMs?: number; askedEarlyMs?: number };
}

/** The activity a media edge runs on its own task queue for a converse step (src/mediaEdge/activities.ts). */
export interface MediaEdgeConverseActivities {
  converseTurn(input: ConverseTurnInput): Promise<ConverseTurnResult>;
}
