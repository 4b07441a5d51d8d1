// cancel-call while a phone call rings reaches the trunk at once (docs/telephony.md, "Cancelling
// a call on the trunk"): the control plane end to end (create-phone-call and cancel-call over
// HTTP, the real call worker, the real edge dialer on the shared dial queue and its cancelDial on
// the edge's own queue) with a stand-in trunk whose callees ring and never answer.
//
// The dial activity's own cancellation reaches the edge only with its next heartbeat (or when the
// worker itself finds the heartbeat timeout, 10 s, passed). Here the dialer heartbeats once, at
// its start (heartbeatMs: ten minutes), so that way the dial would learn of its cancellation only
// 10 s after it began, and would then end as a cancelled (or timed-out) activity. A dial the edge
// ended on its own is one that completed, with the end `cancelled`: that is what the tests check,
// besides the CANCEL (within a loose 20 s: the ring timeout, the other way a CANCEL comes, is 60 s).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { PhoneDialer } from '../../src/mediaEdge/phoneDialer.js';
import type { OutboundInvite, OutboundInviteResult } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import type { TestApi } from '../support/app.js';
import { callResultOrStuck, callRow, calleeNumber, waitForCall } from '../support/calls.js';
import { startTrunkControlPlane, type TrunkControlPlane } from '../support/trunkControlPlane.js';
// RECORD_CALL_HISTORIES=1 (or a list naming trunk-cancelled-while-ringing) keeps the first test's
// history for the replay test (test/workflows/callWorkflowLifecycle.test.ts): it guards the
// cancel-dial-while-ringing branch.
const RECORD = process.env.RECORD_CALL_HISTORIES ?? '';
const { History } = proto.temporal.api.history.v1;
const HISTORIES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'callHistories');
/** Far longer than the new way takes, far shorter than the ring timeout (the old way's CANCEL). */
const CANCEL_BOUND_MS = 20_000;

/** A callee that rings at once, or only when the test says (the INVITE has had only 100 Trying until then). */
type Callee = { ring: 'at_once' | 'later' };

/** A trunk whose callees never answer: each INVITE rings until its CANCEL (the abort of the dial's signal). */
class RingingTrunk {
  readonly callees = new Map<string, Callee>();
  readonly invites: string[] = [];
  readonly rings = new Map<string, () => void>();
  /** When each callee's CANCEL came, and when its phone began to ring. */
  readonly cancelledAt = new Map<string, number>();
  readonly rangAt = new Map<string, number>();
  readonly cancelledBeforeRinging: string[] = [];

