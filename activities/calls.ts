/**
 * Activities of the call workflow (workflows/callWorkflow.ts), which runs them as local
 * activities (short row writes: a marker in the history each). Each one is idempotent: the
 * row transitions are conditional updates, appends are keyed by their start index, slot
 * requests and releases may repeat, and the provider is asked to dial once per call id, so
 * a retried activity never writes twice. Each one also makes the progress change it causes.
 */
import { ApplicationFailure, asyncLocalStorage as activityContext } from '@temporalio/activity';
import { createCallAnalyser } from '../src/analysis/index.js';
import {
  appendConversationTurns,
  appendNoteToEndedCall,
  appendSystemNotes,
  completeCall as completeCallRow,
  findCallById,
  recordConversation,
  saveCallAnalysis,
  setCallProgress,
  setProviderCall,
  type CallRecord,
} from '../src/db/repositories/calls.js';
import { findContactById } from '../src/db/repositories/contacts.js';
import { findTeamFirstPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { findTeamScript } from '../src/db/repositories/scripts.js';
import { parseScriptDefinition, type CheckedScript } from '../src/domain/scripts/definition.js';
import { contactFieldsUsed, objectiveNames, structuredDataKeys } from '../src/domain/scripts/steps.js';
import type { CallProgress, ConversationTurn, SystemNote, TerminalStatus } from '../src/domain/calls.js';
import { objectDataForContacts } from '../src/services/contacts.js';
import { releaseSlotAndGrant, requestCallSlot } from '../src/services/callSlots.js';
import { reconcileCalls as reconcileCallRows, type ReconcileReport } from '../src/services/calls.js';
import { createRecordingStore, recordingKey } from '../src/recordings/index.js';
import { awaitRecording, recordingUrl } from '../src/services/recordings.js';
import { createVoiceProvider, type PlacedCall } from '../src/telephony/index.js';
import { callEvent, withWebhookEvents } from '../src/services/webhookEvents.js';
import { markCallStarted } from '../src/services/callAdmission.js';
import { callAnalysisDuration, countCallEnded } from '../src/metrics/callMetrics.js';
import { NO_NUMBER_FAILURE, NOT_FOUND_FAILURE } from '../workflows/contracts.js';
import { claimProviderDial, dialClaimId, priorDialAnswer, recordProviderDialAnswer } from './dialClaim.js';
import { dialInTokenSlot, pacingKey, waitForDialToken } from './dialing.js';
import type { ActivityDeps } from './index.js';

/** What the script runtime needs about a call: its contact, script and linked objects. */
export interface CallContextData {
  call: {
    id: string;
    team_id: string;
    type: string;
    from_number: string | null;
    to_number: string | null;
    participant_identity: string | null;
    conversation_length: number;
    system_notes_length: number;
  };
  contact: Record<string, unknown>;
  /** The script checked here (parseScriptDefinition), so the workflow needs no schema of its own. */
  script: { id: string; name: string; checked: CheckedScript };
  /** The contact's linked objects by type name (object_data), overlaid with the call's objects map. */
  objects: Record<string, unknown>;
  /** DEFAULT_PHONE_REGION, for the answers the script reads (dates, numbers). */
  region: string;
  /**
   * The caller ID of a call the edge places for this one (a transfer's bridge): the call's own
   * number (for an inbound call, the number called), else the team's first number (a
   * browser-only call has none); absent when the team has no number.
   */
  callerNumber?: string;
}

/** What placeCall answers: the provider's answer and, for a simulated call, the context the script runs on (loaded once). */
export type PlaceCallResult = PlacedCall & { context?: CallContextData };

function notFound(what: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`${what} not found`, NOT_FOUND_FAILURE);
}

