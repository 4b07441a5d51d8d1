// Phone calls through the SIP trunk (VOICE_PROVIDER=sip), the control plane end to end in the
// time-skipping environment: calls created over HTTP (create-phone-call, cancel-call), the real
// call worker, and the real edge dialer (src/mediaEdge/phoneDialer.ts: dial claim over HTTP,
// ringing report, real RTP session) on the shared dial queue. Only the far end is a stand-in:
// a typed trunk that answers each callee number as the test says (a person who says "hello" over
// real RTP, or a silent line: an answering machine by its initial silence), and a media edge
// queue that plays a scripted caller; a retried dial also meets baresip (the real trunk agent,
// a real telephone counting the INVITEs it received). The SIP pieces themselves meet baresip in
// test/e2e/phoneCalls.test.ts (and a voicemail greeting with its beep in test/e2e/phoneVoicemail.test.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { isTerminalStatus } from '../../src/domain/calls.js';
import { sipCallIdOf } from '../../src/domain/sipOutcomes.js';
import { createLogger } from '../../src/logging/logger.js';
import type { PhoneCall } from '../../src/mediaEdge/phoneCall.js';
import { g711Answer } from '../../src/mediaEdge/rtp/g711Sdp.js';
import { SipTrunkAgent, type OutboundInvite, type OutboundInviteResult, type SipDialog } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { freePort } from '../../src/localPorts.js';
import { freeSipPort } from '../support/sipPorts.js';
import { SCREENING_WAIT_MS } from '../../workflows/trunkCall.js';
import { callWorkflowId, MEDIA_EDGE_DIAL_TASK_QUEUE } from '../../workflows/contracts.js';
import type { TestApi, TestTeam } from '../support/app.js';
import { callResultOrStuck, callRow, calleeNumber, waitForCall } from '../support/calls.js';
import { BaresipPhone } from '../support/baresip.js';
import { RtpPeer } from '../support/rtpPeer.js';
import { startTrunkControlPlane, type TrunkControlPlane } from '../support/trunkControlPlane.js';


/** What the stand-in far end does with an INVITE to one number. */
type Callee =
  /** Answers after this long; a person says "hello" at once (default), a silent line says nothing (a machine by its initial silence). */
  | { answerAfterMs: number; line?: 'hello' | 'silent' }
  | { reject: [number, string] }
  | { ringUntilCancelled: true }
  | { crashAfterInvite: true }
  /** The real SIP trunk agent, whose trunk is a TCP port nobody listens on. */
  | { unreachableTrunk: true }
  /** The real SIP trunk agent to baresip, which answers; then the transport fails (the dial activity's first attempt fails after the call was answered). */
  | { baresipThenCrash: true };

/** A trunk stand-in: counts INVITEs, CANCELs and BYEs by callee number. */
class StandInTrunk {
  readonly callees = new Map<string, Callee>();
  readonly invites: OutboundInvite[] = [];
  readonly cancels: string[] = [];
  readonly byes: string[] = [];
  readonly remoteByes = new Map<string, () => void>();
  /** The far ends' RTP of the answered calls that speak. */
  readonly peers: RtpPeer[] = [];

  async invite(req: OutboundInvite): Promise<OutboundInviteResult> {
    this.invites.push(req);
    const callee = this.callees.get(req.toNumber) ?? { reject: [404, 'Not Found'] };
    if ('unreachableTrunk' in callee) return deadTrunk.invite(req);
    if ('baresipThenCrash' in callee) {
      const answered = await phoneTrunk.invite(req);
      if (answered.kind === 'answered') await answered.dialog.bye();
      throw new Error(`the transport failed after baresip's ${answered.kind} reply`);
    }
    if ('crashAfterInvite' in callee) throw new Error('the transport failed after the INVITE went out');
    req.onProgress?.(180, 'Ringing');
    if ('reject' in callee) return { kind: 'failed', status: callee.reject[0], reason: callee.reject[1] };
    const cancelled = new Promise<OutboundInviteResult>((resolve) => {
      const onAbort = () => {
        this.cancels.push(req.toNumber);
        resolve({ kind: 'cancelled' });
      };
      if (req.signal?.aborted) onAbort();
      else req.signal?.addEventListener('abort', onAbort, { once: true });
    });
    if ('ringUntilCancelled' in callee) return cancelled;
    const answered = new Promise<OutboundInviteResult>((resolve) =>
      setTimeout(() => {
        void this.answer(req, callee.line ?? 'hello').then(resolve);
      }, callee.answerAfterMs),
    );
    return Promise.race([cancelled, answered]);
  }

