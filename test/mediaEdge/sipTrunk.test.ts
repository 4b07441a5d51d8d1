// The SIP trunk agent (src/mediaEdge/sip/trunk/) against real SIP software on loopback:
// baresip as the telephone behind the "trunk" (answering, busy, ringing, unknown numbers,
// hanging up, dialling in) and SIPp as a trunk that challenges with 401 or 407. A raw UDP/TCP
// peer written here plays the hostile sender and the retransmitting far end, where the
// exact bytes matter. Timers are shortened (T1 = 50 ms), so nothing waits for RFC defaults.
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { SipTrunkAgent, type IncomingInvite, type SipDialog } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import type { TrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { freePort } from '../../src/localPorts.js';
import { BaresipPhone } from '../support/baresip.js';
import { startSipp } from '../support/sipp.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const TIMERS = { t1Ms: 50, t2Ms: 400, t4Ms: 500 };
const CALLEE = '+15551234567';
const CALLER = '+15557654321';

function offer(port = 30000): string {
  return ['v=0', `o=- 1 1 IN IP4 127.0.0.1`, 's=-', 'c=IN IP4 127.0.0.1', 't=0 0', `m=audio ${port} RTP/AVP 0 8 101`, 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=fmtp:101 0-15', 'a=ptime:20', 'a=sendrecv', ''].join('\r\n');
}

function settings(trunkPort: number, extra: Partial<TrunkSettings> = {}, transport: 'udp' | 'tcp' = 'udp'): TrunkSettings {
  return {
    trunk: { uri: `sip:127.0.0.1:${trunkPort};transport=${transport}`, host: '127.0.0.1', port: trunkPort, transport },
    listen: { host: '127.0.0.1', port: 0 },
    publicAddress: { host: '127.0.0.1', port: 0 },
    rtpPortRange: { min: 40000, max: 40999 },
    allowedSources: ['127.0.0.1'],
    ...extra,
  };
}

/** An agent whose Contact/Via name the port it got. */
async function startAgent(trunkPort: number, extra: Partial<TrunkSettings> = {}, options: { transport?: 'udp' | 'tcp'; t1Ms?: number } = {}): Promise<SipTrunkAgent> {
  const port = await freePort();
  const s = settings(trunkPort, { listen: { host: '127.0.0.1', port }, publicAddress: { host: '127.0.0.1', port }, ...extra }, options.transport);
  return SipTrunkAgent.start({ settings: s, logger, timers: { ...TIMERS, ...(options.t1Ms ? { t1Ms: options.t1Ms } : {}) } });
}

describe('SIP trunk agent: outbound calls to a baresip phone', () => {
  let phone: BaresipPhone;
  let busy: BaresipPhone;
  let agent: SipTrunkAgent;
  let busyAgent: SipTrunkAgent;

  before(async () => {
    [phone, busy] = await Promise.all([
      BaresipPhone.start({ accounts: [{ number: CALLEE, answer: 'auto' }, { number: '+15550000002', answer: 'manual' }] }),
      BaresipPhone.start({ accounts: [{ number: CALLEE, answer: 'auto' }], busy: true }),
    ]);
    [agent, busyAgent] = await Promise.all([startAgent(phone.sipPort), startAgent(busy.sipPort)]);
  });
  after(async () => {
    await Promise.all([agent?.close(), busyAgent?.close()]);
    await Promise.all([phone?.stop(), busy?.stop()]);
  });

  test('an INVITE to an auto-answering phone is answered with SDP naming PCMU, after 180 Ringing; our BYE ends it at the phone', async () => {
    const progress: string[] = [];
    const result = await agent.invite({ callId: 'call-answered@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer(), onProgress: (status, reason) => progress.push(`${status} ${reason}`) });
    assert.equal(result.kind, 'answered', JSON.stringify(result));
    if (result.kind !== 'answered') return;
    assert.match(result.sdp, /^m=audio \d+ RTP\/AVP 0\b/m);
    assert.match(result.sdp, /a=rtpmap:0 PCMU\/8000/);
    assert.deepEqual(progress, ['180 Ringing']);
    assert.equal(result.dialog.callId, 'call-answered@test');
    const established = await phone.waitForEvent('CALL_ESTABLISHED', (e) => e.direction === 'incoming');
    assert.equal(established.peeruri, `sip:${CALLER}@127.0.0.1`);
    await result.dialog.bye();
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === established.id);
    assert.equal(agent.dialogCount, 0);
  });

  test('a busy phone: failed with 486 and its status line', async () => {
    const result = await busyAgent.invite({ callId: 'call-busy@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
    assert.deepEqual(result, { kind: 'failed', status: 486, reason: '486 Busy Here' });
  });

  test('a number the phone does not have: failed 404', async () => {
    const result = await agent.invite({ callId: 'call-404@test', fromNumber: CALLER, toNumber: '+15559999999', sdp: offer() });
    assert.equal(result.kind, 'failed');
    assert.equal(result.kind === 'failed' && result.status, 404);
    assert.match(result.kind === 'failed' ? result.reason : '', /^404 /);
  });

  test("abort while it rings sends CANCEL: cancelled (after the phone's 487), and the phone's call is closed", async () => {
    const controller = new AbortController();
    const progress: number[] = [];
    const pending = agent.invite({
      callId: 'call-cancel@test',
      fromNumber: CALLER,
      toNumber: '+15550000002',
      sdp: offer(),
      signal: controller.signal,
      onProgress: (status) => {
        progress.push(status);
        controller.abort();
      },
    });
    const result = await pending;
    assert.deepEqual(result, { kind: 'cancelled' });
    assert.deepEqual(progress, [180]);
    const incoming = await phone.waitForEvent('CALL_INCOMING', (e) => e.accountaor === phone.uri('+15550000002'));
    // baresip reports a cancelled incoming call as closed by the caller ('Connection reset by peer').
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === incoming.id);
    assert.equal(agent.dialogCount, 0);
  });

  test('abort before any provisional response: the CANCEL waits for one (RFC 3261 §9.1), the call ends cancelled', async () => {
    const controller = new AbortController();
    const pending = agent.invite({ callId: 'call-early-cancel@test', fromNumber: CALLER, toNumber: '+15550000002', sdp: offer(), signal: controller.signal });
    controller.abort();
    assert.deepEqual(await pending, { kind: 'cancelled' });
  });

  test('BYE from the phone: onEnded reports remote_bye', async () => {
    const result = await agent.invite({ callId: 'call-remote-bye@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
    assert.equal(result.kind, 'answered');
    if (result.kind !== 'answered') return;
    const ended = new Promise<string>((resolve) => result.dialog.onEnded(resolve));
    await phone.waitForEvent('CALL_ESTABLISHED', (e) => e.direction === 'incoming' && !phone.events.some((c) => c.type === 'CALL_CLOSED' && c.id === e.id));
    await phone.hangup(CALLEE);
    assert.equal(await ended, 'remote_bye');
    assert.equal(agent.dialogCount, 0);
  });
});

describe('SIP trunk agent: an unreachable trunk and digest challenges', () => {
  test('a trunk that never answers over UDP: failed with status 0 naming the trunk, after Timer B', async () => {
    const closedPort = await freePort();
    const agent = await startAgent(closedPort, {}, { t1Ms: 10 });
    try {
      const result = await agent.invite({ callId: 'call-unreachable@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
      assert.equal(result.kind, 'failed');
      if (result.kind !== 'failed') return;
      assert.equal(result.status, 0);
      assert.match(result.reason, new RegExp(`^trunk unreachable: no response from 127\\.0\\.0\\.1:${closedPort} over udp`));
    } finally {
      await agent.close();
    }
  });

  test('a TCP trunk that refuses the connection: failed with status 0 naming the trunk', async () => {
    const closedPort = await freePort();
    const agent = await startAgent(closedPort, {}, { transport: 'tcp' });
    try {
      const result = await agent.invite({ callId: 'call-refused@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
      assert.equal(result.kind, 'failed');
      if (result.kind !== 'failed') return;
      assert.equal(result.status, 0);
      assert.match(result.reason, new RegExp(`^trunk unreachable: 127\\.0\\.0\\.1:${closedPort} over tcp: .*ECONNREFUSED`));
    } finally {
      await agent.close();
    }
  });

  for (const [status, scenario] of [
    [401, 'uas-auth-401.xml'],
    [407, 'uas-auth-407.xml'],
  ] as const) {
    test(`a trunk that challenges with ${status}: the INVITE is sent again with the digest answer and answered`, async () => {
      const sipp = await startSipp({ scenario: `test/mediaEdge/sipScenarios/${scenario}` });
      const agent = await startAgent(sipp.port, { credentials: { username: 'alice', password: 'secret' } });
      try {
        const result = await agent.invite({ callId: `call-auth-${status}@test`, fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
        assert.equal(result.kind, 'answered', JSON.stringify(result));
        if (result.kind === 'answered') await result.dialog.bye();
        const run = await sipp.done;
        assert.equal(run.code, 0, `SIPp: ${run.output.slice(-1500)}\n${run.errors}`);
      } finally {
        await agent.close();
        await sipp.stop();
      }
    });
  }

  test('wrong credentials: the challenge is answered once, and the refusal is the result', async () => {
    const sipp = await startSipp({ scenario: 'test/mediaEdge/sipScenarios/uas-auth-401.xml' });
    const agent = await startAgent(sipp.port, { credentials: { username: 'alice', password: 'wrong' } });
    try {
      const result = await agent.invite({ callId: 'call-auth-wrong@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
      assert.deepEqual(result, { kind: 'failed', status: 403, reason: '403 Forbidden' });
    } finally {
      await agent.close();
      await sipp.stop();
    }
  });
});
