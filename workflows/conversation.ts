/**
 * The conversation seam of the call workflow: everything between "the call is in progress"
 * and "the call has ended", as one function, `runConversation(ctx)`.
 *
 * Today it dials through the voice provider (local activity placeCall) and then either plays
 * the simulator's plan with durable timers or follows the provider's events (signals from
 * POST /internal/v1/calls/{call_id}/events). The script runtime replaces this body: it has
 * the call's contact, script and linked objects through `ctx.loadContext()` (a simulated
 * call gets them with its plan), and writes what happens with `ctx.appendTurns()`,
 * `ctx.appendSystemNotes()`, or `ctx.record()` for several at once. It must return the
 * call's outcome; the workflow shell does the rest (terminal status, slot, analysis).
 * See docs/calls.md, "The conversation seam".
 */
import { condition, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { CallActivities, CallContextData, PlaceCallResult } from '../activities/calls.js';
import { END_REASONS, isEndReason, type CallProgress, type ConversationTurn, type SystemNote, type TerminalStatus } from '../src/domain/calls.js';
import type { SimulatedCallPlan } from '../src/telephony/provider.js';
import { NO_NUMBER_FAILURE, NOT_FOUND_FAILURE, type CallEvent, type CallWorkflowInput } from './contracts.js';
import { runMediaConversation } from './mediaConversation.js';
import { runTrunkCall } from './trunkCall.js';
import { addCalleeToDoNotCall } from './dialingPolicy.js';
import { runScript, simulatedVoice } from './scriptRunner.js';

/** Longest a provider-reported call may go without ending before it is failed (call_timeout). */
export const MAX_CALL_MS = 2 * 60 * 60 * 1000;

const { placeCall } = proxyLocalActivities<CallActivities>({
  startToCloseTimeout: '30 seconds',
  // Reaches a person: a bounded retry, then the call fails (provider_error).
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: [NOT_FOUND_FAILURE, NO_NUMBER_FAILURE] },
});

// The dial of a call that waits for its dial token (carrier pacing): an activity that may wait
// minutes, heartbeating; it reaches a person, so it is retried a bounded number of times.
const paced = proxyActivities<CallActivities>({
  startToCloseTimeout: '11 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumAttempts: 3, nonRetryableErrorTypes: [NOT_FOUND_FAILURE, NO_NUMBER_FAILURE] },
});

/** Waits for a dial token in the dial activity, then dials; asked again while none has come. */
async function placePacedCall(callId: string): Promise<PlaceCallResult> {
  for (;;) {
    const placed = await paced.placePacedCall({ callId });
    if (!('waiting' in placed)) return placed;
  }
}

/** Provider events received by the workflow, in arrival order, each event_id once. */
export class CallEventInbox {
  private readonly queue: CallEvent[] = [];
  private readonly seen = new Set<string>();

  push(event: CallEvent): void {
    if (event.event_id) {
      if (this.seen.has(event.event_id)) return;
      this.seen.add(event.event_id);
    }
    this.queue.push(event);
  }

  /** Removes every queued event of this type; whether there was one. */
  drop(type: CallEvent['type']): boolean {
    const before = this.queue.length;
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i].type === type) this.queue.splice(i, 1);
    return this.queue.length < before;
  }

  /** The first queued event of this type, left in the queue. */
  peek<T extends CallEvent['type']>(type: T): Extract<CallEvent, { type: T }> | undefined {
    return this.queue.find((e) => e.type === type) as Extract<CallEvent, { type: T }> | undefined;
  }

  /** True once an event of this type has arrived (consumed or not). */
  has(type: CallEvent['type']): boolean {
    return this.queue.some((e) => e.type === type);
  }

  /** The next event, waiting at most timeoutMs; undefined on timeout. */
  async take(timeoutMs: number): Promise<CallEvent | undefined> {
    if (this.queue.length === 0 && !(await condition(() => this.queue.length > 0, Math.max(timeoutMs, 1)))) return undefined;
    return this.queue.shift();
  }

  /** Removes and returns the first event of this type, dropping those before it (consumed elsewhere). */
  takeThrough<T extends CallEvent['type']>(type: T): Extract<CallEvent, { type: T }> | undefined {
    const i = this.queue.findIndex((e) => e.type === type);
    if (i < 0) return undefined;
    const event = this.queue[i] as Extract<CallEvent, { type: T }>;
    this.queue.splice(0, i + 1);
    return event;
  }
}

