/**
 * Activities of the dialing policy (docs/calls.md, "Dialing policy"), run by the call
 * workflow around its slot: deferring a call to its calling window, the dial-time
 * do-not-call check, the dial token of carrier pacing, a callee's opt-out, and the next
 * attempt of a retry chain. Each is idempotent.
 */
import { Context } from '@temporalio/activity';
import type { Redis } from 'ioredis';
import { deferScheduledCall, findCallById, setCallProgress, type CallRecord } from '../src/db/repositories/calls.js';
import { findTeamDialingPolicy } from '../src/db/repositories/dialingPolicies.js';
import { isOnDoNotCall } from '../src/db/repositories/doNotCall.js';
import { createDialPacer, type DialPacer, type PacingKey } from '../src/pacing/dialPacer.js';
import { releaseSlotAndGrant } from '../src/services/callSlots.js';
import { addCalleeToDoNotCall } from '../src/services/doNotCall.js';
import { admitCall } from '../src/services/callAdmission.js';
import type { CallAdmission } from '../workflows/contracts.js';
import { scheduleRetryAttempt } from '../src/services/retries.js';
import { notFound } from '../src/services/errors.js';
import type { ActivityDeps } from './index.js';
import { dialPacingWaits } from '../src/metrics/callMetrics.js';

/**
 * How long one run of placePacedCall waits for a token before it answers `waiting` (the
 * workflow runs it again). Long: a call keeps its place in the process's queue while it
 * waits, and many calls answering at once would leave slots unused.
 */
export const DIAL_TOKEN_WAIT_MS = 10 * 60_000;
/** While it waits, it looks at the call's status this often (a call ended meanwhile stops waiting). */
const STATUS_LOOK_MS = 5_000;
/** How long placeCall waits for a fresh token when the call's token went stale on its way (a retry of placeCall follows). */
export const FRESH_TOKEN_WAIT_MS = 20_000;

/** The pacing key of a call: its number, its team and the team's rate (null for a call without a number to dial from). */
export async function pacingKey(deps: Pick<ActivityDeps, 'pool'>, call: { team_id: string; from_number: string | null }): Promise<PacingKey | null> {
  if (!call.from_number) return null;
  const policy = await findTeamDialingPolicy(deps.pool, call.team_id);
  return { fromNumber: call.from_number, teamId: call.team_id, teamRate: policy.dial_rate };
}

/**
 * Right before the provider is asked to dial: a dial holding a token taken at `tokenAt` goes
 * out if it is still inside the token's slot; one that came too late (the way from the
 * token to the dial took longer than the slot) first takes a fresh token, before every other
 * waiter of this process. So the provider never sees more dials of a number in a second
 * than the rate, however late the dial runs.
 */
export async function dialInTokenSlot(deps: Pick<ActivityDeps, 'pool' | 'config'> & { dialPacer?: DialPacer; redis?: Redis }, key: PacingKey, tokenAt: number): Promise<void> {
  const pacer = deps.dialPacer ?? defaultDialPacer(deps);
  if (pacer.dialTiming(key, tokenAt).kind === 'now') return;
  const at = await pacer.take(key, { maxWaitMs: FRESH_TOKEN_WAIT_MS, priority: [0], signal: activityContext()?.cancellationSignal });
  if (at === null) throw new Error(`no fresh dial token within ${FRESH_TOKEN_WAIT_MS} ms`);
}

/**
 * Waits, in the dial activity itself, for a dial token of the call's number (and team):
 * queued in this process in the slot line's order, heartbeating, with progress
 * waiting_for_dial_slot while it waits. Answers the token's instant, or null after
 * DIAL_TOKEN_WAIT_MS or when the call left `status` meanwhile. A store error is waited out
 * (the call waits, it never fails for pacing).
 */
export async function waitForDialToken(
  deps: Pick<ActivityDeps, 'pool' | 'config' | 'logger'> & { dialPacer?: DialPacer; redis?: Redis },
  call: CallRecord,
  key: PacingKey,
  status: string,
): Promise<number | null> {
  const pacer = deps.dialPacer ?? defaultDialPacer(deps);
  const context = activityContext();
  const ended = new AbortController();
  const signal = context ? AbortSignal.any([context.cancellationSignal, ended.signal]) : ended.signal;
  const deadline = Date.now() + DIAL_TOKEN_WAIT_MS;
  let marked = false;
  let lastLook = Date.now();
  const onWait = async () => {
    context?.heartbeat();
    if (!marked) {
      marked = true;
      dialPacingWaits.inc();
      await setCallProgress(deps.pool, call.id, status, 'waiting_for_dial_slot');
    }
    if (Date.now() - lastLook >= STATUS_LOOK_MS) {
      lastLook = Date.now();
      if ((await findCallById(deps.pool, call.id))?.status !== status) ended.abort(new Error('the call left its status'));
    }
  };
  for (;;) {
    try {
      return await pacer.take(key, {
        maxWaitMs: Math.max(0, deadline - Date.now()),
        // The call's place in the slot line, so waiting calls dial in that order (in this process).
        priority: [(call.dial_after ?? call.scheduled_time).getTime(), call.seq],
        signal,
        onWait,
      });
    } catch (err) {
      if (ended.signal.aborted) return null;
      if (context?.cancellationSignal.aborted) throw err;
      deps.logger.warn({ err, callId: call.id }, 'dial pacer store failed; the call waits');
      await onWait();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      if (Date.now() > deadline) return null;
    }
  }
}
export type DialTokenResult =
  | { granted: true; at: string }
  | { granted: false; reason: 'waiting' }
  | { granted: false; reason: 'not_scheduled'; status: string };

