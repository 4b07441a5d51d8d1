/**
 * What the API, the CLI and the workflows share: workflow-id builders, activity failure
 * types, and signal / update / query definitions. Code outside workflows/ imports only
 * this file from here.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { SystemNote } from '../src/domain/calls.js';
import type { CallingWindow } from '../src/domain/callingWindows.js';
import type { HookAutomation, HookAutomationKind } from '../src/domain/hookAutomation.js';
import type { RetryPolicy } from '../src/domain/retryPolicy.js';

// ---- Failure types of activities (activities/index.ts) ----
// An activity that fails for good throws a non-retryable ApplicationFailure of one of
// these types: a use case's refusal by its kind, or the activity's own permanent failure.
export const INVALID_FAILURE = 'Invalid';
export const UNAUTHENTICATED_FAILURE = 'Unauthenticated';
export const NOT_FOUND_FAILURE = 'NotFound';
export const CONFLICT_FAILURE = 'Conflict';
export const GONE_FAILURE = 'Gone';
export const TOO_MANY_FAILURE = 'TooMany';
export const NOT_CONFIGURED_FAILURE = 'NotConfigured';
/** The call has no number to dial. */
export const NO_NUMBER_FAILURE = 'NoNumber';
/** A hook run's automation refused (docs/webhooks.md): the hook's list is gone, or the call path said no. */
export const HOOK_LIST_NOT_FOUND_FAILURE = 'HookListNotFound';
export const HOOK_CALL_REJECTED_FAILURE = 'HookCallRejected';

// ---- Webhook hook runs (docs/webhooks.md) ----
export const HOOK_RUN_WORKFLOW_TYPE = 'hookRunWorkflow';
const HOOK_RUN_PREFIX = 'hook-run-';
/** One workflow per accepted webhook request: `hook-run-<run_id>`. */
export const hookRunWorkflowId = (runId: string) => `${HOOK_RUN_PREFIX}${runId}`;

export interface HookRunInput {
  runId: string;
  hookId: string;
  teamId: string;
  /** The hook's automation when the request was accepted. */
  automation: HookAutomation;
  /** The parsed JSON body, as sent. */
  body: unknown;
  /** DEFAULT_PHONE_REGION at acceptance, for local-format numbers in the body. */
  phoneRegion: string;
  deliveryId: string | null;
  receivedAt: string;
}

export interface HookRunResult {
  run_id: string;
  automation: HookAutomationKind;
  contact_id?: string;
  contact_created?: boolean;
  call_id?: string;
  list_id?: string;
}

// ---- Calls (docs/calls.md) ----
export const CALL_WORKFLOW_TYPE = 'callWorkflow';
const CALL_PREFIX = 'call-';
/** One workflow per call: `call-<call_id>`, so an operator finds it in the UI by the call id. */
export const callWorkflowId = (callId: string) => `${CALL_PREFIX}${callId}`;

/** The singleton that closes the row/workflow gap (docs/calls.md, "Reconciler"). */
export const CALLS_RECONCILER_WORKFLOW_ID = 'calls-reconciler';
export const CALLS_RECONCILER_WORKFLOW_TYPE = 'callsReconcilerWorkflow';

export interface CallWorkflowInput {
  callId: string;
  teamId: string;
  type: 'outbound' | 'inbound' | 'web';
  /** ISO date-time; the workflow waits durably until then. */
  scheduledTime: string;
  /** The dialing policy resolved when the call was scheduled (docs/calls.md); absent for calls from before it. */
  callingWindow?: CallingWindow | null;
  /** The IANA zone the calling window is read in. */
  timezone?: string | null;
  retryPolicy?: RetryPolicy | null;
  /** The call's place in its retry chain, 1 for the first call. */
  attempt?: number;
  /**
   * Set when the call sleeps in the admission line until its slotGranted (docs/calls.md,
   * "Admission"; the row's wakes_on_grant): it wakes by itself this long after its due time
   * at the latest (plus a random part of half as much), as the safety net.
   */
  admissionSafetyNetMs?: number;
}

export interface CallWorkflowResult {
  callId: string;
  status: string;
  endReason: string | null;
}

/**
 * Call progress from a telephony provider or the media edge, as POSTed to
 * /internal/v1/calls/{call_id}/events (docs/calls.md documents the body).
 */
export type CallEvent =
  | {
      type: 'ringing';
      event_id?: string;
      occurred_at?: string;
      /** A media edge dialling the call through its trunk: its own task queue, where cancel-call reaches the dial at once (docs/telephony.md). */
      media_task_queue?: string;
    }
  | {
      type: 'answered';
      event_id?: string;
      occurred_at?: string;
      /** A media edge's task queue: the workflow runs the script's speech there (docs/media-edge.md). */
      media_task_queue?: string;
    }
  | { type: 'transcript'; role: 'agent' | 'user'; text: string; event_id?: string; occurred_at?: string }
  | { type: 'ended'; reason: string; event_id?: string; occurred_at?: string };