  /** The 200's SDP and dialog; a person's RTP says "hello" (half a second of noise) and then keeps the line open with silence. */
  private async answer(req: OutboundInvite, line: 'hello' | 'silent'): Promise<OutboundInviteResult> {
    let port = 9;
    if (line === 'hello') {
      const edgePort = Number(/^m=audio (\d+)/m.exec(req.sdp)?.[1]);
      const peer = await RtpPeer.open({ address: '127.0.0.1', port: edgePort });
      this.peers.push(peer);
      port = peer.port;
      const hello = Int16Array.from({ length: 4000 }, () => Math.round((Math.random() - 0.5) * 8000));
      void peer.play(Int16Array.from([...new Int16Array(1600), ...hello]), { thenSilence: true });
    }
    const answer = g711Answer(req.sdp, { address: '127.0.0.1', port, sessionId: 1 });
    if ('error' in answer) throw new Error(answer.error);
    return { kind: 'answered', sdp: answer.sdp, dialog: this.dialog(req) };
  }

  private dialog(req: OutboundInvite): SipDialog {
    const ended = new Set<(by: 'remote_bye') => void>();
    this.remoteByes.set(req.toNumber, () => ended.forEach((l) => l('remote_bye')));
    return {
      callId: req.callId,
      bye: async () => {
        this.byes.push(req.toNumber);
      },
      refer: async () => ({ accepted: false, status: 501 }),
      onEnded: (listener) => {
        ended.add(listener);
        return () => ended.delete(listener);
      },
      onInfo: () => () => undefined,
    };
  }
}

let plane: TrunkControlPlane;
let app: TestApi;
let plain: Client;
let team: TestTeam;
const trunk = new StandInTrunk();
let deadTrunk: SipTrunkAgent;
/** A real telephone (baresip, auto-answering BARESIP_CALLEE) and the real SIP trunk agent whose trunk it is. */
let phone: BaresipPhone;
let phoneTrunk: SipTrunkAgent;
const BARESIP_CALLEE = calleeNumber('1999');
const held = new Map<string, PhoneCall>();
/** What the scripted callee says to each ask, by call id (default: yes). */
const calleeAnswers = new Map<string, string[]>();
/** Lines the edge said outside the script (the voicemail message), by call id. */
const saidOnEdge = new Map<string, string[]>();
/** Calls whose caller stays on an ask until the workflow cancels it (cancel-call in progress), and a wake-up once it does. */
const lingerOnAsk = new Map<string, () => void>();
/** An edge: the real dialer on the shared dial queue, and a scripted caller on its own queue. */
async function startEdge(name: string): Promise<void> {
  await plane.startEdge({
    name,
    trunk,
    rtpPorts: { min: 43000, max: 43398 },
    // A silent line's message goes out after 7 s of it instead of 30 s: long enough for cancel-call
    // to come first, and within the RTP inactivity limit (10 s) of a line that sends nothing.
    screening: { maxGreetingWaitMs: 7_000 },
    onCall: (call, { calls, reporter, taskQueue }) => {
      held.set(call.callId, call);
      calls.add({
        callId: call.callId,
        channel: call.channel,
        conversation: {
          speak: async (text) => {
            saidOnEdge.set(call.callId, [...(saidOnEdge.get(call.callId) ?? []), text]);
            return { playedMs: text.length * 50, interrupted: false };
          },
          ask: async () => ({ kind: 'silence' }),
        },
        hangUp: () => call.hangUp(),
      });
      void reporter.report(call.callId, { type: 'answered', event_id: `answered-${call.callId}`, media_task_queue: taskQueue });
    },
    activities: ({ dialer }) => ({
      async speakToCaller({ text }) {
        return { playedMs: text.length * 50, interrupted: false };
      },
      async askCaller({ callId }) {
        const lingering = lingerOnAsk.get(callId);
        if (lingering) {
          lingering();
          const ctx = Context.current();
          for (;;) {
            ctx.heartbeat();
            await ctx.sleep(200);
          }
        }
        const text = calleeAnswers.get(callId)?.shift() ?? 'yes';
        return { kind: 'utterance', text, recognitionMs: 100 };
      },
      async hangUpCaller({ callId }) {
        await held.get(callId)?.hangUp();
      },
      cancelDial: ({ callId }) => dialer.cancelDial(callId),
    }),
  });
}

