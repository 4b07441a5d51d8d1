/**
 * A client of the OpenAI-compatible chat-completions protocol (POST {base}/chat/completions),
 * streamed over server-sent events or not, with tool calls and JSON-schema answers. The same
 * code serves the hosted API and self-hosted servers (vLLM, llama.cpp server, Ollama's
 * compatible endpoint): only the base URL and the key differ. Node's fetch, no SDK.
 *
 * It does not retry: its callers are activities, whose retry policies decide (docs/agents.md,
 * "Model settings"). Every failure is an LlmError saying whether a retry can help.
 */
import type { Config } from '../config/index.js';
import { llmConfigured } from '../config/index.js';
import { redactCredentials } from '../logging/redaction.js';

export interface ChatToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model sent it (may be invalid: validate before use). */
  arguments: string;
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ChatTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatCompletionRequest {
  messages: ChatMessage[];
  tools?: ChatTool[];
  maxTokens?: number;
  temperature?: number;
  /** JSON mode with a schema (response_format json_schema), for the analyser. */
  jsonSchema?: { name: string; schema: Record<string, unknown> };
  signal?: AbortSignal;
}

export interface ChatCompletion {
  /** The whole text answer ('' when only tools were called). */
  content: string;
  toolCalls: ChatToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter' | string;
  /** From the stream's final usage chunk (stream_options.include_usage) or the body; zeros when the server sent none. */
  usage: ChatUsage;
}

/**
 * What went wrong with a request to the model, by `code`:
 * - not retryable: `unauthorized` (401), `forbidden` (403), `bad_request` (another 4xx: an unknown
 *   model, a request the server refuses), `aborted` (the caller's signal);
 * - retryable: `rate_limited` (429), `server_error` (5xx, or an error sent inside the stream),
 *   `network` (no answer), `timeout` (the whole request), `first_token_timeout`, `stream_cut` (the
 *   stream ended before `[DONE]`), `bad_response` (an answer that is not the protocol's).
 */
export class LlmError extends Error {
  readonly status?: number;
  readonly retryable: boolean;
  readonly code: string;
  /** From a 429's Retry-After, when the server sent one. */
  readonly retryAfterMs?: number;

