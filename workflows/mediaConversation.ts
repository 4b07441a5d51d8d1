/**
 * A call whose media a media edge holds (a browser call today, a carrier's media stream
 * later): the script runs here, in the call workflow, and every spoken line and every
 * answer is an activity on the edge instance that holds the call (its own task queue,
 * named in the call's `answered` event). docs/media-edge.md, "The call workflow".
 *
 * How it ends:
 *   the script ends               → hangUpCaller (the edge sends BYE) → completed / agent_hangup
 *   the caller hangs up           → the edge's `ended` event, or CallerHungUp from an activity → hang-up / User Hangup
 *   media lost, or the edge gone  → CallMediaLost, a heartbeat or schedule-to-start timeout → dropout / connection_lost
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  patched,
  proxyActivities,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { ConversationTurn, SystemNote } from '../src/domain/calls.js';
import { CALL_MEDIA_LOST, CALLER_HUNG_UP, type AnswerHint, type EdgeSystemNotes, type MediaEdgeActivities } from './contracts.js';
import type { MediaEdgeTransferActivities } from './transferContracts.js';
import type { MediaEdgeConverseActivities } from './converseContracts.js';
import { MAX_CALL_MS, waitForEnd, type CallContext, type ConversationOutcome } from './conversation.js';
import { runScript, type ScriptVoice, type VoiceQuestion } from './scriptRunner.js';

/** How long the caller has to start answering once a prompt has played. */
export const ANSWER_TIMEOUT_MS = 8_000;
/** Said before the question when the caller stayed silent the first time (one reprompt). */
export const REPROMPT_PREFIX = "Sorry, I didn't catch that.";
/** An edge that does not pick up an activity within this long is gone (its calls end dropout). */
export const EDGE_PICKUP_TIMEOUT = '10 seconds';
/** An edge activity that stops heartbeating this long is gone with its edge. */
export const EDGE_HEARTBEAT_TIMEOUT = '5 seconds';

export const CALLER_HANGUP_OUTCOME: ConversationOutcome = { status: 'hang-up', endReason: 'User Hangup' };
export const MEDIA_LOST_OUTCOME: ConversationOutcome = { status: 'dropout', endReason: 'connection_lost' };

function edgeActivities(taskQueue: string) {
  return proxyActivities<MediaEdgeActivities>({
    taskQueue,
    scheduleToStartTimeout: EDGE_PICKUP_TIMEOUT,
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: EDGE_HEARTBEAT_TIMEOUT,
    // Speech reaches a person: never played twice. A failure means the media is gone.
    retry: { maximumAttempts: 1 },
  });
}

/**
 * The transfer: it lasts as long as the bridged conversation, heartbeating. It is attempted
 * once and never retried, so the person is dialled at most once per transfer step: a retry
 * could not rejoin the first attempt's legs anyway (the edge that held them is the one that
 * failed), and the workflow's history keeps the one result for every replay. The edge's one
 * activity dials, announces, bridges and hangs up; no second activity reaches the person.
 */
function transferActivities(taskQueue: string) {
  return proxyActivities<MediaEdgeTransferActivities>({
    taskQueue,
    scheduleToStartTimeout: EDGE_PICKUP_TIMEOUT,
    startToCloseTimeout: MAX_CALL_MS,
    heartbeatTimeout: EDGE_HEARTBEAT_TIMEOUT,
    retry: { maximumAttempts: 1 },
  });
}

/**
 * A converse step's model turn (docs/agents.md): it speaks, so like every line it is never
 * retried; a worker restart meanwhile does not repeat it (the edge goes on and the result
 * lands in the history), and the edge's loss is the call's. Its bound covers the model's
 * answer, the words said and the caller's answer.
 */
function converseActivities(taskQueue: string) {
  return proxyActivities<MediaEdgeConverseActivities>({
    taskQueue,
    scheduleToStartTimeout: EDGE_PICKUP_TIMEOUT,
    startToCloseTimeout: '3 minutes',
    heartbeatTimeout: EDGE_HEARTBEAT_TIMEOUT,
    retry: { maximumAttempts: 1 },
  });
}

/**
 * Whether an edge activity that failed had begun on the call: the caller's hang-up or the
 * media's loss reached it mid-line (the edge says so in the failure's details), or the
 * call's end cancelled it in flight. Its line was heard, at least in part.
 */
function lineBegun(err: unknown): boolean {
  if (isCancellation(err)) return true;
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return false;
  const { type, details } = err.cause;
  if (type !== CALLER_HUNG_UP && type !== CALL_MEDIA_LOST) return false;
  return (details?.[0] as { started?: boolean } | undefined)?.started !== false;
}

/** Patch id: lines the call ended during are written to the transcript (older histories replay without it). */
export const LINES_SAID_AT_END_PATCH = 'media-lines-said-at-end';

/** Patch id: a converse turn's words the caller heard before the call ended (the edge's failure says them) are written to the transcript. */
export const CONVERSE_SAID_AT_END_PATCH = 'converse-said-at-end';