before(async () => {
  const closed = await freePort();
  deadTrunk = await SipTrunkAgent.start({
    settings: parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${closed};transport=tcp`, SIP_LISTEN: `127.0.0.1:${await freeSipPort()}` })!,
    logger: createLogger('silent'),
  });
  phone = await BaresipPhone.start({ accounts: [{ number: BARESIP_CALLEE, answer: 'auto' }] });
  phoneTrunk = await SipTrunkAgent.start({
    settings: parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${phone.sipPort};transport=udp`, SIP_LISTEN: `127.0.0.1:${await freeSipPort()}` })!,
    logger: createLogger('silent'),
  });
  plane = await startTrunkControlPlane({ name: 'trunk', ringTimeoutSeconds: 3, maxConcurrent: 50 });
  ({ app, plain, team } = plane);
  // One edge: a process may run one worker per task queue (the SDK refuses a second on the
  // dial queue); the claim's refusal of another edge is the endpoint's test below.
  await startEdge('edge-a');
});

after(async () => {
  await plane?.stop();
  await deadTrunk?.close();
  await phoneTrunk?.close();
  await phone?.stop();
  for (const peer of trunk.peers) peer.close();
});

let calleeSeq = 0;
/** A callee number of its own for each call (the stand-in trunk answers by number). */
function nextCallee(): string {
  calleeSeq += 1;
  return calleeNumber(String(2000 + calleeSeq));
}

async function createPhoneCall(callee: Callee, scriptId = team.scriptId, to = nextCallee()): Promise<{ callId: string; to: string }> {
  trunk.callees.set(to, callee);
  return { callId: await plane.createPhoneCall(to, scriptId), to };
}

// Real time (a plain client): the edge's timers are real. The tests run concurrently, each on numbers of its own.
const result = (callId: string) => callResultOrStuck(app.pool, plain, callId, 30_000);
/** A screened call's end: the verdict and the message add seconds of real audio. */
const screenedResult = (callId: string) => callResultOrStuck(app.pool, plain, callId, 60_000);
const invitesTo = (to: string) => trunk.invites.filter((i) => i.toNumber === to);

