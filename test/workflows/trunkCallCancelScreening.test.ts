// cancel-call while a phone call's answer is screened for an answering machine (docs/telephony.md,
// "Voicemail detection"): the control plane end to end (create-phone-call and cancel-call over
// HTTP, the real call worker, the real edge dialer: dial claim, RTP session, CallScreener) with a
// stand-in trunk whose far ends answer at once over real RTP. The edge's screening never says the
// message at its longest wait (ten minutes here), so no wall-clock window decides a test: a line
// of silence holds the screening open until the cancel; a machine whose greeting ends hears a
// message that goes on until something cuts it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@temporalio/client';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { FRAME_SAMPLES } from '../../src/mediaEdge/media/channel.js';
import type { PhoneCall } from '../../src/mediaEdge/phoneCall.js';
import { g711Answer } from '../../src/mediaEdge/rtp/g711Sdp.js';
import type { OutboundInvite, OutboundInviteResult, SipDialog } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import type { TestApi, TestTeam } from '../support/app.js';
import { callResultOrStuck, callRow, calleeNumber } from '../support/calls.js';
import { RtpPeer } from '../support/rtpPeer.js';
import { startTrunkControlPlane, type TrunkControlPlane } from '../support/trunkControlPlane.js';

/** What a far end sends once it answers: silence only (a machine by its initial silence), or a 3 s greeting and then silence (a machine by its long greeting, whose end cues the message). */
type Line = 'silence' | 'greeting';

/** A trunk whose callees answer at once and keep their line open; BYEs and CANCELs by callee number. */
class StandInTrunk {
  readonly lines = new Map<string, Line>();
  readonly byes: string[] = [];
  readonly cancels: string[] = [];
  readonly peers: RtpPeer[] = [];
  /** Each answered far end's RTP, by SIP Call-ID: it stops sending at the edge's BYE, as a phone does. */
  private readonly farEnds = new Map<string, RtpPeer>();

  /** The callee number of each INVITE, by SIP Call-ID. */
  private readonly callees = new Map<string, string>();

  calleeOf(sipCallId: string): string | undefined {
    return this.callees.get(sipCallId);
  }

  async invite(req: OutboundInvite): Promise<OutboundInviteResult> {
    this.callees.set(req.callId, req.toNumber);
    const line = this.lines.get(req.toNumber);
    if (!line) return { kind: 'failed', status: 404, reason: 'Not Found' };
    req.onProgress?.(180, 'Ringing');
    req.signal?.addEventListener('abort', () => this.cancels.push(req.toNumber), { once: true });
    const edgePort = Number(/^m=audio (\d+)/m.exec(req.sdp)?.[1]);
    const peer = await RtpPeer.open({ address: '127.0.0.1', port: edgePort });
    this.peers.push(peer);
    this.farEnds.set(req.callId, peer);
    const greeting = line === 'greeting' ? Int16Array.from({ length: 24_000 }, () => Math.round((Math.random() - 0.5) * 8000)) : new Int16Array(0);
    void peer.play(greeting, { thenSilence: true });
    const answer = g711Answer(req.sdp, { address: '127.0.0.1', port: peer.port, sessionId: 1 });
    if ('error' in answer) throw new Error(answer.error);
    return { kind: 'answered', sdp: answer.sdp, dialog: this.dialog(req) };
  }

  private dialog(req: OutboundInvite): SipDialog {
    return {
      callId: req.callId,
      bye: async () => {
        this.byes.push(req.toNumber);
        // A far end still sending after the BYE reached whichever edge bound its old port next:
        // with copies of this file at once, another copy's call heard it instead of its own.
        this.farEnds.get(req.callId)?.stop();
      },
      refer: async () => ({ accepted: false, status: 501 }),
      onEnded: () => () => undefined,
      onInfo: () => () => undefined,
    };
  }
}

let plane: TrunkControlPlane;
let app: TestApi;
let plain: Client;
let team: TestTeam;
const trunk = new StandInTrunk();
const held = new Map<string, PhoneCall>();
/** The `answered` report of each held call, once the service has passed it to the workflow. */
const answeredReports = new Map<string, Promise<unknown>>();
/** Lines the edge began saying outside the script (the voicemail message), by call id. */
const saidOnEdge = new Map<string, string[]>();
/** Frames of the message that have left the edge, by call id. */
const messageFrames = new Map<string, number>();
/** Callee numbers whose call's `answered` report the edge holds until the test lets it go, and the let-go of each held call. */
const answersHeld = new Set<string>();
const releaseAnswer = new Map<string, () => void>();
/** Calls whose cancelDial (the workflow's) waits on the edge until the test lets it go. */
const cancelDialHeld = new Map<string, Promise<void>>();

/**
 * The voicemail message as the call's engine plays it, a frame every 20 ms on the call's RTP
 * channel, but without end: it plays until aborted, then the rest is dropped and it rejects.
 */
