/**
 * The script runner: runs a script's steps inside the call workflow (docs/scripts.md).
 *
 * State (variables, transcript, the current step) lives in the workflow, so a call's script
 * survives a worker restart by replay. Steps that do I/O are activities (say and ask go
 * through the host's voice: the simulated callee, or the media edge that speaks and
 * listens; webhook: the HTTP request); set, branch and tool (Auth Check, pure) run in the
 * workflow. Every step's turns and System Notes go to the host as it goes (which writes
 * them, or holds them until the next I/O step or the end: host.flush), and each step's
 * outcome is upserted into the workflow memo `script_step`, so the history in the Temporal
 * UI shows what happened at each step: one event per step, or, for a voice that answers
 * within the workflow task (the simulator's), one event for the steps run together, which
 * also lists them in `script_steps`.
 */
import { proxyActivities, upsertMemo } from '@temporalio/workflow';
import type { ScriptActivities } from '../activities/scripts.js';
import { authCheckSystemNote, extractAnswer, runAuthCheck, type AnswerKind, type AuthCheckVariables, type TranscriptTurn } from '../src/domain/authCheck/index.js';
import type { ConversationTurn, SystemNote } from '../src/domain/calls.js';
// Types only: the script's schemas (zod) stay out of the workflow bundle, whose modules every
// workflow instance evaluates again; a script is checked where it is loaded (CheckedScript).
import type { CheckedScript, ScriptDefinition, ScriptStep } from '../src/domain/scripts/definition.js';
import {
  collectStructuredData,
  evaluateCondition,
  evaluateObjectives,
  followingStepId,
  initialScope,
  renderJson,
  renderSpeech,
  SCRIPT_RESULT_NOTE_KIND,
  type ObjectiveResult,
  type ScriptCallData,
  type ScriptResultData,
} from '../src/domain/scripts/steps.js';
import { getVariable, renderValue, setVariable, type Scope } from '../src/domain/scripts/templates.js';
import { simulatedTransferAnswer } from '../src/domain/scripts/transfer.js';
import type { TransferCallerResult, TransferMode } from './transferContracts.js';
import { addCalleeToDoNotCall } from './dialingPolicy.js';
import { modelBudget, runConverseStep, type ConverseTurn } from './converseStep.js';
import { MODEL_LIMIT_DEFAULTS } from '../src/domain/scripts/modelUsage.js';

const { scriptRuntimeSettings, simulateCalleeAnswer } = proxyActivities<ScriptActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 5 },
});
// The activity waits at most the step's own timeout (≤ 30 s); a retry only follows a lost worker.
const { callWebhook } = proxyActivities<ScriptActivities>({
  startToCloseTimeout: '45 seconds',
  retry: { initialInterval: '2 seconds', maximumAttempts: 2 },
});

/** A script stops after this many steps (a loop that never reaches an end). */
export const MAX_SCRIPT_STEPS = 200;

/** What the memo shows of a step run: `script_step`, and each entry of `script_steps`. */
export interface ScriptStepMemo {
  n: number;
  id: string;
  type: string;
  outcome: Record<string, unknown>;
}

/** What an ask step hands the voice: the question, how to hear the answer, and what a simulated callee knows. */
export interface VoiceQuestion {
  stepId: string;
  question: string;
  variable: string;
  expect: AnswerKind;
  phrases?: string[];
  /** Speech, keypad digits or either (absent) answer it: the ask step's `input`. */
  input?: 'dtmf' | 'speech' | 'both';
  /** contact.*, objects.* and call.* of the call (a simulated callee answers from them). */
  scope: Scope;
  simulatedAnswers: Record<string, string>;
  /** A voice that answers in the task calls this before it waits on the outside after all (the memo of the steps run so far goes out first). */
  beforeWait?: () => void;
}

/** What a transfer step hands the voice: the person to reach, how, and what to tell them. */
export interface VoiceTransfer {
  stepId: string;
  to: string;
  mode: TransferMode;
  announcement?: string;
  /** How long a bridge rings the person (the step's ring_timeout_seconds); absent: the edge's default. */
  ringTimeoutMs?: number;
}