describe('a phone call through the SIP trunk', { concurrency: true }, () => {
  test('answered: one INVITE (From the team number, To the callee, Call-ID from the call id), ringing, then the script runs on the edge that holds the call (completed)', async () => {
    const { callId, to } = await createPhoneCall({ answerAfterMs: 1500 });
    const ringing = await waitForCall(app.pool, callId, (c) => c.progress === 'ringing' || isTerminalStatus(c.status));
    assert.equal(ringing.progress, 'ringing', 'the 180 became progress ringing');
    assert.deepEqual(await result(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    const invites = invitesTo(to);
    assert.equal(invites.length, 1);
    assert.equal(invites[0].fromNumber, team.fromNumber);
    assert.equal(invites[0].callId, sipCallIdOf(callId));
    const row = await callRow(app.pool, callId);
    assert.equal(row.provider, 'sip');
    assert.ok(row.conversation.some((t) => t.role === 'user'), 'the callee’s answers are in the transcript');
    assert.deepEqual(trunk.byes.filter((n) => n === to), [to], 'the agent hung up with one BYE');
    const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
    const queues = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [`${e.activityTaskScheduledEventAttributes.activityType?.name}@${e.activityTaskScheduledEventAttributes.taskQueue?.name === MEDIA_EDGE_DIAL_TASK_QUEUE ? 'dial' : 'edge'}`] : []));
    // The concurrent tests dial from one number: a call that finds the number's dial token taken
    // (another test's call in the same millisecond) first waits for it on the worker's queue.
    const dial = queues.indexOf('dialPhoneCall@dial');
    assert.ok(dial >= 0, `the dial ran on the dial queue: ${queues.join(', ')}`);
    assert.ok(queues.slice(0, dial).every((q) => q === 'placePacedCall@edge'), `only a pacing wait before the dial: ${queues.join(', ')}`);
    assert.ok(queues.slice(dial + 1).every((q) => q.endsWith('@edge')), `the script's lines run on the edge's own queue: ${queues.join(', ')}`);
  });

  test('each refusal of the INVITE ends the call as the status table says; the trunk’s own failure leaves its status line in a System Note', async () => {
    const cases: { answer: [number, string]; status: string; endReason: string; note?: RegExp }[] = [
      { answer: [486, 'Busy Here'], status: 'User rejected', endReason: 'busy' },
      { answer: [600, 'Busy Everywhere'], status: 'User rejected', endReason: 'busy' },
      { answer: [603, 'Decline'], status: 'User rejected', endReason: 'declined' },
      { answer: [408, 'Request Timeout'], status: 'rang-out', endReason: 'no_answer' },
      { answer: [480, 'Temporarily Unavailable'], status: 'User unavailable', endReason: 'unreachable' },
      { answer: [410, 'Gone'], status: 'User unavailable', endReason: 'unreachable' },
      { answer: [404, 'Not Found'], status: 'failed', endReason: 'invalid_number' },
      { answer: [484, 'Address Incomplete'], status: 'failed', endReason: 'invalid_number' },
      { answer: [503, 'Service Unavailable'], status: 'failed', endReason: 'trunk_error', note: /503 Service Unavailable/ },
      { answer: [0, 'trunk unreachable: connect ECONNREFUSED 127.0.0.1:5999'], status: 'failed', endReason: 'trunk_error', note: /could not be reached: trunk unreachable/ },
    ];
    const calls = await Promise.all(cases.map((c) => createPhoneCall({ reject: c.answer })));
    const ended = await Promise.all(calls.map(({ callId }) => result(callId)));
    for (const [i, c] of cases.entries()) {
      assert.deepEqual({ status: ended[i].status, endReason: ended[i].endReason }, { status: c.status, endReason: c.endReason }, `${c.answer.join(' ')}`);
      assert.equal(invitesTo(calls[i].to).length, 1, `${c.answer[0]}: one INVITE`);
      const notes = (await callRow(app.pool, calls[i].callId)).system_notes.filter((n) => n.kind === 'telephony');
      if (c.note) assert.match(notes[0]?.text ?? '', c.note);
      else assert.equal(notes.length, 0, `${c.answer[0]}: no System Note`);
    }
  });

  test('the real trunk agent cannot reach its trunk: failed / trunk_error, the System Note naming the trunk', async () => {
    const { callId } = await createPhoneCall({ unreachableTrunk: true });
    assert.deepEqual(await result(callId), { callId, status: 'failed', endReason: 'trunk_error' });
    const notes = (await callRow(app.pool, callId)).system_notes.filter((n) => n.kind === 'telephony');
    assert.match(notes[0]?.text ?? '', /The SIP trunk could not be reached/);
  });

  test('nobody answers within the ring timeout: CANCEL, then rang-out / no_answer', async () => {
    const { callId, to } = await createPhoneCall({ ringUntilCancelled: true });
    assert.deepEqual(await result(callId), { callId, status: 'rang-out', endReason: 'no_answer' });
    assert.deepEqual(trunk.cancels.filter((n) => n === to), [to]);
  });

  test('cancel-call while it rings sends CANCEL, and the call ends cancelled', async () => {
    const { callId, to } = await createPhoneCall({ ringUntilCancelled: true });
    await waitForCall(app.pool, callId, (c) => c.progress === 'ringing');
    const res = await app.request('POST', `/api/v1/cancel-call/${callId}`, { key: team.apiKey });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.status, 'cancelled');
    assert.deepEqual(await result(callId), { callId, status: 'cancelled', endReason: 'cancelled' });
    assert.deepEqual(trunk.cancels.filter((n) => n === to), [to], 'one CANCEL');
    // The CANCEL is cancel-call's (the workflow cancelled the dial), not the ring timeout's.
    const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
    assert.ok((history.events ?? []).some((e) => e.activityTaskCancelRequestedEventAttributes), 'the dial activity was cancelled');
  });

  test('cancel-call in progress stops the script, sends BYE, and the call ends cancelled', async () => {
    // Answered 1.5 s after the INVITE: the caller is told to stay on the first question before that.
    const { callId: id, to } = await createPhoneCall({ answerAfterMs: 1500 });
    // The cancel comes once the script waits on the caller's answer (an activity under way).
    await new Promise<void>((resolve) => lingerOnAsk.set(id, resolve));
    const cancel = await app.request('POST', `/api/v1/cancel-call/${id}`, { key: team.apiKey });
    assert.equal(cancel.status, 200, cancel.text);
    assert.deepEqual(await result(id), { callId: id, status: 'cancelled', endReason: 'cancelled' });
    assert.deepEqual(trunk.byes.filter((n) => n === to), [to], 'one BYE');
    assert.deepEqual(trunk.cancels.filter((n) => n === to), [], 'no CANCEL once answered');
  });

  test('a call in progress that no media edge dials (the simulator’s) still cannot be cancelled: 409 naming its status', async () => {
    // Scheduled an hour ahead (its workflow waits); the row is moved to in progress by hand.
    const later = await app.request('POST', '/api/v1/create-phone-call', {
      key: team.apiKey,
      body: { from_number: team.fromNumber, script_id: team.scriptId, contact: { phone_number: nextCallee() }, scheduled_time: new Date(Date.now() + 3_600_000).toISOString() },
    });
    const callId = later.json.call_id as string;
    await app.pool.query(`UPDATE calls SET status = 'in-progress', provider = 'simulator' WHERE id = $1`, [callId]);
    const res = await app.request('POST', `/api/v1/cancel-call/${callId}`, { key: team.apiKey });
    assert.equal(res.status, 409, res.text);
    assert.equal(res.json.message, 'Call cannot be cancelled: its status is in-progress');
    assert.equal((await callRow(app.pool, callId)).status, 'in-progress');
    await app.pool.query(`UPDATE calls SET status = 'failed', end_reason = 'provider_error' WHERE id = $1`, [callId]);
    await plain.workflow.getHandle(callWorkflowId(callId)).terminate('test over');
  });

  test('an answering machine (a silent line) hears the voicemail message, gets BYE, and the call ends voicemail with the message as the agent’s turn and a System Note of the detection', async () => {
    const script = await insertScript(app.pool, {
      teamId: team.teamId,
      name: 'With a voicemail message',
      definition: { name: 'With a voicemail message', voicemail_message: 'Hello {{contact.first_name}}, please call us back.', steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] },
    });
    const { callId, to } = await createPhoneCall({ answerAfterMs: 500, line: 'silent' }, script.id);
    assert.deepEqual(await screenedResult(callId), { callId, status: 'voicemail', endReason: 'voicemail' });
    assert.deepEqual(saidOnEdge.get(callId), ['Hello Ada, please call us back.'], 'the message, and nothing of the script');
    assert.deepEqual(trunk.byes.filter((n) => n === to), [to], 'the agent hung up with one BYE');
    const row = await callRow(app.pool, callId);
    assert.deepEqual(row.conversation, [{ role: 'agent', text: 'Hello Ada, please call us back.' }]);
    const notes = row.system_notes.filter((n) => n.kind === 'voicemail_detection');
    assert.equal(notes.length, 1, JSON.stringify(row.system_notes));
    assert.match(notes[0].text, /An answering machine took the call \(reason initial_silence, .*The voicemail message was said \d+ ms after the answer \(at the longest wait for a beep\)/);
    const data = notes[0].data as { detection: { verdict: string; reason: string }; message: { cue: string } };
    assert.equal(data.detection.verdict, 'machine');
    assert.equal(data.message.cue, 'max_wait');
    // The dial activity's time covers the longest wait for the beep and the message.
    const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
    const dial = (history.events ?? []).find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'dialPhoneCall')?.activityTaskScheduledEventAttributes;
    assert.ok(Number(dial?.startToCloseTimeout?.seconds) * 1000 >= 3_000 + 60_000 + SCREENING_WAIT_MS, `startToClose ${dial?.startToCloseTimeout?.seconds} s`);
  });

  test('an answering machine and a script without a voicemail message: BYE at the verdict, voicemail, no turn', async () => {
    const { callId, to } = await createPhoneCall({ answerAfterMs: 500, line: 'silent' });
    assert.deepEqual(await screenedResult(callId), { callId, status: 'voicemail', endReason: 'voicemail' });
    assert.equal(saidOnEdge.get(callId), undefined);
    assert.deepEqual(trunk.byes.filter((n) => n === to), [to]);
    const row = await callRow(app.pool, callId);
    assert.deepEqual(row.conversation, []);
    assert.match(row.system_notes.find((n) => n.kind === 'voicemail_detection')?.text ?? '', /The script has no voicemail message: the agent hung up/);
  });

  test('a script with voicemail_detection false is not screened: the silent callee hears the script, and the call completes', async () => {
    const definition = { name: 'No screening', voicemail_detection: false, voicemail_message: 'Please call us back.', steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] };
    const script = await insertScript(app.pool, { teamId: team.teamId, name: definition.name, definition });
    const { callId } = await createPhoneCall({ answerAfterMs: 500, line: 'silent' }, script.id);
    assert.deepEqual(await screenedResult(callId), { callId, status: 'completed', endReason: 'agent_hangup' });
    assert.equal(saidOnEdge.get(callId), undefined);
    assert.ok((await callRow(app.pool, callId)).system_notes.every((n) => n.kind !== 'voicemail_detection'));
  });

  test('a dial activity that fails after its INVITE went out is retried, and the retry sends no second INVITE (failed / media_edge_lost)', async () => {
    const { callId, to } = await createPhoneCall({ crashAfterInvite: true });
    assert.deepEqual(await result(callId), { callId, status: 'failed', endReason: 'media_edge_lost' });
    assert.equal(invitesTo(to).length, 1, 'one INVITE for the call');
    const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
    const attempts = (history.events ?? []).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 1] : []));
    assert.ok(Math.max(...attempts) >= 2, `the dial activity was retried (attempts ${attempts.join(', ')})`);
    const notes = (await callRow(app.pool, callId)).system_notes.filter((n) => n.kind === 'telephony');
    assert.match(notes[0]?.text ?? '', /not dialled again/);
  });

  test('with baresip as the far end: the dial activity fails after baresip answered, is retried, and baresip received one INVITE for the call', async () => {
    const { callId } = await createPhoneCall({ baresipThenCrash: true }, team.scriptId, BARESIP_CALLEE);
    const end = await result(callId);
    // Each offer an auto-answering baresip account takes is one CALL_REMOTE_SDP offer.
    const offers = phone.events.filter((e) => e.id === sipCallIdOf(callId) && e.type === 'CALL_REMOTE_SDP' && e.param === 'offer');
    assert.equal(offers.length, 1, `one INVITE reached baresip; events ${JSON.stringify(phone.events)}`);
    assert.deepEqual(end, { callId, status: 'failed', endReason: 'media_edge_lost' });
    const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
    const attempts = (history.events ?? []).flatMap((e) => (e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt ?? 1] : []));
    assert.ok(Math.max(...attempts) >= 2, `the dial activity was retried (attempts ${attempts.join(', ')})`);
  });
});