export function createCallActivities(deps: ActivityDeps) {
  const provider = deps.voiceProvider ?? createVoiceProvider(deps.config);
  const analyser = deps.callAnalyser ?? createCallAnalyser(deps.config);
  const recordings = deps.recordings ?? createRecordingStore(deps.config);
  /** Dial attempts running in this process, by call and claim (placeCallNow). */
  const dialsInFlight = new Map<string, Promise<PlaceCallResult | { waiting: true }>>();

  /**
   * The dial, shared by placeCall and placePacedCall. Carrier pacing (docs/calls.md): the
   * dial goes out inside the slot of its dial token, taken before (`dialTokenAt`) or waited
   * for here (`paced`, after everything else is loaded, so the dial follows the token at once).
   */
  async function placeCallNow(input: { callId: string; dialTokenAt?: string }, paced?: CallRecord): Promise<PlaceCallResult | { waiting: true }> {
    // A retried attempt of this run joins the attempt still running here (its local activity
    // timed out under load): one dial, and the retry answers with its result.
    const claimId = dialClaimId();
    const key = `${input.callId}:${claimId}`;
    const running = dialsInFlight.get(key);
    if (running) {
      try {
        return await running;
      } catch {
        // It failed (cancelled with its timeout, say): this attempt goes on, and dials only if that one had not claimed.
      }
    }
    const dial = dialOnce(input, claimId, paced).finally(() => dialsInFlight.delete(key));
    dialsInFlight.set(key, dial);
    return dial;
  }

  async function dialOnce(input: { callId: string; dialTokenAt?: string }, claimId: string, paced?: CallRecord): Promise<PlaceCallResult | { waiting: true }> {
    const { definition, ...context } = await loadContext(input.callId);
    // A retried attempt whose earlier one dialled (and finished after its timeout) goes on with its answer.
    const prior = await priorDialAnswer(deps.pool, input.callId, claimId, provider.name);
    if (prior) return dialled(input.callId, prior, context);
    if (!context.call.to_number) throw ApplicationFailure.nonRetryable('call has no number to dial', NO_NUMBER_FAILURE);
    const key = input.dialTokenAt || paced ? await pacingKey(deps, context.call) : null;
    let tokenAt = input.dialTokenAt ? Date.parse(input.dialTokenAt) : undefined;
    if (paced && key) {
      const at = await waitForDialToken(deps, paced, key, 'in-progress');
      if (at === null) return { waiting: true };
      tokenAt = at;
    }
    if (key && tokenAt !== undefined) await dialInTokenSlot(deps, key, tokenAt);
    const { id, type, from_number, to_number, participant_identity, team_id } = context.call;
    // Last before the dial: a retry after this worker dies mid-dial must not dial again.
    await claimProviderDial(deps.pool, id, provider.name, claimId);
    const placed = await provider.placeCall({
      callId: context.call.id,
      teamId: context.call.team_id,
      from: context.call.from_number,
      to: context.call.to_number,
      contact: context.contact,
      script: { id: context.script.id, name: context.script.name, definition },
      objects: context.objects,
      call: { id, type, from_number, to_number, participant_identity, team_id, script_id: context.script.id },
    });
    await recordProviderDialAnswer(deps.pool, id, provider.name, claimId, placed);
    return dialled(input.callId, placed, context);
  }

  /** What follows the provider's answer (again, for a retried attempt: each write is idempotent). */
  async function dialled(callId: string, placed: PlacedCall, context: CallContextData): Promise<PlaceCallResult> {
    await setProviderCall(deps.pool, callId, placed.provider, placed.providerCallId);
    if (placed.mode !== 'simulated') return placed;
    await setCallProgress(deps.pool, callId, 'in-progress', 'ringing');
    return { ...placed, context };
  }

  /** recording_url: GET /api/v1/recordings/{call_id} when the call has a recording, else null. */
  async function recordingUrlOf(call: CallRecord): Promise<string | null> {
    // A simulated call has no audio: an answered one is spoken from its transcript when first read.
    if (call.provider === 'simulator') return call.conversation.length > 0 ? recordingUrl(deps.config, call.id) : null;
    // Only a call that connected can have been recorded.
    if (!call.actual_time) return null;
    const found = await awaitRecording(recordings, recordingKey(call.team_id, call.id), RECORDING_WAIT_MS);
    return found ? recordingUrl(deps.config, call.id) : null;
  }

  async function requireCall(callId: string): Promise<CallRecord> {
    const call = await findCallById(deps.pool, callId);
    if (!call) throw notFound(`call ${callId}`);
    return call;
  }

  /** The call's context, and its script as stored (for the voice provider). */
  async function loadContext(callId: string): Promise<CallContextData & { definition: unknown }> {
    const call = await requireCall(callId);
    const ownNumber = call.type === 'inbound' ? call.to_number : call.from_number;
    const [contact, script, objectData, callerNumber] = await Promise.all([
      findContactById(deps.pool, call.team_id, call.contact_id),
      findTeamScript(deps.pool, call.team_id, call.script_id),
      objectDataForContacts(deps.pool, call.team_id, [call.contact_id]),
      ownNumber ?? findTeamFirstPhoneNumber(deps.pool, call.team_id),
    ]);
    if (!contact) throw notFound(`contact ${call.contact_id}`);
    if (!script) throw notFound(`script ${call.script_id}`);
    const { created_at: _c, updated_at: _u, ...contactFields } = contact;
    return {
      call: {
        id: call.id,
        team_id: call.team_id,
        type: call.type,
        from_number: call.from_number,
        to_number: call.to_number,
        participant_identity: call.participant_identity,
        conversation_length: call.conversation.length,
        system_notes_length: call.system_notes.length,
      },
      contact: contactFields,
      script: { id: script.id, name: script.name, checked: parseScriptDefinition(script.definition) },
      objects: { ...(objectData.get(call.contact_id) ?? {}), ...(call.objects ?? {}) },
      region: deps.config.DEFAULT_PHONE_REGION,
      ...(callerNumber ? { callerNumber } : {}),
      definition: script.definition,
    };
  }

  return {
    /**
     * A due phone call asks the slot dispatcher (src/services/callSlots.ts) for its slot,
     * first come first served under the team ceiling: granted, waiting (progress
     * waiting_for_slot; the grant arrives as the slotGranted signal), or not_scheduled
     * (cancelled meanwhile; a slot it held goes to the next call in line). Safe to repeat.
     */
    async requestCallSlot(input: { callId: string; teamId: string }): Promise<{ outcome: 'granted' | 'waiting' | 'not_scheduled'; status: string }> {
      const { outcome, status } = await requestCallSlot(deps, input.teamId, input.callId);
      return { outcome, status };
    },

    /** Gives back the slot of a call cancelled after its grant: it goes to the next call in line. */
    async releaseCallSlot(input: { callId: string }): Promise<void> {
      await releaseSlotAndGrant(deps, input.callId);
    },

    /** scheduled → in-progress with actual_time and `progress`; returns the status the call has afterwards. */
    async markCallInProgress(input: { callId: string; actualTime: string; progress: CallProgress }): Promise<{ status: string }> {
      return { status: (await markCallStarted(deps, input.callId, new Date(input.actualTime), input.progress)).status };
    },

    async setCallProgress(input: { callId: string; status: string; progress: CallProgress }): Promise<void> {
      await setCallProgress(deps.pool, input.callId, input.status, input.progress);
    },

    /** Contact, script and linked objects of the call (for the conversation / script runtime). */
    async loadCallContext(input: { callId: string }): Promise<CallContextData> {
      const { definition: _stored, ...context } = await loadContext(input.callId);
      return context;
    },

    /**
     * Dials through the voice provider (idempotent per call id at the provider). A simulated
     * call is ringing from here on (its progress says so), and its answer carries the context
     * the script runs on, so the workflow loads it once. With `dialTokenAt` (carrier pacing),
     * the dial goes out inside its token's slot.
     */
    async placeCall(input: { callId: string; dialTokenAt?: string }): Promise<PlaceCallResult> {
      return (await placeCallNow(input)) as PlaceCallResult;
    },

    /**
     * placeCall for a call that found no free dial token (carrier pacing): waits for one here,
     * in the dial activity, with progress waiting_for_dial_slot, then dials at once, inside
     * the token's slot. Answers `waiting` when none came within DIAL_TOKEN_WAIT_MS (the
     * workflow asks again).
     */
    async placePacedCall(input: { callId: string }): Promise<PlaceCallResult | { waiting: true }> {
      const call = await requireCall(input.callId);
      if (call.status !== 'in-progress') throw ApplicationFailure.nonRetryable(`call ${input.callId} is ${call.status}, not in progress`, NOT_FOUND_FAILURE);
      const placed = await placeCallNow({ callId: input.callId }, call);
      if (!('waiting' in placed) && placed.mode !== 'simulated') await setCallProgress(deps.pool, input.callId, 'in-progress', 'dialling');
      return placed;
    },

    /**
     * What a stretch of the conversation produced, in one write: the progress (e.g.
     * in_conversation once answered), turns from index turnStart and System Notes from
     * noteStart (a retry writes nothing twice).
     */
    async recordConversation(input: {
      callId: string;
      progress?: CallProgress;
      turnStart: number;
      turns: ConversationTurn[];
      noteStart: number;
      notes: SystemNote[];
    }): Promise<void> {
      await recordConversation(deps.pool, input.callId, input);
    },

    /** Appends conversation turns from index startIndex (a retry writes nothing twice). */
    async appendTranscriptTurns(input: { callId: string; startIndex: number; turns: ConversationTurn[] }): Promise<void> {
      await appendConversationTurns(deps.pool, input.callId, input.startIndex, input.turns);
    },

    /** Appends System Notes from index startIndex (a retry writes nothing twice). */
    async appendSystemNotes(input: { callId: string; startIndex: number; notes: SystemNote[] }): Promise<void> {
      await appendSystemNotes(deps.pool, input.callId, input.startIndex, input.notes);
    },

    /**
     * The call's one terminal status with end_time, duration and end_reason; frees its slot,
     * which goes straight to the team's next call in line. Returns the status the call ended
     * with (the first one written wins).
     */
    async completeCall(input: { callId: string; status: TerminalStatus; endReason: string; endTime: string }): Promise<{ status: string; endReason: string | null }> {
      const progress = input.status === 'cancelled' ? 'done' : 'analysing';
      const { call, changed } = await withWebhookEvents(deps, async (tx) => {
        const ended = await completeCallRow(tx, input.callId, { status: input.status, endReason: input.endReason, endTime: new Date(input.endTime), progress });
        return { result: ended, events: ended.changed ? [callEvent('call.ended', ended.call)] : [] };
      });
      if (changed) countCallEnded(call);
      await releaseSlotAndGrant(deps, input.callId);
      return { status: call.status, endReason: call.end_reason };
    },

    /** Post-call analysis of a terminal call: fills the result fields. */
    async analyseCall(input: { callId: string }): Promise<void> {
      const timer = callAnalysisDuration.startTimer();
      const call = await requireCall(input.callId);
      const [contact, script] = await Promise.all([
        findContactById(deps.pool, call.team_id, call.contact_id),
        findTeamScript(deps.pool, call.team_id, call.script_id),
      ]);
      const objectives = objectiveNames(script?.definition);
      // Outside an activity (a test calling it directly) there is no attempt: the analyser's last chance.
      const activity = activityContext.getStore();
      const analysis = await analyser.analyse(
        {
          callId: call.id,
          status: call.status,
          endReason: call.end_reason,
          durationSeconds: call.duration,
          turns: call.conversation,
          systemNotes: call.system_notes,
          objectives,
          contact: contact ?? {},
          scriptName: script?.name ?? '',
          recordingUrl: await recordingUrlOf(call),
          structuredData: structuredDataKeys(script?.definition),
          contactFields: contactFieldsUsed(script?.definition),
        },
        { attempt: activity?.info.attempt, signal: activity?.cancellationSignal },
      );
      await withWebhookEvents(deps, async (tx) => {
        for (const note of analysis.systemNotes ?? []) await appendNoteToEndedCall(tx, call.id, note);
        const analysed = await saveCallAnalysis(tx, call.id, analysis);
        return { result: undefined, events: analysed ? [callEvent('call.analyzed', analysed)] : [] };
      });
      timer();
    },

    /** One pass of the reconciler (docs/calls.md). */
    async reconcileCalls(input: { startAfterMs: number; staleAfterMs: number }): Promise<ReconcileReport> {
      return reconcileCallRows({ pool: deps.pool, temporal: deps.temporal, config: deps.config, logger: deps.logger, liveTaskQueue: deps.liveTaskQueue }, input);
    },
  };
}

/**
 * How long analysis looks again for a recording the media edge is still writing (it writes
 * when the call ends; analysis runs 3 s later): after 0.25, 0.75 and 1.75 s more.
 */
const RECORDING_WAIT_MS = [250, 500, 1000];

export type CallActivities = ReturnType<typeof createCallActivities>;