/** What one write of the conversation carries (ctx.record): any of a progress, turns and System Notes. */
export interface ConversationWrite {
  progress?: CallProgress;
  turns?: ConversationTurn[];
  notes?: SystemNote[];
}

export interface CallContext {
  input: CallWorkflowInput;
  events: CallEventInbox;
  /** The task queue of the media edge holding the call's media (from its `answered` event), if one does. */
  mediaTaskQueue?: string;
  /** When the call's dial token was taken (carrier pacing): the dial goes out in its slot, or waits for a fresh one. */
  dialTokenAt?: string;
  /** No dial token was free: the dial activity waits for one (placePacedCall) and dials inside its slot. */
  waitForDialToken?: boolean;
  setProgress(progress: CallProgress): Promise<void>;
  /** Writes a progress, turns and System Notes in one activity (idempotent; kept in order). */
  record(write: ConversationWrite): Promise<void>;
  /** Appends conversation turns to the call (idempotent; kept in order). */
  appendTurns(turns: ConversationTurn[]): Promise<void>;
  /** Appends System Notes (shown as system_notes on get-call-result). */
  appendSystemNotes(notes: SystemNote[]): Promise<void>;
  /** Contact (all fields), script (with definition) and linked objects of the call. */
  loadContext(): Promise<CallContextData>;
  /** Whether cancel-call reached the workflow (a phone call on the SIP trunk may be cancelled in progress). */
  cancelRequested?(): boolean;
  /** The simulated callee's script steps show in one memo upsert per workflow task (ScriptRuntimeHost.memoOncePerTask). */
  memoOncePerTask?: boolean;
}

export interface ConversationOutcome {
  status: Exclude<TerminalStatus, 'cancelled'>;
  endReason: string;
}

/** A phone call on the SIP trunk cancelled while it rang or talked (cancel-call): CANCEL or BYE went out. */
export interface CancelledOutcome {
  status: 'cancelled';
  endReason: 'cancelled';
}

/** The outcome an end reason names (an unknown one, or `cancelled` reported by a provider, is provider_error). */
export function outcomeOf(reason: string): ConversationOutcome {
  const status = isEndReason(reason) ? END_REASONS[reason] : 'failed';
  return status === 'cancelled' ? { status: 'failed', endReason: 'provider_error' } : { status, endReason: isEndReason(reason) ? reason : 'provider_error' };
}

/** Applies one provider event; returns the outcome when it ends the call. */
async function applyEvent(ctx: CallContext, event: CallEvent): Promise<ConversationOutcome | undefined> {
  switch (event.type) {
    case 'ringing':
      await ctx.setProgress('ringing');
      return undefined;
    case 'answered':
      await ctx.setProgress('in_conversation');
      return undefined;
    case 'transcript':
      await ctx.appendTurns([{ role: event.role, text: event.text }]);
      return undefined;
    case 'ended':
      return outcomeOf(event.reason);
  }
}

/** Processes provider events for up to ms; returns early with the outcome of an `ended` event. */
async function followEvents(ctx: CallContext, ms: number): Promise<ConversationOutcome | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return undefined;
    const event = await ctx.events.take(remaining);
    if (!event) return undefined;
    const outcome = await applyEvent(ctx, event);
    if (outcome) return outcome;
  }
}

/**
 * The simulator's plan, played with durable timers (placeCall left the call ringing); a
 * provider `ended` event still ends it early. An answered call is in conversation from the
 * answer on, and what it says is written then, with that progress, in one write.
 */