/**
 * How the script reaches the callee: the simulator's callee (nothing is spoken, answers
 * come from an activity) or a media edge that really speaks and listens.
 */
export interface ScriptVoice {
  /** Speaks an agent line and returns once it has been played. */
  say(stepId: string, text: string): Promise<void>;
  /** Asks; `text` is null when the callee stayed silent (after the voice's own reprompt, if any); `keyed` when the answer was keyed on the keypad. */
  ask(question: VoiceQuestion): Promise<{ text: string | null; reprompts: string[]; keyed?: boolean }>;
  /** Hands the caller to a person (a transfer step); absent: the call cannot be transferred (the step fails). */
  transfer?(request: VoiceTransfer): Promise<TransferCallerResult>;
  /** One model turn of a converse step (docs/agents.md); absent: the call cannot hold a model conversation (the step fails). */
  converse?: ConverseTurn;
  /**
   * Says and asks without leaving the workflow task (the simulator's callee answering from its
   * plan): the steps run together, so their memo is upserted once for all of them, before a
   * step that waits on the outside (a webhook, an ask the plan does not answer) and at the end.
   */
  answersInTask?: boolean;
}

/** Where the runtime writes what happens, and how it speaks; the call workflow's seam provides it. */
export interface ScriptRuntimeHost {
  callId: string;
  appendTurns(turns: ConversationTurn[]): Promise<void>;
  appendSystemNotes(notes: SystemNote[]): Promise<void>;
  /**
   * Called before a step that waits on the outside (a webhook): a host that holds turns and
   * notes writes them now, so the call shows them while it waits.
   */
  flush?(): Promise<void>;
  /** DEFAULT_PHONE_REGION when the host knows it (with the call's context); else read by the scriptRuntimeSettings activity. */
  region?: string;
  /**
   * One memo upsert for the steps run in one workflow task when the voice answers in the task
   * (ScriptVoice.answersInTask). The call workflow's live runs ask for it through their input
   * (docs/scripts.md); other runs, and runs recorded before, upsert once per step.
   */
  memoOncePerTask?: boolean;
  /** Default: the simulated callee. */
  voice?: ScriptVoice;
}

/**
 * The simulator's callee: nothing is spoken. Its answers come with the simulator's plan
 * (`planned.answers` by step id: the callee answers from its own record, so they are known
 * before the call); an ask the plan does not answer, or one asked after the script changed
 * what the callee knows (its contact, objects or call fields), asks the
 * simulateCalleeAnswer activity.
 */
export function simulatedVoice(callId: string, planned?: { answers: Record<string, string>; data: ScriptCallData }): ScriptVoice {
  const start = planned ? initialScope(planned.data) : undefined;
  const known = start ? JSON.stringify({ contact: start.contact, objects: start.objects, call: start.call }) : undefined;
  return {
    answersInTask: true,
    say: async () => {},
    ask: async (q) => {
      const answer = planned?.answers[q.stepId];
      if (answer !== undefined && JSON.stringify(q.scope) === known) return { text: answer, reprompts: [] };
      q.beforeWait?.();
      const { text } = await simulateCalleeAnswer({
        callId,
        stepId: q.stepId,
        question: q.question,
        variable: q.variable,
        expect: q.expect,
        scope: q.scope,
        simulatedAnswers: q.simulatedAnswers,
      });
      return { text, reprompts: [] };
    },
    // The simulated person answers unless the target's last four digits say otherwise (docs/calls.md).
    transfer: async (request) => {
      const answer = simulatedTransferAnswer(request.to);
      return answer.reached ? { outcome: 'transferred', mode: request.mode } : { outcome: 'not_answered', reason: answer.reason, status: answer.status };
    },
  };
}

export interface ScriptRunResult {
  /** True when the script reached an end step (or ran past its last step). */
  completed: boolean;
  /** Why it did not complete: an invalid script, the step limit, or a converse step's model that failed with no on_error. */
  error?: 'invalid_script' | 'step_limit' | 'model_error';
  lastStepId?: string;
  stepsRun: number;
  objectives: ObjectiveResult[];
  structuredData: Record<string, unknown>;
  /** The last Auth Check run's variables, if the script ran one. */
  authCheck?: AuthCheckVariables;
  /** Set when a transfer step handed the caller to a person: the call ends completed / transferred. */
  transferred?: { to: string; mode: TransferMode };
  variables: Scope;
  transcript: TranscriptTurn[];
}