  async invite(req: OutboundInvite): Promise<OutboundInviteResult> {
    this.invites.push(req.toNumber);
    const ring = () => {
      this.rangAt.set(req.toNumber, Date.now());
      req.onProgress?.(180, 'Ringing');
    };
    if (this.callees.get(req.toNumber)?.ring === 'later') this.rings.set(req.toNumber, ring);
    else ring();
    return new Promise((resolve) => {
      const onAbort = () => {
        // A CANCEL before any provisional response may overtake the INVITE (RFC 3261 §9.1).
        if (!this.rangAt.has(req.toNumber)) this.cancelledBeforeRinging.push(req.toNumber);
        this.cancelledAt.set(req.toNumber, Date.now());
        resolve({ kind: 'failed', status: 487, reason: 'Request Terminated' });
      };
      if (req.signal?.aborted) onAbort();
      else req.signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

let plane: TrunkControlPlane;
let app: TestApi;
let plain: Client;
let dialer: PhoneDialer;
const trunk = new RingingTrunk();

before(async () => {
  plane = await startTrunkControlPlane({ name: 'cancel-ringing', ringTimeoutSeconds: 60, maxConcurrent: 10 });
  ({ app, plain } = plane);
  ({ dialer } = await plane.startEdge({
    name: 'cancel-ringing',
    trunk,
    rtpPorts: { min: 43500, max: 43599 },
    // One heartbeat, at the dial's start: the dial's cancellation never reaches the edge that way in these tests.
    heartbeatMs: 600_000,
    onCall: () => assert.fail('no callee answers'),
    activities: (edge) => ({
      speakToCaller: async () => assert.fail('no callee answers'),
      askCaller: async () => assert.fail('no callee answers'),
      hangUpCaller: async () => undefined,
      cancelDial: ({ callId }) => edge.dialer.cancelDial(callId),
    }),
  }));
});

after(async () => {
  await plane?.stop();
});

let calleeSeq = 0;

async function createPhoneCall(callee: Callee): Promise<{ callId: string; to: string }> {
  calleeSeq += 1;
  const to = calleeNumber(String(4000 + calleeSeq));
  trunk.callees.set(to, callee);
  return { callId: await plane.createPhoneCall(to), to };
}

async function cancelCall(callId: string): Promise<number> {
  const res = await app.request('POST', `/api/v1/cancel-call/${callId}`, { key: plane.team.apiKey });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.status, 'cancelled');
  return Date.now();
}

/** Resolves when the callee's CANCEL has come, failing past the bound. */
async function cancelOf(to: string): Promise<number> {
  const deadline = Date.now() + CANCEL_BOUND_MS;
  while (!trunk.cancelledAt.has(to) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const at = trunk.cancelledAt.get(to);
  assert.ok(at !== undefined, `no CANCEL within ${CANCEL_BOUND_MS / 1000} s of cancel-call: it waited for the dial's heartbeat (or the ring timeout)`);
  return at;
}

/** How the call's dial activity ended in the workflow's history: completed (with its result), or as a cancelled, timed-out or failed activity. */
async function dialActivityEnd(callId: string): Promise<unknown> {
  const events = (await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory()).events ?? [];
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'dialPhoneCall');
  assert.ok(scheduled, 'the dial was scheduled');
  const id = Number(scheduled.eventId);
  for (const e of events) {
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && Number(completed.scheduledEventId) === id) {
      const payload = completed.result?.payloads?.[0]?.data;
      return { completed: payload ? JSON.parse(Buffer.from(payload).toString('utf8')) : undefined };
    }
    if (Number(e.activityTaskCanceledEventAttributes?.scheduledEventId) === id) return 'activity cancelled';
    if (Number(e.activityTaskTimedOutEventAttributes?.scheduledEventId) === id) return 'activity timed out';
    if (Number(e.activityTaskFailedEventAttributes?.scheduledEventId) === id) return 'activity failed';
  }
  return 'still running';
}

/** Resolves once the workflow has asked for the dial activity's cancellation (recorded in its history). */
async function dialCancelRequested(callId: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const events = (await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory()).events ?? [];
    if (events.some((e) => e.activityTaskCancelRequestedEventAttributes)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail('the workflow never asked for the dial’s cancellation');
}

describe('cancel-call while the phone rings', { concurrency: true }, () => {
  test('the edge is told on its own queue and sends CANCEL at once, not at the dial’s next heartbeat; one INVITE, cancelled', async () => {
    const { callId, to } = await createPhoneCall({ ring: 'at_once' });
    await waitForCall(app.pool, callId, (c) => c.progress === 'ringing');
    const cancelledAt = await cancelCall(callId);
    const cancel = await cancelOf(to);
    assert.ok(cancel - cancelledAt < CANCEL_BOUND_MS);
    assert.deepEqual(await callResultOrStuck(app.pool, plain, callId, 30_000), { callId, status: 'cancelled', endReason: 'cancelled' });
    assert.deepEqual(trunk.invites.filter((n) => n === to), [to], 'one INVITE');
    assert.deepEqual(await plane.scheduledActivities(callId), ['dialPhoneCall@dial', 'cancelDial@edge']);
    // The edge ended the dial before the dial activity heard of its cancellation.
    assert.deepEqual(await dialActivityEnd(callId), { completed: { outcome: 'ended', endReason: 'cancelled' } });
    // A cancel that comes again (a retried activity) finds the dial over: nothing more goes out.
    await dialer.cancelDial(callId);
    assert.equal(trunk.cancelledAt.get(to), cancel, 'one CANCEL');
    const row = await callRow(app.pool, callId);
    assert.deepEqual(row.system_notes, [], 'the call’s end is the cancel, with no note of the dial');
    if (RECORD === '1' || RECORD.split(',').includes('trunk-cancelled-while-ringing')) {
      mkdirSync(HISTORIES_DIR, { recursive: true });
      const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
      writeFileSync(path.join(HISTORIES_DIR, 'call-trunk-cancelled-while-ringing.bin'), History.encode(history).finish());
    }
  });

  test('cancel-call before the phone rings (only 100 Trying): the service refuses the edge’s ringing report as cancelled, and the CANCEL follows the 180 at once', async () => {
    const { callId, to } = await createPhoneCall({ ring: 'later' });
    for (let i = 0; i < 400 && !trunk.rings.has(to); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(trunk.rings.has(to), 'the INVITE went out');
    await cancelCall(callId);
    // The phone rings once the workflow has asked for the dial's cancellation (the time-skipping
    // server refuses that request for an activity that completed meanwhile, and the workflow
    // would stall; the real server records it and goes on).
    await dialCancelRequested(callId);
    trunk.rings.get(to)?.();
    await cancelOf(to);
    assert.deepEqual(trunk.cancelledBeforeRinging, [], 'the CANCEL came after the 180');
    assert.deepEqual(await callResultOrStuck(app.pool, plain, callId, 30_000), { callId, status: 'cancelled', endReason: 'cancelled' });
    assert.deepEqual(trunk.invites.filter((n) => n === to), [to], 'one INVITE');
    // The workflow never heard the ringing (the call was cancelled by then), so never learnt the edge's queue.
    assert.deepEqual(await plane.scheduledActivities(callId), ['dialPhoneCall@dial']);
    assert.deepEqual(await dialActivityEnd(callId), { completed: { outcome: 'ended', endReason: 'cancelled' } });
  });
});
