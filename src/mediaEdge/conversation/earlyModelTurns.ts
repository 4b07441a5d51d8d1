/**
 * The next model turn of a converse step, asked of the model as soon as the caller's answer is
 * recognised instead of when the workflow's next converseTurn activity reaches the edge
 * (docs/agents.md, "Latency"). Between the two lie the activity's completion, the workflow's
 * task and the next activity's pickup: 80 ms on a quiet machine, 0.9 s with ten calls at a load
 * of 30 (bench/converse.ts); the model's first token (300 ms and more) now overlaps them.
 *
 * Nothing is spoken early. The activity whose input is exactly the request that was asked
 * (the messages, the tools, the token cap) takes the stream over, the text streamed so far
 * first; an activity with another input cancels it, and so do the call's end and `keepMs`
 * without an activity. So every turn's prompt and answer are still its activity's, in the
 * workflow's history, and its tokens are counted there. An early answer that is cancelled is
 * the only cost: its tokens, which no call's usage shows.
 */
import type { ChatCompletion, ChatCompletionRequest, ChatCompletionsClient } from '../../llm/chatCompletions.js';

/** What an early ask is matched on: an activity's request must be this, exactly. */
export type EarlyRequest = Pick<ChatCompletionRequest, 'messages' | 'tools' | 'maxTokens'>;

/** How long an early answer waits for its activity (the hand-off takes under a second, or a few under load). */
export const EARLY_TURN_KEEP_MS = 30_000;

const keyOf = (request: EarlyRequest) => JSON.stringify([request.messages, request.tools ?? [], request.maxTokens]);

/** One early answer: streamed into a buffer until its activity follows it. */
export class EarlyAnswer {
  /** When it was asked (the clock given to EarlyModelTurns). */
  readonly askedAt: number;
  readonly completion: Promise<ChatCompletion>;
  private readonly controller = new AbortController();
  private readonly buffered: string[] = [];
  private onText: ((delta: string) => void) | undefined;

  constructor(
    llm: ChatCompletionsClient,
    readonly key: string,
    request: EarlyRequest,
    askedAt: number,
  ) {
    this.askedAt = askedAt;
    this.completion = llm.stream({ ...request, signal: this.controller.signal }, (delta) => (this.onText ? this.onText(delta) : this.buffered.push(delta)));
    // Settled by whoever follows it; an answer nobody follows is only cancelled.
    this.completion.catch(() => undefined);
  }

  /** The answer as the client's stream gives it: the text so far to `onText` at once, then each delta as it comes. */
  follow(onText: (delta: string) => void, signal: AbortSignal): Promise<ChatCompletion> {
    if (signal.aborted) this.cancel();
    else signal.addEventListener('abort', () => this.cancel(), { once: true });
    for (const delta of this.buffered.splice(0)) onText(delta);
    this.onText = onText;
    return this.completion;
  }

  cancel(): void {
    this.controller.abort();
  }
}

/** The edge's early answers, at most one per call. */
export class EarlyModelTurns {
  private readonly byCall = new Map<string, { answer: EarlyAnswer; expiry: NodeJS.Timeout }>();

  constructor(private readonly options: { keepMs?: number; now?: () => number } = {}) {}

  /**
   * Asks the model now for the call's next turn; an earlier early answer of the call is
   * cancelled, unless it was asked with exactly this request (the caller's words at a pause were
   * the whole answer): that one goes on, with its head start. `callEnded` cancels it too.
   */
  ask(callId: string, llm: ChatCompletionsClient, request: EarlyRequest, callEnded?: Promise<unknown>): void {
    if (this.byCall.get(callId)?.answer.key === keyOf(request)) return;
    this.drop(callId);
    const now = this.options.now ?? (() => performance.timeOrigin + performance.now());
    const answer = new EarlyAnswer(llm, keyOf(request), request, now());
    const expiry = setTimeout(() => this.drop(callId, answer), this.options.keepMs ?? EARLY_TURN_KEEP_MS);
    expiry.unref();
    this.byCall.set(callId, { answer, expiry });
    void callEnded?.then(() => this.drop(callId, answer));
  }

  /** The call's early answer if it was asked with exactly `request` (taken: once); any other is cancelled. */
  take(callId: string, request: EarlyRequest): EarlyAnswer | undefined {
    const held = this.byCall.get(callId);
    if (!held) return undefined;
    clearTimeout(held.expiry);
    this.byCall.delete(callId);
    if (held.answer.key === keyOf(request)) return held.answer;
    held.answer.cancel();
    return undefined;
  }

  /** Early answers waiting for their activity (for tests and benchmarks). */
  get waiting(): number {
    return this.byCall.size;
  }

  /** Cancels every early answer (the edge is closing). */
  close(): void {
    for (const callId of [...this.byCall.keys()]) this.drop(callId);
  }

  private drop(callId: string, only?: EarlyAnswer): void {
    const held = this.byCall.get(callId);
    if (!held || (only && held.answer !== only)) return;
    clearTimeout(held.expiry);
    this.byCall.delete(callId);
    held.answer.cancel();
  }
}
