/**
 * Activities of the dialing policy (docs/calls.md, "Dialing policy"), run by the call
 * workflow around its slot: deferring a call to its calling window, the dial-time
 * do-not-call check, the dial token of carrier pacing, a callee's opt-out, and the next
 * attempt of a retry chain. Each is idempotent.
 */
import { Context } from '@temporalio/activity';
import type { Redis } from 'ioredis';
import { deferScheduledCall, findCallById, setCallProgress } from '../src/db/repositories/calls.js';
import { findTeamDialingPolicy } from '../src/db/repositories/dialingPolicies.js';
import { isOnDoNotCall } from '../src/db/repositories/doNotCall.js';
import { createDialPacer, type DialPacer } from '../src/pacing/dialPacer.js';
import { releaseSlotAndGrant } from '../src/services/callSlots.js';
import { addCalleeToDoNotCall } from '../src/services/doNotCall.js';
import { scheduleRetryAttempt } from '../src/services/retries.js';
import { notFound } from '../src/services/errors.js';
import type { ActivityDeps } from './index.js';

/** How long one acquireDialToken run waits for a token before it answers `waiting` (the workflow asks again). */
export const DIAL_TOKEN_WAIT_MS = 30_000;

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
  let pacer = deps.dialPacer;
  const slotDeps = { pool: deps.pool, temporal: deps.temporal, logger: deps.logger };

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
      await releaseSlotAndGrant(slotDeps, input.callId);
      return { status: (await requireCall(input.callId)).status };
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
      pacer ??= defaultDialPacer(deps);
      const token = await pacer.tryTake({ fromNumber: call.from_number, teamId: call.team_id, teamRate: policy.dial_rate });
      return token.taken ? { granted: true, at: new Date(token.at).toISOString() } : { granted: false, reason: 'waiting' };
    },

    /**
     * A dial token of the call's number (and team, when it has a rate): waits for one up to
     * DIAL_TOKEN_WAIT_MS, heartbeating, with progress waiting_for_dial_slot while it waits.
     * A call no longer scheduled (cancelled meanwhile) gets none.
     */
    async acquireDialToken(input: { callId: string }): Promise<DialTokenResult> {
      const call = await requireCall(input.callId);
      if (call.status !== 'scheduled') return { granted: false, reason: 'not_scheduled', status: call.status };
      if (!call.from_number) return { granted: true, at: new Date().toISOString() };
      const policy = await findTeamDialingPolicy(deps.pool, call.team_id);
      pacer ??= defaultDialPacer(deps);
      const context = activityContext();
      let marked = false;
      const at = await pacer.take(
        { fromNumber: call.from_number, teamId: call.team_id, teamRate: policy.dial_rate },
        {
          maxWaitMs: DIAL_TOKEN_WAIT_MS,
          // The call's place in the slot line, so waiting calls dial in that order (in this process).
          priority: [(call.dial_after ?? call.scheduled_time).getTime(), call.seq],
          signal: context?.cancellationSignal,
          onWait: async () => {
            context?.heartbeat();
            if (!marked) {
              marked = true;
              await setCallProgress(deps.pool, call.id, 'scheduled', 'waiting_for_dial_slot');
            }
          },
        },
      );
      return at === null ? { granted: false, reason: 'waiting' } : { granted: true, at: new Date(at).toISOString() };
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