async function playUntilAborted(call: PhoneCall, signal: AbortSignal): Promise<never> {
  const tone = Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => Math.round(4000 * Math.sin(i / 3)));
  const timer = setInterval(() => call.channel.enqueue(tone), 20);
  const unsubscribe = call.channel.onOutbound(() => messageFrames.set(call.callId, (messageFrames.get(call.callId) ?? 0) + 1));
  try {
    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
  } finally {
    clearInterval(timer);
    unsubscribe();
    call.channel.clear();
  }
  throw signal.reason;
}

before(async () => {
  plane = await startTrunkControlPlane({ name: 'cancel-screening', ringTimeoutSeconds: 5, maxConcurrent: 10 });
  ({ app, plain, team } = plane);
  await plane.startEdge({
    name: 'cancel-screening',
    trunk,
    rtpPorts: { min: 43400, max: 43499 },
    // The longest wait for a beep is never reached: only a greeting's end (or a beep) cues the message.
    screening: { maxGreetingWaitMs: 600_000 },
    onCall: (call, { calls, reporter, taskQueue, dialer }) => {
      held.set(call.callId, call);
      calls.add({
        callId: call.callId,
        channel: call.channel,
        conversation: {
          speak: async (text, opts) => {
            saidOnEdge.set(call.callId, [...(saidOnEdge.get(call.callId) ?? []), text]);
            return playUntilAborted(call, opts.signal ?? new AbortController().signal);
          },
          ask: async () => ({ kind: 'silence' }),
        },
        hangUp: () => call.hangUp(),
      });
      const report = () =>
        reporter.report(call.callId, { type: 'answered', event_id: `answered-${call.callId}`, media_task_queue: taskQueue }).then(({ accepted, endedAs }) => {
          // As the voice edge does (voiceEdge.ts): a call the service did not take is hung up, or its dial cancelled when cancel-call came first.
          if (!accepted && !dialer.cancelledByService(call.callId, endedAs)) void call.hangUp();
        });
      const to = call.dialog && trunk.calleeOf(call.dialog.callId);
      if (to && answersHeld.has(to)) {
        answeredReports.set(call.callId, new Promise<void>((resolve) => releaseAnswer.set(call.callId, () => void report().then(resolve))));
      } else answeredReports.set(call.callId, report());
    },
    // The edge's own queue: the script never runs here (every call is a machine), only the hang-ups.
    activities: ({ dialer }) => ({
      speakToCaller: async () => {
        throw new Error('no script line is said on a machine');
      },
      askCaller: async () => {
        throw new Error('no script line is said on a machine');
      },
      hangUpCaller: async ({ callId }) => {
        await held.get(callId)?.hangUp();
      },
      cancelDial: async ({ callId }) => {
        await cancelDialHeld.get(callId);
        await dialer.cancelDial(callId);
      },
    }),
  });
});

after(async () => {
  await plane?.stop();
  for (const peer of trunk.peers) peer.close();
});

let calleeSeq = 0;

/** A call to a far end of its own, with a script that has a voicemail message (`holdAnswer`: the edge holds its `answered` report until the test lets it go). */
async function screenedCall(line: Line, opts: { holdAnswer?: boolean } = {}): Promise<{ callId: string; to: string }> {
  calleeSeq += 1;
  const to = calleeNumber(String(3000 + calleeSeq));
  trunk.lines.set(to, line);
  if (opts.holdAnswer) answersHeld.add(to);
  const script = await insertScript(app.pool, {
    teamId: team.teamId,
    name: `Voicemail ${calleeSeq}`,
    definition: { name: `Voicemail ${calleeSeq}`, voicemail_message: 'Hello {{contact.first_name}}, please call us back.', steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] },
  });
  return { callId: await plane.createPhoneCall(to, script.id), to };
}