/** What a due phone call's admission answers (admitCall, src/services/callAdmission.ts). */
export type CallAdmission =
  /** In line for a slot: a release grants it and wakes the call with one slotGranted signal. */
  | { outcome: 'waiting' }
  /** Cancelled or ended meanwhile; a slot it held went to the next call in line. */
  | { outcome: 'not_scheduled'; status: string }
  /** Its number is on the team's do-not-call list: it holds its slot and must not be dialled. */
  | { outcome: 'do_not_call'; phoneNumber: string }
  /**
   * In progress since `actualTime`, holding its slot, with a dial token taken at
   * `dialTokenAt`, or none (`waitForDialToken`: the dial activity waits for one).
   */
  | { outcome: 'started'; actualTime: string; dialTokenAt?: string; waitForDialToken: boolean };

/** A provider event for the call. */
export const callEventSignal = defineSignal<[CallEvent]>('callEvent');
/** The call row was cancelled (cancel-call): stop waiting and end. */
export const cancelCallSignal = defineSignal('cancelCall');
/**
 * The call's slot is granted (recorded in Postgres by the release that handed it on, see
 * src/services/callSlots.ts): start now. Sent once, to exactly the call granted.
 */
export const slotGrantedSignal = defineSignal('slotGranted');

export interface CallWorkflowState {
  callId: string;
  phase: 'waiting_for_scheduled_time' | 'waiting_for_slot' | 'waiting_for_connection' | 'in_call' | 'analysing' | 'done';
  status: string;
}
export const callStateQuery = defineQuery<CallWorkflowState>('callState');

// ---- Batches (docs/batches.md) ----
export const BATCH_WORKFLOW_TYPE = 'batchWorkflow';
const BATCH_PREFIX = 'batch-';
/** One long-running workflow per batch: `batch-<batch_id>`. */
export const batchWorkflowId = (batchId: string) => `${BATCH_PREFIX}${batchId}`;

/** Counts of a batch's contacts; `in_progress` is the part of `calling` that is in a call right now. */
export interface BatchProgress {
  total: number;
  pending: number;
  calling: number;
  in_progress: number;
  skipped: number;
  /** The part of `skipped` that was on the do-not-call list. */
  skipped_dnc: number;
  /** Contacts whose chain of calls ended, by the terminal status of its last call. */
  done: Record<string, number>;
  done_total: number;
  /** Calls made so far, retries included. */
  attempts: number;
}

export interface BatchWorkflowInput {
  batchId: string;
  teamId: string;
  /** ISO date-time: no call goes out before it. */
  startAt: string;
  /** How often the batch looks at its calls and its list without a wake-up signal. */
  pollMs: number;
  /** Continue-as-new after this many ticks or dispatched calls in one run (or when the server suggests it). */
  maxTicksPerRun?: number;
  maxCallsPerRun?: number;
  /** Carried over by continue-as-new. */
  started?: boolean;
  lastState?: BatchWorkflowState;
}

export interface BatchWorkflowState {
  batchId: string;
  status: string;
  endReason: string | null;
  progress: BatchProgress;
  /** Runs so far (1 + continue-as-new count) and ticks in this run. */
  run: number;
  ticks: number;
}

export type BatchWorkflowResult = Pick<BatchWorkflowState, 'batchId' | 'status' | 'endReason' | 'progress'>;

/** Something changed for the batch (contacts added to its list, paused, resumed, cancelled): look now. */
export const batchWakeSignal = defineSignal('batchWake');
/** The batch's status and progress as of its last tick (Temporal UI: Queries → batchState). */
export const batchStateQuery = defineQuery<BatchWorkflowState>('batchState');

// ---- Web sessions (docs/web-calls.md) ----
export const WEB_SESSION_WORKFLOW_TYPE = 'webSessionWorkflow';
const WEB_SESSION_PREFIX = 'web-session-';
/** One workflow per web session: `web-session-<session_id>`, minted → used | expired. */
export const webSessionWorkflowId = (sessionId: string) => `${WEB_SESSION_PREFIX}${sessionId}`;

/** A session token is redeemable for exactly this long after minting (docs/web-calls.md: two minutes). */
export const WEB_SESSION_TTL_MS = 2 * 60_000;

export type WebSessionState = 'minted' | 'used' | 'expired';

export interface WebSessionWorkflowInput {
  sessionId: string;
  teamId: string;
  /** Redeemable for this long after the workflow started (WEB_SESSION_TTL_MS). */
  ttlMs: number;
}