/** What the caller heard of a converse turn the call ended during, as the edge's failure says it. */
function saidBeforeFailure(err: unknown): string | undefined {
  if (!lineBegun(err) || !(err instanceof ActivityFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  const said = (err.cause.details?.[0] as { said?: unknown } | undefined)?.said;
  return typeof said === 'string' && said.trim() ? said : undefined;
}

/**
 * Speaks and listens through the edge; one reprompt when the caller stays silent. When the
 * call ends during a step, the step's lines said so far go to `saidBeforeEnd` (the script
 * runner writes a step's turns only once it completes) before the failure goes on. System
 * Notes an answer of the edge carries go to `edgeNotes`.
 */
function edgeVoice(
  edge: ReturnType<typeof edgeActivities>,
  transfers: ReturnType<typeof transferActivities>,
  converse: ReturnType<typeof converseActivities>,
  /** The team's number, the caller ID a transfer shows the person. */
  teamNumber: string | null,
  callId: string,
  saidBeforeEnd: (lines: string[]) => Promise<void>,
  edgeNotes: (notes: SystemNote[]) => void,
): ScriptVoice {
  async function speaking<T extends EdgeSystemNotes>(lines: string[], run: () => Promise<T>): Promise<T> {
    try {
      const answer = await run();
      if (answer.systemNotes?.length) edgeNotes(answer.systemNotes);
      return answer;
    } catch (err) {
      if (lineBegun(err) && patched(LINES_SAID_AT_END_PATCH)) await saidBeforeEnd(lines);
      throw err;
    }
  }
  return {
    async say(stepId, text) {
      await speaking([text], () => edge.speakToCaller({ callId, stepId, text }));
    },
    async ask(q: VoiceQuestion) {
      const hint: AnswerHint = { expect: q.expect, ...(q.phrases ? { phrases: q.phrases } : {}), ...(q.input ? { input: q.input } : {}) };
      const first = await speaking([q.question], () => edge.askCaller({ callId, stepId: q.stepId, prompt: q.question, hint, noSpeechTimeoutMs: ANSWER_TIMEOUT_MS }));
      if (first.kind === 'utterance') return { text: first.text, reprompts: [], ...(first.keyed ? { keyed: true } : {}) };
      const reprompt = `${REPROMPT_PREFIX} ${q.question}`;
      const second = await speaking([q.question, reprompt], () =>
        edge.askCaller({ callId, stepId: q.stepId, prompt: reprompt, hint, noSpeechTimeoutMs: ANSWER_TIMEOUT_MS }),
      );
      if (second.kind === 'utterance') return { text: second.text, reprompts: [reprompt], ...(second.keyed ? { keyed: true } : {}) };
      return { text: null, reprompts: [reprompt] };
    },
    async transfer(request) {
      // The announcement is said to the person, not the caller: no caller line to keep if the call ends.
      return transfers.transferCaller({ callId, ...request, ...(teamNumber ? { from: teamNumber } : {}) });
    },
    async converse(turn) {
      try {
        const answer = await converse.converseTurn({ callId, ...turn, noSpeechTimeoutMs: ANSWER_TIMEOUT_MS });
        if (answer.systemNotes?.length) edgeNotes(answer.systemNotes);
        return answer;
      } catch (err) {
        // The model's words are known only to the edge: its failure carries what the caller heard.
        const said = saidBeforeFailure(err);
        if (said !== undefined && patched(CONVERSE_SAID_AT_END_PATCH)) await saidBeforeEnd([said]);
        throw err;
      }
    },
  };
}

/**
 * Why an edge activity failed, in terms of the call: the caller left, or the media is gone.
 * `cause` says what happened; `note` adds what it does to a call still talking (it ends dropout).
 */
export function outcomeOfEdgeFailure(err: unknown): { outcome: ConversationOutcome; cause: string; note: string } | undefined {
  if (!(err instanceof ActivityFailure)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === CALLER_HUNG_UP) return { outcome: CALLER_HANGUP_OUTCOME, cause: '', note: '' };
  let what: string;
  if (cause instanceof ApplicationFailure && cause.type === CALL_MEDIA_LOST) what = `The call's media was lost (${cause.message})`;
  else if (cause instanceof TimeoutFailure) {
    what = `The media edge holding the call stopped answering (${err.activityType} ${cause.timeoutType === 'SCHEDULE_TO_START' ? 'was never picked up' : `timed out: ${cause.timeoutType ?? 'unknown'}`})`;
  } else what = `The media edge failed during ${err.activityType}: ${cause?.message ?? err.message}`;
  return { outcome: MEDIA_LOST_OUTCOME, cause: what, note: `${what}; the call ended as dropout.` };
}

/** Patch id: transcript and note writes go behind the conversation (older histories replay awaiting each). */
export const WRITES_BEHIND_PATCH = 'media-writes-behind';

/**
 * The call's transcript turns and System Notes, written in order behind the conversation:
 * each write is queued after the one before, and (when `behind`) the script goes on without
 * waiting for it, so the next line's activity is scheduled in the same workflow task as the
 * write instead of one activity round trip later: that round trip was on every turn's
 * latency. Writes finish even when the script's scope is cancelled: what was said stays said.
 */
class CallWrites {
  private last: Promise<void> = Promise.resolve();
  private failure: unknown;

  constructor(private readonly behind: boolean) {}

  write(run: () => Promise<void>): Promise<void> {
    const done = this.last.then(() => CancellationScope.nonCancellable(run));
    this.last = done.catch((err: unknown) => {
      this.failure ??= err;
    });
    return this.behind ? Promise.resolve() : done;
  }

  /** Waits for every write so far; throws the first that failed. */
  async flushed(): Promise<void> {
    await this.last;
    if (this.failure) throw this.failure;
  }
}

/**
 * Runs the call's script over the edge's media until the script ends, the caller hangs up
 * or the media is lost; returns the call's outcome once everything said is written.
 */
export async function runMediaConversation(ctx: CallContext, taskQueue: string): Promise<ConversationOutcome> {
  const edge = edgeActivities(taskQueue);
  const context = await ctx.loadContext();
  const { id, type, from_number, to_number, participant_identity, team_id } = context.call;
  const note = (text: string): SystemNote => ({ at: new Date().toISOString(), kind: 'media', text });

  const writes = new CallWrites(patched(WRITES_BEHIND_PATCH));
  const appendTurns = (turns: ConversationTurn[]) => writes.write(() => ctx.appendTurns(turns));
  // The script runs in a scope the caller's hang-up can cancel; the edge's `ended` event races it.
  const scriptScope = new CancellationScope();
  const script = scriptScope.run(() =>
    runScript(
      context.script.checked,
      { contact: context.contact, objects: context.objects, call: { id, type, from_number, to_number, participant_identity, team_id, script_id: context.script.id } },
      {
        callId: ctx.input.callId,
        appendTurns,
        appendSystemNotes: (notes) => writes.write(() => ctx.appendSystemNotes(notes)),
        voice: edgeVoice(
          edge,
          transferActivities(taskQueue),
          converseActivities(taskQueue),
          // A browser-only call has no number: the team's (loaded with the context) shows instead of anonymous.
          context.callerNumber ?? (type === 'inbound' ? to_number : from_number),
          ctx.input.callId,
          (lines) => appendTurns(lines.map((text) => ({ role: 'agent', text }))),
          (notes) => void writes.write(() => ctx.appendSystemNotes(notes)),
        ),
      },
    ).then(
      (run) => ({ kind: 'script' as const, run }),
      (err: unknown) => ({ kind: 'error' as const, err }),
    ),
  );
  const hangUpWatch = new CancellationScope();
  const endedByEdge = hangUpWatch.run(() => waitForEnd(ctx)).then(
    (outcome) => ({ kind: 'ended' as const, outcome }),
    () => ({ kind: 'watch_stopped' as const }),
  );

  const raced = await Promise.race([script, endedByEdge]);
  if (raced.kind === 'ended') {
    scriptScope.cancel();
    await script;
    await writes.flushed();
    return raced.outcome ?? { status: 'failed', endReason: 'call_timeout' };
  }
  const first = raced.kind === 'watch_stopped' ? await script : raced;
  hangUpWatch.cancel();
  await endedByEdge;

  if (first.kind === 'error') {
    await writes.flushed();
    if (isCancellation(first.err)) return CALLER_HANGUP_OUTCOME;
    const failure = outcomeOfEdgeFailure(first.err);
    if (!failure) throw first.err;
    if (failure.note) await ctx.appendSystemNotes([note(failure.note)]);
    return failure.outcome;
  }

  // The script is over: the agent hangs up (the last writes go on meanwhile). A caller who left meanwhile is fine.
  let hangUpFailure: string | undefined;
  try {
    await edge.hangUpCaller({ callId: ctx.input.callId });
  } catch (err) {
    const failure = outcomeOfEdgeFailure(err);
    // The script is over, so the call keeps its end: the note says why the line was not closed, not "dropout".
    if (failure && failure.outcome !== CALLER_HANGUP_OUTCOME) hangUpFailure = failure.cause;
  }
  await writes.flushed();
  if (hangUpFailure) await ctx.appendSystemNotes([note(`The agent's hang-up did not reach the caller: ${hangUpFailure}; the script had already run to its end.`)]);
  // The script could not run to its end (docs/calls.md: provider_error); a script_error System Note says why.
  if (!first.run.completed) return { status: 'failed', endReason: 'provider_error' };
  // A transfer step handed the caller to a person (REFER taken, or the bridge over): docs/calls.md.
  if (first.run.transferred) return { status: 'completed', endReason: 'transferred' };
  return { status: 'completed', endReason: 'agent_hangup' };
}