async function playSimulatedCall(ctx: CallContext, plan: SimulatedCallPlan, context: CallContextData | undefined): Promise<ConversationOutcome> {
  const early = await followEvents(ctx, plan.ringSeconds * 1000);
  if (early) return early;
  if (plan.answered) {
    if (plan.status === 'completed') return runScriptedConversation(ctx, plan, context ?? (await ctx.loadContext()));
    await ctx.record({ progress: 'in_conversation', turns: plan.turns });
    if (plan.doNotCall) await addCalleeToDoNotCall(ctx.input.callId, 'Asked during the call not to be called again');
    const cut = await followEvents(ctx, plan.talkSeconds * 1000);
    if (cut) return cut;
  }
  return { status: plan.status, endReason: plan.endReason };
}

/**
 * An answered simulated call: the script runner (workflows/scriptRunner.ts) runs the
 * call's script step by step against the simulated callee, whose answers came with the
 * plan; the turns and System Notes of the steps are written together with the
 * in_conversation progress (and before a webhook step, so the call shows them while it
 * waits); the call then lasts out its talk time. An invalid script or one that never
 * reaches an end fails the call (provider_error) instead of completing it.
 */
async function runScriptedConversation(ctx: CallContext, plan: SimulatedCallPlan, context: CallContextData): Promise<ConversationOutcome> {
  const started = Date.now();
  const { id, type, from_number, to_number, participant_identity, team_id } = context.call;
  const data = { contact: context.contact, objects: context.objects, call: { id, type, from_number, to_number, participant_identity, team_id, script_id: context.script.id } };
  const held = { turns: [] as ConversationTurn[], notes: [] as SystemNote[] };
  let progress: CallProgress | undefined = 'in_conversation';
  const flush = async () => {
    if (!progress && held.turns.length === 0 && held.notes.length === 0) return;
    await ctx.record({ progress, turns: held.turns.splice(0), notes: held.notes.splice(0) });
    progress = undefined;
  };
  const run = await runScript(context.script.checked, data, {
    callId: ctx.input.callId,
    region: context.region,
    voice: simulatedVoice(ctx.input.callId, plan.answers ? { answers: plan.answers, data } : undefined),
    memoOncePerTask: ctx.memoOncePerTask,
    appendTurns: async (turns) => {
      held.turns.push(...turns);
    },
    appendSystemNotes: async (notes) => {
      held.notes.push(...notes);
    },
    flush,
  });
  await flush();
  const cut = await followEvents(ctx, plan.talkSeconds * 1000 - (Date.now() - started));
  if (cut) return cut;
  // The script could not run to its end (docs/calls.md: provider_error); a script_error System Note says why.
  if (!run.completed) return { status: 'failed', endReason: 'provider_error' };
  // A transfer step handed the caller to the (simulated) person: the call ends there.
  if (run.transferred) return { status: 'completed', endReason: 'transferred' };
  return { status: plan.status, endReason: plan.endReason };
}

/** Follows provider events until one ends the call; undefined after MAX_CALL_MS. */
export function waitForEnd(ctx: CallContext): Promise<ConversationOutcome | undefined> {
  return followEvents(ctx, MAX_CALL_MS);
}

/** From in-progress to the end of the call. */
export async function runConversation(ctx: CallContext): Promise<ConversationOutcome | CancelledOutcome> {
  if (ctx.input.type === 'web' || ctx.input.type === 'inbound') {
    // The browser (or the inbound caller) is connected already (the shell waited for
    // `answered`). A media edge that named its task queue runs the script's speech; otherwise
    // its events tell the rest.
    if (ctx.mediaTaskQueue) return runMediaConversation(ctx, ctx.mediaTaskQueue);
    return (await waitForEnd(ctx)) ?? { status: 'failed', endReason: 'call_timeout' };
  }
  let placed;
  try {
    placed = ctx.waitForDialToken ? await placePacedCall(ctx.input.callId) : await placeCall({ callId: ctx.input.callId, dialTokenAt: ctx.dialTokenAt });
  } catch {
    return { status: 'failed', endReason: 'provider_error' };
  }
  if (placed.mode === 'simulated') return playSimulatedCall(ctx, placed.plan, placed.context);
  if (placed.mode === 'media_edge') return runTrunkCall(ctx, placed.dial);
  return (await followEvents(ctx, MAX_CALL_MS)) ?? { status: 'failed', endReason: 'call_timeout' };
}