/** What a successful redemption answers: the web call it created. */
export interface WebSessionRedemption {
  callId: string;
  scriptId: string;
  contactId: string;
}

export interface WebSessionWorkflowResult {
  sessionId: string;
  state: Exclude<WebSessionState, 'minted'>;
  callId: string | null;
}

/** Failure types of a rejected redemption (the Update's validator). */
export const WEB_SESSION_ALREADY_USED = 'WebSessionAlreadyUsed';
export const WEB_SESSION_EXPIRED = 'WebSessionExpired';

/** The media edge redeems the token: exactly one redemption of a minted session creates the call. */
export const redeemWebSessionUpdate = defineUpdate<WebSessionRedemption>('redeemWebSession');
export const webSessionStateQuery = defineQuery<{ sessionId: string; state: WebSessionState; callId: string | null }>('webSessionState');

// ---- Event webhooks (docs/event-webhooks.md) ----
export const WEBHOOK_DELIVERY_WORKFLOW_TYPE = 'webhookDeliveryWorkflow';
const WEBHOOK_DELIVERY_PREFIX = 'webhook-delivery-';
/** One workflow per delivery: `webhook-delivery-<delivery_id>`, its attempts and the sleeps between them. */
export const webhookDeliveryWorkflowId = (deliveryId: string) => `${WEBHOOK_DELIVERY_PREFIX}${deliveryId}`;
export const deliveryIdFromWebhookDeliveryWorkflowId = (workflowId: string): string | undefined =>
  workflowId.startsWith(WEBHOOK_DELIVERY_PREFIX) ? workflowId.slice(WEBHOOK_DELIVERY_PREFIX.length) : undefined;

/** The singleton that starts deliveries whose workflow start was lost, and ends those whose workflow is gone. */
export const WEBHOOK_DELIVERY_SWEEPER_WORKFLOW_ID = 'webhook-delivery-sweeper';
export const WEBHOOK_DELIVERY_SWEEPER_WORKFLOW_TYPE = 'webhookDeliverySweeperWorkflow';

/**
 * Deliveries run on a task queue of their own, next to the service's: attempts waiting on a
 * slow endpoint never hold the worker slots that calls need.
 */
export const webhookTaskQueue = (taskQueue: string) => `${taskQueue}-webhooks`;

/**
 * The task queue of calls that talk (docs/calls.md, "Task queues"), next to the service's:
 * web and inbound calls start there, and an admitted phone call continues as new there, so
 * the admissions of a campaign falling due (on the service's queue) never queue ahead of them.
 */
export const liveCallTaskQueue = (taskQueue: string) => `${taskQueue}-live-calls`;

export interface WebhookDeliveryInput {
  deliveryId: string;
  teamId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
}

/** What one attempt (or its loss) left: the delivery's status, and the delay before the next attempt, if any. */
export interface WebhookAttemptResult {
  status: 'pending' | 'retrying' | 'succeeded' | 'failed';
  statusCode: number | null;
  /** Seconds until the next attempt; null when the delivery is over. */
  retryInSeconds: number | null;
}

export interface WebhookDeliveryResult {
  deliveryId: string;
  status: WebhookAttemptResult['status'];
  attempts: number;
}

// ---- The media edge (docs/media-edge.md) ----

/**
 * Each media edge instance is also a Temporal worker on a task queue of its own, so the
 * activities that speak and listen run on the instance that holds the call's media. The
 * edge names its queue in the call's `answered` event.
 */
export const MEDIA_EDGE_TASK_QUEUE_PREFIX = 'media-edge-';
export const mediaEdgeTaskQueue = (instanceId: string) => `${MEDIA_EDGE_TASK_QUEUE_PREFIX}${instanceId}`;

/** Failure types of the edge's activities: why the call's media is gone. */
export const CALLER_HUNG_UP = 'CallerHungUp';
export const CALL_MEDIA_LOST = 'CallMediaLost';

/** How the recogniser should hear an answer (the ask step's `expect`, and its phrase list). */
export interface AnswerHint {
  expect: 'text' | 'free' | 'name' | 'date' | 'number' | 'digits' | 'yes_no';
  phrases?: string[];
  /** The ask step's `input`: speech, keypad digits, or either when absent. */
  input?: 'dtmf' | 'speech' | 'both';
}

export interface SpeakToCallerInput {
  callId: string;
  stepId: string;
  text: string;
}

/**
 * System Notes the edge has for the call since its previous answer (a speech engine that
 * failed and was replaced by the offline one); the workflow appends them to the call's
 * notes in order with its own. Absent when there are none.
 */
export interface EdgeSystemNotes {
  systemNotes?: SystemNote[];
}