/** The pacer of the deps, else one on Redis (when the worker has it) or on Postgres, shared by every instance. */
export function defaultDialPacer(deps: Pick<ActivityDeps, 'config' | 'pool'> & { redis?: Redis }): DialPacer {
  return createDialPacer({
    perNumberRate: deps.config.DIAL_RATE_PER_NUMBER,
    store: deps.redis ? { kind: 'redis', redis: deps.redis } : { kind: 'postgres', pool: deps.pool },
  });
}

function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

export function createDialingActivities(deps: ActivityDeps) {
  const pacer = deps.dialPacer ?? defaultDialPacer(deps);

  async function requireCall(callId: string) {
    const call = await findCallById(deps.pool, callId);
    if (!call) throw notFound(`call ${callId} not found`);
    return call;
  }

  return {
    /**
     * The call's window is closed: it is not dialled before `dialAfter` (progress
     * waiting_for_window), and a slot it holds goes to the next call in line.
     */
    async deferCallToWindow(input: { callId: string; dialAfter: string }): Promise<{ status: string }> {
      await deferScheduledCall(deps.pool, input.callId, new Date(input.dialAfter), 'waiting_for_window');
      await releaseSlotAndGrant(deps, input.callId);
      return { status: (await requireCall(input.callId)).status };
    },

    /**
     * The due call's admission in one step (src/services/callAdmission.ts): its slot, then
     * the do-not-call list, a free dial token and in-progress. Safe to repeat. `at`: the
     * workflow's time when it asked; in-progress is stamped with it plus the time taken since.
     * A started call learns the live-call task queue of this worker, when it runs one: the
     * call continues there (docs/calls.md, "Task queues").
     */
    async admitCall(input: { callId: string; teamId: string; at: string }): Promise<CallAdmission & { liveTaskQueue?: string }> {
      const began = Date.now();
      const admission = await admitCall({ ...deps, dialPacer: pacer }, input.teamId, input.callId, () => new Date(Date.parse(input.at) + Date.now() - began));
      return admission.outcome === 'started' && deps.liveTaskQueue ? { ...admission, liveTaskQueue: deps.liveTaskQueue } : admission;
    },

    /** The dial-time check: whether the callee's number is on the team's do-not-call list now. */
    async checkDoNotCall(input: { callId: string }): Promise<{ listed: boolean; phoneNumber: string | null }> {
      const call = await requireCall(input.callId);
      if (!call.to_number) return { listed: false, phoneNumber: null };
      return { listed: await isOnDoNotCall(deps.pool, call.team_id, call.to_number), phoneNumber: call.to_number };
    },

    /** A dial token of the call's number (and team) if one is free now, without waiting (a local activity: it keeps the line's order). */
    async tryDialToken(input: { callId: string }): Promise<DialTokenResult> {
      const call = await requireCall(input.callId);
      if (call.status !== 'scheduled') return { granted: false, reason: 'not_scheduled', status: call.status };
      if (!call.from_number) return { granted: true, at: new Date().toISOString() };
      const policy = await findTeamDialingPolicy(deps.pool, call.team_id);
      const token = await pacer.tryTake({ fromNumber: call.from_number, teamId: call.team_id, teamRate: policy.dial_rate });
      return token.taken ? { granted: true, at: new Date(token.at).toISOString() } : { granted: false, reason: 'waiting' };
    },

    /** The callee asked not to be called again: their number joins the list (source call). */
    async addCalleeToDoNotCall(input: { callId: string; reason?: string }): Promise<{ added: boolean; phoneNumber: string | null }> {
      const entry = await addCalleeToDoNotCall(deps.pool, input.callId, input.reason);
      return { added: entry !== undefined, phoneNumber: entry?.phone_number ?? null };
    },

    /**
     * The next attempt of the call's chain, when its retry policy asks for one after this
     * outcome and the number is not on the do-not-call list: a new call made the way
     * retry-call makes it, scheduled `delay_seconds` after `endTime`. Answers its id, or null
     * when the chain ends here.
     */
    async scheduleNextAttempt(input: { callId: string; status: string; endReason: string; endTime: string }): Promise<{ nextCallId: string | null }> {
      return { nextCallId: await scheduleRetryAttempt({ pool: deps.pool, temporal: deps.temporal, config: deps.config, logger: deps.logger }, input) };
    },
  };
}

export type DialingActivities = ReturnType<typeof createDialingActivities>;