/** A screened call once the edge holds the answered call and the workflow has its `answered` event. */
async function answeredCall(line: Line): Promise<{ callId: string; to: string }> {
  const { callId, to } = await screenedCall(line);
  for (let i = 0; i < 600 && !answeredReports.has(callId); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(answeredReports.has(callId), 'the callee answered');
  await answeredReports.get(callId);
  return { callId, to };
}

const cancelCall = (callId: string) => app.request('POST', `/api/v1/cancel-call/${callId}`, { key: team.apiKey });

describe('cancel-call while the answer is screened', { concurrency: true }, () => {
  test('before the message: the edge is told on its own queue, hangs up (BYE, no CANCEL), no message is said, and the call ends cancelled', async () => {
    const { callId, to } = await answeredCall('silence');
    const res = await cancelCall(callId);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.status, 'cancelled');
    assert.deepEqual(await callResultOrStuck(app.pool, plain, callId, 60_000), { callId, status: 'cancelled', endReason: 'cancelled' });
    assert.deepEqual(trunk.byes.filter((n) => n === to), [to], 'one BYE');
    assert.deepEqual(trunk.cancels.filter((n) => n === to), [], 'no CANCEL once answered');
    assert.equal(saidOnEdge.get(callId), undefined, 'no voicemail message');
    const row = await callRow(app.pool, callId);
    assert.deepEqual(row.conversation, []);
    assert.ok(row.system_notes.every((n) => n.kind !== 'voicemail_detection'), JSON.stringify(row.system_notes));
    assert.deepEqual(await plane.scheduledActivities(callId), ['dialPhoneCall@dial', 'cancelDial@edge']);
  });

  test('during the message: the rest is cut (BYE), the call ends cancelled, and what the machine heard is the agent’s turn with a note of the cut', async () => {
    const { callId, to } = await answeredCall('greeting');
    // The greeting ends (1.5 s of silence after it): the message starts, and plays until cut.
    for (let i = 0; i < 1200 && !saidOnEdge.has(callId); i++) await new Promise((r) => setTimeout(r, 50));
    if (!saidOnEdge.has(callId)) {
      // Beside heavy load this wait has run out a few times (docs/telephony.md): say where the call was.
      const row = await callRow(app.pool, callId);
      assert.fail(`the message never began: the call is ${row.status}/${row.progress}, notes ${JSON.stringify(row.system_notes)}, BYEs ${trunk.byes.filter((n) => n === to).length}`);
    }
    assert.deepEqual(saidOnEdge.get(callId), ['Hello Ada, please call us back.'], 'the message began');
    // Some of it has left for the machine.
    for (let i = 0; i < 600 && (messageFrames.get(callId) ?? 0) < 5; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok((messageFrames.get(callId) ?? 0) >= 5, 'the message is being heard');
    const res = await cancelCall(callId);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(await callResultOrStuck(app.pool, plain, callId, 60_000), { callId, status: 'cancelled', endReason: 'cancelled' });
    assert.deepEqual(trunk.byes.filter((n) => n === to), [to], 'one BYE');
    assert.deepEqual(trunk.cancels.filter((n) => n === to), [], 'no CANCEL once answered');
    const row = await callRow(app.pool, callId);
    assert.deepEqual(row.conversation, [{ role: 'agent', text: 'Hello Ada, please call us back.' }]);
    const notes = row.system_notes.filter((n) => n.kind === 'voicemail_detection');
    assert.equal(notes.length, 1, JSON.stringify(row.system_notes));
    assert.match(notes[0].text, /An answering machine took the call \(reason long_greeting, .*The voicemail message began \d+ ms after the answer \(after the greeting ended\); cancel-call cut it \d+ ms in, and the agent hung up\./);
    const data = notes[0].data as { detection: { verdict: string }; message: { cue: string; playedMs: number } };
    assert.equal(data.detection.verdict, 'machine');
    assert.equal(data.message.cue, 'greeting_end');
    assert.ok(data.message.playedMs > 0, `played ${data.message.playedMs} ms`);
    assert.deepEqual(await plane.scheduledActivities(callId), ['dialPhoneCall@dial', 'cancelDial@edge']);
  });

  /**
   * Until the workflow has completed the task that took the cancel. A dial ending inside that
   * task's window meets a bug of the time-skipping test server (not of the real one): it refuses
   * the task's cancel request for the activity that completed meanwhile and never hands the run
   * another task (a CI run stalled so). The report still comes after the cancel, as on a line.
   */
  async function cancelTaskCompleted(callId: string): Promise<void> {
    const handle = plain.workflow.getHandle(callWorkflowId(callId));
    for (let i = 0; i < 600; i++) {
      const events = (await handle.fetchHistory()).events ?? [];
      const signalled = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'cancelCall');
      if (signalled >= 0 && events.slice(signalled).some((e) => e.workflowTaskCompletedEventAttributes)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`the workflow of call ${callId} did not take the cancel`);
  }

  test('cancel-call before the edge’s answered report: the service refuses it as cancelled, and the dial ends cancelled (BYE), with no note that the edge hung up', async () => {
    const { callId, to } = await screenedCall('silence', { holdAnswer: true });
    // The workflow's own cancelDial waits on the edge until the refusal has been handled: the edge hears of the cancel from the service first.
    let letCancelDialGo!: () => void;
    cancelDialHeld.set(callId, new Promise<void>((resolve) => (letCancelDialGo = resolve)));
    for (let i = 0; i < 600 && !releaseAnswer.has(callId); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(releaseAnswer.has(callId), 'the callee answered, and the edge screens the answer');
    const res = await cancelCall(callId);
    assert.equal(res.status, 200, res.text);
    await cancelTaskCompleted(callId);
    releaseAnswer.get(callId)?.();
    await answeredReports.get(callId);
    letCancelDialGo();
    assert.deepEqual(await callResultOrStuck(app.pool, plain, callId, 60_000), { callId, status: 'cancelled', endReason: 'cancelled' });
    assert.deepEqual(trunk.byes.filter((n) => n === to), [to], 'one BYE');
    assert.deepEqual(trunk.cancels.filter((n) => n === to), [], 'no CANCEL once answered');
    assert.equal(saidOnEdge.get(callId), undefined, 'no voicemail message');
    const row = await callRow(app.pool, callId);
    assert.deepEqual(row.system_notes, [], 'the cancel is the call’s end: no note of the edge hanging up');
  });
});