  constructor(code: string, message: string, options: { status?: number; retryable: boolean; retryAfterMs?: number; cause?: unknown }) {
    super(redactCredentials(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LlmError';
    this.code = code;
    this.status = options.status;
    this.retryable = options.retryable;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export interface ChatCompletionsClientOptions {
  /** Such as https://api.openai.com/v1 (the path /chat/completions is appended). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer`; a self-hosted server may need none. */
  apiKey?: string;
  model: string;
  /** The whole request, from sending it to its last token (default 30 s). */
  timeoutMs?: number;
  /** From sending the request to the first token of a stream (default: timeoutMs). */
  firstTokenTimeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** How much of a server's error message an LlmError keeps. */
const MAX_ERROR_DETAIL = 300;

// The protocol's wire shapes (only the fields read here).
interface WireToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}
interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}
interface WireChunk {
  choices?: Array<{ index?: number; delta?: { content?: string | null; tool_calls?: WireToolCallDelta[] }; finish_reason?: string | null }> | null;
  usage?: WireUsage | null;
  error?: { message?: string; type?: string; code?: string | number | null };
}
interface WireCompletion {
  choices?: Array<{ message?: { content?: string | null; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }> }; finish_reason?: string | null }>;
  usage?: WireUsage | null;
}

function usageOf(wire: WireUsage | null | undefined): ChatUsage {
  const promptTokens = wire?.prompt_tokens ?? 0;
  const completionTokens = wire?.completion_tokens ?? 0;
  return { promptTokens, completionTokens, totalTokens: wire?.total_tokens ?? promptTokens + completionTokens };
}

function wireMessage(message: ChatMessage): Record<string, unknown> {
  if (message.role === 'assistant' && message.tool_calls?.length) {
    return {
      role: 'assistant',
      content: message.content,
      tool_calls: message.tool_calls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
    };
  }
  if (message.role === 'assistant') return { role: 'assistant', content: message.content };
  return { ...message };
}

/** Why the client's own controller aborted a request (the caller's signal is told apart by its own state). */
type AbortReason = 'timeout' | 'first_token_timeout' | 'aborted';

export class ChatCompletionsClient {
  readonly model: string;
  readonly baseUrl: string;
  // Private so that logging the client never shows it (the redaction also drops `apiKey` fields).
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #firstTokenTimeoutMs: number;

  constructor(options: ChatCompletionsClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.model = options.model;
    this.#apiKey = options.apiKey || undefined;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#firstTokenTimeoutMs = options.firstTokenTimeoutMs ?? this.#timeoutMs;
  }

  /** Streams (SSE); onText gets each text delta as it arrives; resolves with the whole answer. */
  async stream(request: ChatCompletionRequest, onText?: (delta: string) => void): Promise<ChatCompletion> {
    return this.#send(request, true, async (response, gotFirstToken) => {
      if (!response.body) throw new LlmError('bad_response', 'the model service answered a stream without a body', { retryable: true });
      const answer = new StreamedAnswer(onText, gotFirstToken);
      const decoder = new TextDecoder();
      const events = new ServerSentEvents();
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const data of events.push(decoder.decode(value, { stream: true }))) {
            if (answer.take(data) === 'done') return answer.result();
          }
        }
      } finally {
        reader.releaseLock();
      }
      for (const data of events.push(decoder.decode() + '\n\n')) if (answer.take(data) === 'done') return answer.result();
      throw new LlmError('stream_cut', `the model's stream ended before [DONE] (after ${answer.chunks} chunk(s))`, { retryable: true });
    });
  }

  /** Not streamed. */
  async complete(request: ChatCompletionRequest): Promise<ChatCompletion> {
    return this.#send(request, false, async (response) => {
      const body = (await readJson(response)) as WireCompletion;
      const choice = body.choices?.[0];
      if (!choice?.message) throw new LlmError('bad_response', 'the model service answered without a choice', { retryable: true });
      return {
        content: choice.message.content ?? '',
        toolCalls: (choice.message.tool_calls ?? []).map((call) => ({ id: call.id ?? '', name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' })),
        finishReason: choice.finish_reason ?? 'stop',
        usage: usageOf(body.usage),
      };
    });
  }

  /** The request body as the protocol has it. */
  wireRequest(request: ChatCompletionRequest, stream: boolean): Record<string, unknown> {
    return {
      model: this.model,
      messages: request.messages.map(wireMessage),
      ...(request.tools?.length
        ? { tools: request.tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } })) }
        : {}),
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.jsonSchema ? { response_format: { type: 'json_schema', json_schema: { name: request.jsonSchema.name, schema: request.jsonSchema.schema, strict: true } } } : {}),
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    };
  }

  async #send(request: ChatCompletionRequest, stream: boolean, read: (response: Response, gotFirstToken: () => void) => Promise<ChatCompletion>): Promise<ChatCompletion> {
    const controller = new AbortController();
    let reason: AbortReason | undefined;
    const abort = (why: AbortReason) => {
      reason ??= why;
      controller.abort();
    };
    const callerSignal = request.signal;
    if (callerSignal?.aborted) throw new LlmError('aborted', 'the request to the model was cancelled', { retryable: false });
    const onCallerAbort = () => abort('aborted');
    callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    const whole = setTimeout(() => abort('timeout'), this.#timeoutMs);
    let firstToken: NodeJS.Timeout | undefined = stream && this.#firstTokenTimeoutMs < this.#timeoutMs ? setTimeout(() => abort('first_token_timeout'), this.#firstTokenTimeoutMs) : undefined;
    const gotFirstToken = () => {
      clearTimeout(firstToken);
      firstToken = undefined;
    };
    try {
      let response: Response;
      try {
        response = await fetch(`${this.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: stream ? 'text/event-stream' : 'application/json',
            ...(this.#apiKey ? { authorization: `Bearer ${this.#apiKey}` } : {}),
          },
          body: JSON.stringify(this.wireRequest(request, stream)),
          signal: controller.signal,
        });
      } catch (err) {
        throw reason ? this.#abortError(reason) : new LlmError('network', `the model service could not be reached: ${causeText(err)}`, { retryable: true, cause: err });
      }
      if (!response.ok) throw await httpError(response);
      try {
        return await read(response, gotFirstToken);
      } catch (err) {
        if (reason) throw this.#abortError(reason);
        if (err instanceof LlmError) throw err;
        // The connection broke while the answer was coming.
        throw new LlmError('stream_cut', `the model's answer was cut: ${causeText(err)}`, { retryable: true, cause: err });
      }
    } finally {
      clearTimeout(whole);
      clearTimeout(firstToken);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    }
  }

  #abortError(reason: AbortReason): LlmError {
    if (reason === 'aborted') return new LlmError('aborted', 'the request to the model was cancelled', { retryable: false });
    if (reason === 'first_token_timeout') return new LlmError('first_token_timeout', `the model sent no token within ${this.#firstTokenTimeoutMs} ms`, { retryable: true });
    return new LlmError('timeout', `the model did not answer within ${this.#timeoutMs} ms`, { retryable: true });
  }
}

function causeText(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new LlmError('bad_response', `the model service answered ${response.status} with a body that is not JSON`, { status: response.status, retryable: true });
  }
}