describe('the dial claim endpoint (POST /internal/v1/calls/{call_id}/dial-claim)', () => {
  const claim = (callId: string, body: unknown, secret = plane.secret) =>
    app.request('POST', `/internal/v1/calls/${callId}/dial-claim`, { headers: { Authorization: `Bearer ${secret}` }, body });

  test('one claim per call: the first takes it, its repeat is not first, another edge gets 409 naming the holder; 404, 400 and 401 as documented', async () => {
    const { callId } = await createPhoneCall({ ringUntilCancelled: true });
    await waitForCall(app.pool, callId, (c) => c.progress === 'ringing');
    // The real edge holds this call's claim already: a repeat by another claim id is refused.
    const other = await claim(callId, { claim_id: randomUUID(), media_task_queue: 'media-edge-other' });
    assert.equal(other.status, 409, other.text);
    assert.equal(other.json.message, 'Call already dialled');
    assert.match(other.json.media_task_queue, /^media-edge-edge-a-/);
    const bad = await claim(callId, { claim_id: 'nope', media_task_queue: 'q' });
    assert.equal(bad.status, 400);
    assert.match(bad.json.message, /claim_id/);
    assert.equal((await claim(callId, { claim_id: randomUUID(), media_task_queue: 'q' }, 'wrong-secret-wrong-secret')).status, 401);
    assert.equal((await claim(randomUUID(), { claim_id: randomUUID(), media_task_queue: 'q' })).status, 404);
    await app.request('POST', `/api/v1/cancel-call/${callId}`, { key: team.apiKey });
    await result(callId);
    const ended = await claim(callId, { claim_id: randomUUID(), media_task_queue: 'q' });
    assert.equal(ended.status, 409, 'still held: a claim is never released');
  });

  test('a scheduled call is not claimable; in progress, the first claim is first, its repeat is not; a call that ended unclaimed is 410', async () => {
    // Scheduled an hour ahead: its workflow waits, so the test moves the row itself.
    const later = await app.request('POST', '/api/v1/create-phone-call', {
      key: team.apiKey,
      body: { from_number: team.fromNumber, script_id: team.scriptId, contact: { phone_number: nextCallee() }, scheduled_time: new Date(Date.now() + 3_600_000).toISOString() },
    });
    const callId = later.json.call_id as string;
    const scheduled = await claim(callId, { claim_id: randomUUID(), media_task_queue: 'q' });
    assert.equal(scheduled.status, 409, scheduled.text);
    assert.match(scheduled.json.message, /not in progress: its status is scheduled/);
    await app.pool.query(`UPDATE calls SET status = 'in-progress' WHERE id = $1`, [callId]);
    const claimId = randomUUID();
    const first = await claim(callId, { claim_id: claimId, media_task_queue: 'media-edge-x' });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.json, { success: true, call_id: callId, team_id: team.teamId, first: true });
    const repeat = await claim(callId, { claim_id: claimId.toUpperCase(), media_task_queue: 'media-edge-x' });
    assert.equal(repeat.json.first, false);
    const unclaimed = await app.request('POST', '/api/v1/create-phone-call', {
      key: team.apiKey,
      body: { from_number: team.fromNumber, script_id: team.scriptId, contact: { phone_number: nextCallee() }, scheduled_time: new Date(Date.now() + 3_600_000).toISOString() },
    });
    await app.request('POST', `/api/v1/cancel-call/${unclaimed.json.call_id}`, { key: team.apiKey });
    const ended = await claim(unclaimed.json.call_id, { claim_id: randomUUID(), media_task_queue: 'q' });
    assert.equal(ended.status, 410, ended.text);
    assert.match(ended.json.message, /its status is cancelled/);
    await app.pool.query(`UPDATE calls SET status = 'cancelled', end_reason = 'cancelled' WHERE id = $1`, [callId]);
    await plain.workflow.getHandle(callWorkflowId(callId)).terminate('test over');
  });
});