export interface SpeakToCallerResult extends EdgeSystemNotes {
  /** Agent audio actually played, in milliseconds. */
  playedMs: number;
  /** True when the caller's speech cut the playback short (barge-in). */
  interrupted: boolean;
}

export interface AskCallerInput {
  callId: string;
  stepId: string;
  /** Spoken first (the caller may barge in), then the edge listens. */
  prompt: string;
  hint: AnswerHint;
  /** How long to wait for the caller to start speaking once the prompt has played. */
  noSpeechTimeoutMs: number;
}

export type AskCallerResult = (
  | {
      kind: 'utterance';
      text: string;
      /** End of the caller's speech → recognised text, ms. */
      recognitionMs: number;
      /** The caller keyed the answer on the keypad (`text` is the digits). */
      keyed?: boolean;
    }
  | { kind: 'silence' }
) &
  EdgeSystemNotes;

/**
 * Phone calls through the SIP trunk (VOICE_PROVIDER=sip, docs/telephony.md "Outbound
 * calls"): every media edge with a trunk also polls this one shared queue, and the edge that
 * takes a call's dial holds the call from then on (its speech runs on that edge's own queue).
 */
export const MEDIA_EDGE_DIAL_TASK_QUEUE = 'media-edge-dial';

export interface DialPhoneCallInput {
  callId: string;
  /** The team's number, E.164: the INVITE's From. */
  from: string;
  /** The callee, E.164: the INVITE's To and Request-URI. */
  to: string;
  /** Ring this long, then CANCEL (rang-out). */
  ringTimeoutMs: number;
  /**
   * Screen the answer for an answering machine before the script runs (docs/telephony.md,
   * "Voicemail detection"); absent: the script runs at the answer.
   */
  screen?: boolean;
  /** The script's voicemail_message, filled: said on a machine after its beep or greeting. */
  voicemailMessage?: string;
}

/** What the edge's screening of the answer found on a machine (a System Note's data). */
export interface VoicemailScreening {
  /** The answering-machine detector's verdict (src/mediaEdge/conversation/answeringMachineDetector.ts). */
  detection: { verdict: string; reason: string; greetingMs: number; words: number; decidedAtMs: number; beepAt?: number };
  /** The voicemail message, when it was said: what it waited for, when it began (ms after the answer), audio that left. */
  message?: { text: string; cue: string; startedAtMs: number; playedMs: number };
}

/** How a dial ended: answered (the script runs on `mediaTaskQueue`), or the call's end. */
export type DialPhoneCallResult =
  | { outcome: 'answered'; mediaTaskQueue: string }
  | {
      outcome: 'ended';
      /** An end_reason of src/domain/calls.ts END_REASONS; it names the call's status. */
      endReason: string;
      /** A System Note for the call (the trunk's SIP status line, or why the dial could not go out). */
      note?: string;
      /** An answering machine took the call (end_reason voicemail): the detection, and the message said. */
      voicemail?: VoicemailScreening;
    };

/** The activity the dial queue's edges run (src/mediaEdge/phoneDialer.ts). */
export interface MediaEdgeDialActivities {
  /**
   * Claims the call's one dial (POST /internal/v1/calls/{id}/dial-claim), sends the INVITE,
   * reports `ringing`, and settles when the callee answers (and, with `screen`, is taken for a
   * person) or the call ends: unanswered, or on an answering machine (after the voicemail message).
   * Heartbeats while it rings; cancelling it sends CANCEL (or BYE to an answer that crossed it).
   */
  dialPhoneCall(input: DialPhoneCallInput): Promise<DialPhoneCallResult>;
}

/** The activity a SIP-enabled media edge runs on its own task queue for the dials it holds (src/mediaEdge/phoneDialer.ts). */
export interface MediaEdgeCancelDialActivities {
  /**
   * cancel-call while this edge dials the call (its `ringing` or `answered` event named this
   * queue): the dial's own cancellation would reach the edge only with its next heartbeat.
   * Ringing: CANCEL now, and the dial ends cancelled. Answered and being screened: the
   * screening stops at once (no voicemail message, or the rest of one cut), BYE, and the dial
   * ends cancelled. A call no longer being dialled is hung up. Idempotent: a second call, or one
   * for a call this edge no longer holds, does nothing.
   */
  cancelDial(input: { callId: string }): Promise<void>;
}

/** The activities every media edge instance runs on its own task queue. */
export interface MediaEdgeActivities {
  speakToCaller(input: SpeakToCallerInput): Promise<SpeakToCallerResult>;
  askCaller(input: AskCallerInput): Promise<AskCallerResult>;
  /** The agent ends the call: the edge sends BYE. Idempotent: a call already gone is fine. */
  hangUpCaller(input: { callId: string }): Promise<void>;
}