/** The LlmError of an HTTP error answer, with the server's own message (`{ error: { message } }`) when it sent one. */
async function httpError(response: Response): Promise<LlmError> {
  const status = response.status;
  let detail = '';
  try {
    const text = await response.text();
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof body.error === 'string' ? body.error : (body.error?.message ?? body.message);
    if (typeof message === 'string') detail = `: ${message.slice(0, MAX_ERROR_DETAIL)}`;
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  const text = `the model service answered ${status}${detail}`;
  if (status === 401) return new LlmError('unauthorized', text, { status, retryable: false });
  if (status === 403) return new LlmError('forbidden', text, { status, retryable: false });
  if (status === 429) {
    const seconds = Number(response.headers.get('retry-after'));
    return new LlmError('rate_limited', text, { status, retryable: true, retryAfterMs: Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : undefined });
  }
  if (status === 408) return new LlmError('timeout', text, { status, retryable: true });
  if (status >= 500) return new LlmError('server_error', text, { status, retryable: true });
  return new LlmError('bad_request', text, { status, retryable: false });
}

/**
 * Server-sent events (the WHATWG event-stream format): lines to events at each blank line,
 * `data:` lines of one event joined by newlines, comments (`:`) and other fields ignored.
 */
class ServerSentEvents {
  private buffer = '';
  private data: string[] = [];

  /** The data of each event completed by `text`. */
  push(text: string): string[] {
    this.buffer += text;
    const out: string[] = [];
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) break;
      // A lone \r at the end of the buffer may be the first half of \r\n: wait for more.
      if (this.buffer[end] === '\r' && end === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + (this.buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (this.data.length) out.push(this.data.join('\n'));
        this.data = [];
      } else if (line.startsWith('data:')) {
        this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
      }
    }
    return out;
  }
}

/** A streamed answer put together from its chunks. */
class StreamedAnswer {
  chunks = 0;
  private content = '';
  private readonly toolCalls = new Map<number, ChatToolCall>();
  private finishReason = '';
  private usage: ChatUsage = usageOf(undefined);

  constructor(
    private readonly onText: ((delta: string) => void) | undefined,
    private readonly gotFirstToken: () => void,
  ) {}

  /** Takes one event's data; 'done' at `[DONE]`. */
  take(data: string): 'done' | 'more' {
    if (data.trim() === '[DONE]') return 'done';
    let chunk: WireChunk;
    try {
      chunk = JSON.parse(data) as WireChunk;
    } catch {
      throw new LlmError('bad_response', 'the model sent a stream chunk that is not JSON', { retryable: true });
    }
    if (chunk.error) {
      throw new LlmError('server_error', `the model service failed mid-stream: ${String(chunk.error.message ?? chunk.error.type ?? 'error').slice(0, MAX_ERROR_DETAIL)}`, { retryable: true });
    }
    this.chunks++;
    if (chunk.usage) this.usage = usageOf(chunk.usage);
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta ?? {};
      if (typeof delta.content === 'string' && delta.content !== '') {
        this.gotFirstToken();
        this.content += delta.content;
        this.onText?.(delta.content);
      }
      for (const piece of delta.tool_calls ?? []) {
        this.gotFirstToken();
        const index = piece.index ?? 0;
        const call = this.toolCalls.get(index) ?? { id: '', name: '', arguments: '' };
        if (piece.id) call.id = piece.id;
        if (piece.function?.name) call.name += piece.function.name;
        if (piece.function?.arguments) call.arguments += piece.function.arguments;
        this.toolCalls.set(index, call);
      }
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    return 'more';
  }

  result(): ChatCompletion {
    const toolCalls = [...this.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    return { content: this.content, toolCalls, finishReason: this.finishReason || (toolCalls.length ? 'tool_calls' : 'stop'), usage: this.usage };
  }
}

/** From config (LLM_BASE_URL, LLM_API_KEY, LLM_MODEL, LLM_TIMEOUT_SECONDS): undefined when no model is configured. */
export function chatCompletionsClientFromConfig(
  config: Pick<Config, 'LLM_BASE_URL' | 'LLM_API_KEY' | 'LLM_MODEL' | 'LLM_TIMEOUT_SECONDS'>,
  options: Pick<ChatCompletionsClientOptions, 'firstTokenTimeoutMs' | 'timeoutMs'> = {},
): ChatCompletionsClient | undefined {
  if (!llmConfigured(config)) return undefined;
  return new ChatCompletionsClient({
    baseUrl: config.LLM_BASE_URL,
    apiKey: config.LLM_API_KEY,
    model: config.LLM_MODEL,
    timeoutMs: config.LLM_TIMEOUT_SECONDS * 1000,
    ...options,
  });
}