const now = () => new Date().toISOString();
const plainTurn = (t: TranscriptTurn): ConversationTurn => ({ role: t.role, text: t.text });

/** Runs a stored script, checked where it was loaded (parseScriptDefinition, in an activity), for one call; never throws for script problems. */
export async function runScript(parsed: CheckedScript, data: ScriptCallData, host: ScriptRuntimeHost): Promise<ScriptRunResult> {
  const scope = initialScope(data);
  const transcript: TranscriptTurn[] = [];
  if (!parsed.ok) {
    await host.appendSystemNotes([{ at: now(), kind: 'script_error', text: `The script is invalid and was not run: ${parsed.message}` }]);
    return { completed: false, error: 'invalid_script', stepsRun: 0, objectives: [], structuredData: {}, variables: scope, transcript };
  }
  const script: ScriptDefinition = parsed.script;
  const steps = new Map(script.steps.map((s) => [s.id, s]));
  const region = host.region ?? (await scriptRuntimeSettings()).region;
  const voice = host.voice ?? simulatedVoice(host.callId);
  const visited = new Set<string>();
  let current: ScriptStep | undefined = script.steps[0];
  let completed = false;
  let error: ScriptRunResult['error'];
  let lastStepId: string | undefined;
  let authCheck: AuthCheckVariables | undefined;
  let transferred: ScriptRunResult['transferred'];
  let stepsRun = 0;
  const budget = modelBudget(script.model_limits, MODEL_LIMIT_DEFAULTS);
  // Steps run in one workflow task show in one memo upsert: each upsert is a history event
  // and a visibility write of Temporal's (docs/benchmarks.md, "Where a call's CPU goes").
  const memoOncePerTask = host.memoOncePerTask === true && voice.answersInTask === true;
  const unshown: ScriptStepMemo[] = [];
  const showSteps = () => {
    if (unshown.length === 0) return;
    upsertMemo({ script_step: unshown[unshown.length - 1], script_steps: unshown.splice(0) });
  };

  while (current) {
    if (stepsRun >= MAX_SCRIPT_STEPS) {
      error = 'step_limit';
      await host.appendSystemNotes([{ at: now(), kind: 'script_error', text: `The script was stopped after ${MAX_SCRIPT_STEPS} steps without reaching an end step.` }]);
      break;
    }
    const step: ScriptStep = current;
    stepsRun++;
    visited.add(step.id);
    lastStepId = step.id;
    const turns: TranscriptTurn[] = [];
    const notes: SystemNote[] = [];
    let next: string | undefined = step.type === 'end' ? undefined : (step.next ?? followingStepId(script, step));
    let outcome: Record<string, unknown> = {};

    switch (step.type) {
      case 'say': {
        const text = renderSpeech(step.text, scope);
        await voice.say(step.id, text);
        turns.push({ role: 'agent', text });
        outcome = { said: text };
        break;
      }
      case 'ask': {
        const question = renderSpeech(step.question, scope);
        const heard = await voice.ask({
          stepId: step.id,
          question,
          variable: step.variable,
          expect: step.expect,
          phrases: step.phrases,
          ...(step.input ? { input: step.input } : {}),
          // What the callee knows: their own record, not the script's working variables.
          scope: { contact: scope.contact, objects: scope.objects, call: scope.call },
          simulatedAnswers: script.simulated_answers,
          ...(memoOncePerTask ? { beforeWait: showSteps } : {}),
        });
        turns.push({ role: 'agent', text: question }, ...heard.reprompts.map((text): TranscriptTurn => ({ role: 'agent', text })));
        if (heard.text !== null) turns.push({ role: 'user', text: heard.text, variable: step.variable, expect: step.expect });
        else notes.push({ at: now(), kind: 'no_answer', text: `The caller did not answer step "${step.id}"${heard.reprompts.length ? ' (silent after a reprompt)' : ''}; ${step.variable} is empty.`, data: { step_id: step.id } });
        // The transcript's turn is the digits as keyed; a System Note says they were keyed, not said.
        if (heard.text !== null && heard.keyed) notes.push({ at: now(), kind: 'keyed_answer', text: `The caller keyed the answer to step "${step.id}" on the keypad.`, data: { step_id: step.id } });
        const value = heard.text === null ? '' : extractAnswer(heard.text, step.expect, region);
        setVariable(scope, step.variable, value);
        setVariable(scope, `steps.${step.id}.answer`, value);
        outcome = { variable: step.variable, answer: value, ...(heard.text === null ? { silent: true } : {}) };
        break;
      }
      case 'webhook': {
        showSteps();
        await host.flush?.();
        const result = await callWebhook({
          callId: host.callId,
          stepId: step.id,
          method: step.method,
          url: renderValue(renderJson(step.url, scope)),
          headers: Object.fromEntries(Object.entries(step.headers).map(([k, v]) => [k, renderValue(renderJson(v, scope))])),
          body: step.body === undefined ? undefined : renderJson(step.body, scope),
          timeoutSeconds: step.timeout_seconds,
        });
        for (const prefix of ['webhook', `steps.${step.id}`]) {
          setVariable(scope, `${prefix}.response`, result.response);
          setVariable(scope, `${prefix}.status`, result.status);
          setVariable(scope, `${prefix}.ok`, result.ok);
        }
        if (!result.ok && step.on_error) next = step.on_error;
        notes.push({
          at: now(),
          kind: 'webhook',
          text: `Webhook ${step.method} step "${step.id}": ${result.ok ? `answered ${result.status}` : result.status ? `answered ${result.status} (failed)` : `failed: ${result.error}`}.`,
          data: { step_id: step.id, status: result.status, ok: result.ok, truncated: result.truncated, duration_ms: result.durationMs },
        });
        outcome = { status: result.status, ok: result.ok, ...(result.error ? { error: result.error } : {}) };
        break;
      }
      case 'tool': {
        const run = runAuthCheck(step.settings, { lookup: (name) => getVariable(scope, name), region, transcript });
        for (const write of run.writes) setVariable(scope, write.variable, write.value);
        // The tool owns the namespace: every variable is rewritten on every run.
        scope.auth_check = { ...run.variables };
        setVariable(scope, `steps.${step.id}.result`, run.result);
        authCheck = run.variables;
        const note = authCheckSystemNote(step.id, run);
        notes.push({ at: now(), kind: note.kind, text: note.summary, data: { ...note, variables: run.variables, writes: run.writes } });
        outcome = { status: run.variables.status, verified: run.variables.verified, matched_count: run.variables.matched_count, required_count: run.variables.required_count };
        break;
      }
      case 'branch': {
        const index = step.cases.findIndex((c) => evaluateCondition(c.when, scope, visited));
        next = index >= 0 ? step.cases[index].next : (step.default ?? next);
        outcome = { case: index >= 0 ? index : 'default', next: next ?? null };
        break;
      }
      case 'set': {
        const value = renderJson(step.value, scope);
        setVariable(scope, step.variable, value);
        outcome = { variable: step.variable, value };
        break;
      }
      case 'end': {
        if (step.text) {
          const text = renderSpeech(step.text, scope);
          await voice.say(step.id, text);
          turns.push({ role: 'agent', text });
        }
        completed = true;
        outcome = { ended: true };
        break;
      }
      case 'do_not_call': {
        if (step.text) {
          const text = renderSpeech(step.text, scope);
          await voice.say(step.id, text);
          turns.push({ role: 'agent', text });
        }
        // The callee's number joins the team's do-not-call list (source call, naming this call).
        const added = await addCalleeToDoNotCall(host.callId, step.reason);
        notes.push({
          at: now(),
          kind: 'do_not_call',
          text: added
            ? `The callee asked not to be called again (step "${step.id}"): their number is on the do-not-call list.`
            : `The callee asked not to be called again (step "${step.id}"); the call has no number to put on the do-not-call list.`,
          data: { step_id: step.id, added },
        });
        outcome = { do_not_call: added };
        break;
      }
      case 'converse': {
        // Each turn's lines are written as the turn ends (a conversation can be long), not with the step.
        const run = await runConverseStep(
          step,
          scope,
          voice.converse,
          budget,
          async (said) => {
            transcript.push(...said);
            await host.appendTurns(said.map(plainTurn));
          },
          (ended) => host.appendSystemNotes(ended),
        );
        notes.push(...run.notes);
        if (run.next !== undefined) next = run.next;
        outcome = run.outcome;
        if (run.failed) {
          error = 'model_error';
          next = undefined;
        }
        break;
      }
      case 'transfer': {
        const announcement = step.announcement ? renderSpeech(step.announcement, scope) : undefined;
        // What the call shows so far is written before a transfer that may last as long as the call.
        await host.flush?.();
        const result: TransferCallerResult = voice.transfer
          ? await voice.transfer({
              stepId: step.id,
              to: step.to,
              mode: step.mode,
              ...(announcement ? { announcement } : {}),
              ...(step.ring_timeout_seconds !== undefined ? { ringTimeoutMs: step.ring_timeout_seconds * 1000 } : {}),
            })
          : { outcome: 'not_answered', reason: 'this call cannot be transferred' };
        if (result.systemNotes?.length) notes.push(...result.systemNotes);
        setVariable(scope, `steps.${step.id}.transferred`, result.outcome === 'transferred');
        if (result.outcome === 'transferred') {
          const how =
            result.mode === 'refer'
              ? 'a SIP REFER the far end accepted'
              : result.referRefused !== undefined
                ? `a bridge through the media edge, after the REFER was refused (${result.referRefused})`
                : 'a bridge through the media edge';
          turns.push(...(result.turns ?? []));
          notes.push({
            at: now(),
            kind: 'transfer',
            text: `The caller was transferred to ${step.to} (step "${step.id}", ${how}).`,
            data: { step_id: step.id, to: step.to, mode: result.mode, ...(result.referRefused !== undefined ? { refer_refused: result.referRefused } : {}), ...(result.endedBy ? { ended_by: result.endedBy } : {}), ...(announcement ? { announcement } : {}) },
          });
          transferred = { to: step.to, mode: result.mode };
          next = undefined;
          outcome = { transferred: true, mode: result.mode };
        } else {
          if (step.on_failure) next = step.on_failure;
          notes.push({
            at: now(),
            kind: 'transfer_failed',
            text: `The transfer to ${step.to} (step "${step.id}") did not reach the person: ${result.reason}; the script goes on${next ? ` at step "${next}"` : ' to its end'}.`,
            data: { step_id: step.id, to: step.to, reason: result.reason, ...(result.status !== undefined ? { status: result.status } : {}) },
          });
          outcome = { transferred: false, reason: result.reason };
        }
        break;
      }
    }
    if (next === undefined && !error) completed = true;

    transcript.push(...turns);
    if (turns.length) await host.appendTurns(turns.map(plainTurn));
    if (notes.length) await host.appendSystemNotes(notes);
    const shown: ScriptStepMemo = { n: stepsRun, id: step.id, type: step.type, outcome };
    if (memoOncePerTask) unshown.push(shown);
    else upsertMemo({ script_step: shown });
    current = next === undefined ? undefined : steps.get(next);
  }
  showSteps();

  const objectives = evaluateObjectives(script, scope, visited, completed);
  const structuredData = collectStructuredData(script, scope);
  const met = objectives.filter((o) => o.met).length;
  await host.appendSystemNotes([
    {
      at: now(),
      kind: SCRIPT_RESULT_NOTE_KIND,
      text:
        `Script "${script.name}" ${completed ? `ran to its end at step "${lastStepId}"` : `stopped at step "${lastStepId ?? '-'}"`} after ${stepsRun} step${stepsRun === 1 ? '' : 's'}` +
        `${objectives.length ? `; ${met} of ${objectives.length} objective${objectives.length === 1 ? '' : 's'} met` : ''}.`,
      data: { completed, last_step: lastStepId ?? null, steps_run: stepsRun, objectives, structured_data: structuredData } satisfies ScriptResultData,
    },
  ]);
  return { completed, error, lastStepId, stepsRun, objectives, structuredData, authCheck, ...(transferred ? { transferred } : {}), variables: scope, transcript };
}
