// The SIP trunk agent (src/mediaEdge/sip/trunk/) against real SIP software on loopback:
// baresip as the telephone behind the "trunk" (answering, busy, ringing, unknown numbers,
// hanging up, dialling in) and SIPp as a trunk that challenges with 401 or 407. A raw UDP/TCP
// peer written here plays the hostile sender and the retransmitting far end, where the
// exact bytes matter. Timers are shortened (T1 = 50 ms), so nothing waits for RFC defaults.
import assert from 'node:assert/strict';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { connect, createServer, type AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { SipTrunkAgent, type IncomingInvite, type SipDialog, type SipTrunkAgentOptions } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import type { TrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { freePort } from '../../src/localPorts.js';
import { freeSipPort } from '../support/sipPorts.js';
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
async function startAgent(trunkPort: number, extra: Partial<TrunkSettings> = {}, options: { transport?: 'udp' | 'tcp'; t1Ms?: number; caps?: SipTrunkAgentOptions['transport']; inboundDecisionMs?: number } = {}): Promise<SipTrunkAgent> {
  const port = await freeSipPort();
  const s = settings(trunkPort, { listen: { host: '127.0.0.1', port }, publicAddress: { host: '127.0.0.1', port }, ...extra }, options.transport);
  return SipTrunkAgent.start({ settings: s, logger, timers: { ...TIMERS, ...(options.t1Ms ? { t1Ms: options.t1Ms } : {}) }, transport: options.caps, inboundDecisionMs: options.inboundDecisionMs });
}

describe('SIP trunk agent: outbound calls to a baresip phone', { timeout: 60_000 }, () => {
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
    // The phone recorded the call both ways (what the helper offers the end-to-end tests).
    const recordings = phone.recordings();
    assert.ok(recordings.heard.length >= 1 && recordings.sent.length >= 1, JSON.stringify(recordings));
  });

  test('over TCP (transport=tcp): answered, and ended with BYE on the same kind of transport', async () => {
    const tcpAgent = await startAgent(phone.sipPort, {}, { transport: 'tcp' });
    try {
      const result = await tcpAgent.invite({ callId: 'call-tcp@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
      assert.equal(result.kind, 'answered', JSON.stringify(result));
      if (result.kind !== 'answered') return;
      const established = await phone.waitForEvent('CALL_ESTABLISHED', (e) => e.direction === 'incoming' && !phone.events.some((c) => c.type === 'CALL_CLOSED' && c.id === e.id));
      await result.dialog.bye();
      await phone.waitForEvent('CALL_CLOSED', (e) => e.id === established.id);
    } finally {
      await tcpAgent.close();
    }
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

  test('a call may ring past Timer B (64×T1): it ends only when aborted, then cancelled', async () => {
    const shortTimers = await startAgent(phone.sipPort, {}, { t1Ms: 10 });
    try {
      const controller = new AbortController();
      let rang = false;
      const pending = shortTimers.invite({
        callId: 'call-long-ring@test',
        fromNumber: CALLER,
        toNumber: '+15550000002',
        sdp: offer(),
        signal: controller.signal,
        onProgress: () => {
          rang = true;
          // Three times Timer B (640 ms at T1 = 10 ms) of ringing, then the caller gives up.
          setTimeout(() => controller.abort(), 3 * 64 * 10);
        },
      });
      assert.deepEqual(await pending, { kind: 'cancelled' });
      assert.equal(rang, true);
    } finally {
      await shortTimers.close();
    }
  });

  test('closing the agent while a call rings: CANCEL to the phone, and the dial fails with status 0', async () => {
    const closing = await startAgent(phone.sipPort);
    const before = phone.events.length;
    const result = await closing.invite({ callId: 'call-closing@test', fromNumber: CALLER, toNumber: '+15550000002', sdp: offer(), onProgress: () => void closing.close() });
    assert.deepEqual(result, { kind: 'failed', status: 0, reason: 'the SIP agent shut down while the call was being set up' });
    const incoming = await phone.waitForEvent('CALL_INCOMING', (e) => phone.events.indexOf(e) >= before);
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === incoming.id);
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

describe('SIP trunk agent: an unreachable trunk and digest challenges', { timeout: 60_000 }, () => {
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

describe('SIP trunk agent: inbound calls from a baresip phone', { timeout: 60_000 }, () => {
  let phone: BaresipPhone;
  let agent: SipTrunkAgent;
  let strangerAgent: SipTrunkAgent;
  let decide: (invite: IncomingInvite) => Promise<void> = async (invite) => invite.reject(480, 'Temporarily Unavailable');
  const invites: IncomingInvite[] = [];

  before(async () => {
    phone = await BaresipPhone.start({ accounts: [{ number: CALLER, answer: 'auto' }] });
    [agent, strangerAgent] = await Promise.all([startAgent(phone.sipPort), startAgent(phone.sipPort, { allowedSources: ['10.0.0.0/8', '192.0.2.7'] })]);
    for (const a of [agent, strangerAgent]) {
      a.onIncomingInvite((invite) => {
        invites.push(invite);
        return decide(invite);
      });
    }
  });
  after(async () => {
    await Promise.all([agent?.close(), strangerAgent?.close()]);
    await phone?.stop();
  });

  test('an INVITE from the trunk reaches onIncomingInvite with the numbers; answer() establishes a dialog that the phone can end', async () => {
    invites.length = 0;
    let dialog: Promise<SipDialog> | undefined;
    decide = async (invite) => {
      dialog = invite.answer(offer(31000));
    };
    await phone.dial(`sip:+15550001111@127.0.0.1:${agent.port}`, CALLER);
    const established = await phone.waitForEvent('CALL_ESTABLISHED', (e) => e.direction === 'outgoing');
    assert.equal(invites.length, 1);
    const [invite] = invites;
    assert.equal(invite.fromNumber, CALLER);
    assert.equal(invite.toNumber, '+15550001111');
    assert.equal(invite.sourceAddress, '127.0.0.1');
    assert.match(invite.sdp, /^m=audio \d+ RTP\/AVP .*\b0\b/m);
    const answered = await dialog!;
    assert.equal(answered.callId, invite.callId);
    const ended = new Promise<string>((resolve) => answered.onEnded(resolve));
    await phone.hangup(CALLER);
    assert.equal(await ended, 'remote_bye');
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === established.id);
  });

  test('an INVITE over TCP is answered on its connection, and the dialog ends with the phone\'s BYE', async () => {
    invites.length = 0;
    let dialog: Promise<SipDialog> | undefined;
    decide = async (invite) => {
      dialog = invite.answer(offer(31002));
    };
    const before = phone.events.length;
    await phone.dial(`sip:+15550003333@127.0.0.1:${agent.port};transport=tcp`, CALLER);
    const established = await phone.waitForEvent('CALL_ESTABLISHED', (e) => phone.events.indexOf(e) >= before);
    assert.equal(invites[0]?.toNumber, '+15550003333');
    assert.ok(agent.tcpConnections >= 1, 'the INVITE came over TCP');
    const answered = await dialog!;
    const ended = new Promise<string>((resolve) => answered.onEnded(resolve));
    await phone.hangup(CALLER);
    assert.equal(await ended, 'remote_bye');
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === established.id);
  });

  test("reject(404) refuses the INVITE with the control plane's status", async () => {
    invites.length = 0;
    decide = async (invite) => invite.reject(404, 'Not Found');
    const before = phone.events.length;
    await phone.dial(`sip:+15550002222@127.0.0.1:${agent.port}`, CALLER);
    const closed = await phone.waitForEvent('CALL_CLOSED', (e) => phone.events.indexOf(e) >= before);
    assert.match(String(closed.param), /404/);
    assert.equal(invites.length, 1);
  });

  test('an INVITE from a source outside SIP_TRUNK_ALLOWED_SOURCES gets 403, is counted, and reaches no one', async () => {
    invites.length = 0;
    const before = phone.events.length;
    await phone.dial(`sip:+15550001111@127.0.0.1:${strangerAgent.port}`, CALLER);
    const closed = await phone.waitForEvent('CALL_CLOSED', (e) => phone.events.indexOf(e) >= before);
    assert.match(String(closed.param), /403/);
    assert.equal(invites.length, 0);
    assert.equal(strangerAgent.stats.refusedSources, 1);
  });
});

/** A far end written by hand over UDP: exact bytes out, every message in. */
class RawPeer {
  readonly received: string[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly socket: UdpSocket,
    readonly port: number,
  ) {
    socket.on('message', (data) => {
      this.received.push(data.toString('utf8'));
      for (const waiter of [...this.waiters]) waiter();
    });
  }

  static async open(): Promise<RawPeer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new RawPeer(socket, socket.address().port);
  }

  send(text: string | Buffer, port: number): Promise<void> {
    return new Promise((resolve, reject) => this.socket.send(text, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
  }

  /** Messages so far that `match` accepts. */
  all(match: RegExp): string[] {
    return this.received.filter((m) => match.test(m));
  }

  /** The `count`-th message (1-based) that `match` accepts, waiting for it up to 5 s. */
  waitFor(match: RegExp, count = 1): Promise<string> {
    const find = () => this.all(match)[count - 1];
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found === undefined) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`no message matching ${match} (#${count}); received:\n${this.received.map((m) => m.split('\r\n')[0]).join('\n')}`));
      }, 5000);
      this.waiters.add(check);
      check();
    });
  }

  close(): void {
    this.socket.close();
  }
}

interface RawRequest {
  method: string;
  uri: string;
  branch: string;
  callId: string;
  cseq: number;
  fromTag: string;
  toTag?: string;
  port: number;
  headers?: string[];
  contentType?: string;
  body?: string;
}

function rawRequest(r: RawRequest): string {
  const body = r.body ?? '';
  return [
    `${r.method} ${r.uri} SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:${r.port};branch=${r.branch};rport`,
    'Max-Forwards: 70',
    `From: <sip:${CALLER}@127.0.0.1>;tag=${r.fromTag}`,
    `To: <sip:+15550001111@127.0.0.1>${r.toTag ? `;tag=${r.toTag}` : ''}`,
    `Call-ID: ${r.callId}`,
    `CSeq: ${r.cseq} ${r.method}`,
    `Contact: <sip:${CALLER}@127.0.0.1:${r.port}>`,
    ...(r.headers ?? []),
    ...(r.contentType ? [`Content-Type: ${r.contentType}`] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

const toTagOf = (response: string): string => /^To:.*;tag=([^;\r\n]+)/im.exec(response)?.[1] ?? '';

describe('SIP trunk agent: transactions and dialogs with a hand-written far end', { timeout: 60_000 }, () => {
  let agent: SipTrunkAgent;
  let peer: RawPeer;
  const invites: IncomingInvite[] = [];
  let decide: (invite: IncomingInvite) => Promise<void> = async () => undefined;

  before(async () => {
    peer = await RawPeer.open();
    agent = await startAgent(peer.port, {}, {});
    agent.onIncomingInvite((invite) => {
      invites.push(invite);
      return decide(invite);
    });
  });
  after(async () => {
    await agent?.close();
    peer?.close();
  });

  test('a retransmitted INVITE and BYE are answered from their transactions: one onIncomingInvite, one onEnded; INFO digits, a re-INVITE, OPTIONS and REFER in the dialog', async () => {
    invites.length = 0;
    let answered: Promise<SipDialog> | undefined;
    let answerNow: () => void = () => undefined;
    const answerGate = new Promise<void>((resolve) => (answerNow = resolve));
    decide = async (invite) => {
      await answerGate;
      answered = invite.answer(offer(32000));
    };
    const base = { uri: `sip:+15550001111@127.0.0.1:${agent.port}`, callId: 'raw-1@test', fromTag: 'rawtag', port: peer.port };
    const invite = rawRequest({ ...base, method: 'INVITE', branch: 'z9hG4bKraw1', cseq: 1, contentType: 'application/sdp', body: offer(33000) });
    await peer.send(invite, agent.port);
    await peer.waitFor(/^SIP\/2\.0 100 /);
    await peer.send(invite, agent.port);
    await peer.waitFor(/^SIP\/2\.0 100 /, 2);
    assert.equal(invites.length, 1);
    answerNow();
    // The 200 is repeated until the ACK comes (Timer G's schedule for 2xx, RFC 3261 §13.3.1.4).
    const ok = await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 1 INVITE/, 2);
    assert.match(ok, /a=rtpmap:0 PCMU\/8000/);
    const toTag = toTagOf(ok);
    assert.ok(toTag);
    await peer.send(rawRequest({ ...base, method: 'ACK', branch: 'z9hG4bKraw1ack', cseq: 1, toTag }), agent.port);
    const dialog = await answered!;
    const infos: string[] = [];
    dialog.onInfo((contentType, body) => infos.push(`${contentType}|${body}`));
    const ended: string[] = [];
    dialog.onEnded((by) => ended.push(by));

    await peer.send(rawRequest({ ...base, method: 'INFO', branch: 'z9hG4bKraw2', cseq: 2, toTag, contentType: 'application/dtmf-relay', body: 'Signal=5\r\nDuration=160\r\n' }), agent.port);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 2 INFO/);
    assert.deepEqual(infos, ['application/dtmf-relay|Signal=5\r\nDuration=160\r\n']);

    // A carrier's session refresh: the same SDP again.
    await peer.send(rawRequest({ ...base, method: 'INVITE', branch: 'z9hG4bKraw3', cseq: 3, toTag, contentType: 'application/sdp', body: offer(33000) }), agent.port);
    const refreshed = await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 3 INVITE/);
    assert.equal(refreshed.slice(refreshed.indexOf('\r\n\r\n')), ok.slice(ok.indexOf('\r\n\r\n')));
    await peer.send(rawRequest({ ...base, method: 'ACK', branch: 'z9hG4bKraw3ack', cseq: 3, toTag }), agent.port);

    await peer.send(rawRequest({ ...base, method: 'OPTIONS', branch: 'z9hG4bKraw4', cseq: 4, toTag }), agent.port);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 4 OPTIONS/);

    // REFER: 202 is accepted, a refusal is reported with its status.
    const referred = dialog.refer('+15550009999');
    const refer = await peer.waitFor(/^REFER /);
    assert.match(refer, new RegExp(`^Refer-To: <sip:\\+15550009999@127\\.0\\.0\\.1:${peer.port}>`, 'm'));
    await peer.send(rawResponse(refer, 202, 'Accepted'), agent.port);
    assert.deepEqual(await referred, { accepted: true, status: 202 });
    const refused = dialog.refer('sip:desk@192.0.2.1');
    const refer2 = await peer.waitFor(/^REFER /, 2);
    assert.match(refer2, /^Refer-To: <sip:desk@192\.0\.2\.1>/m);
    await peer.send(rawResponse(refer2, 603, 'Declined'), agent.port);
    assert.deepEqual(await refused, { accepted: false, status: 603 });

    const bye = rawRequest({ ...base, method: 'BYE', branch: 'z9hG4bKraw5', cseq: 5, toTag });
    await peer.send(bye, agent.port);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 5 BYE/);
    await peer.send(bye, agent.port);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 5 BYE/, 2);
    assert.deepEqual(ended, ['remote_bye']);
    assert.equal(invites.length, 1);
    assert.equal(agent.dialogCount, 0);
  });

  test('a handler that decides nothing in time: the INVITE is answered 503 and its signal aborted', async () => {
    const slow = await startAgent(peer.port, {}, { inboundDecisionMs: 200 });
    try {
      let aborted = false;
      slow.onIncomingInvite(
        (invite) =>
          new Promise<void>((resolve) => {
            invite.signal.addEventListener('abort', () => {
              aborted = true;
              resolve();
            });
          }),
      );
      const base = { uri: `sip:+15550001111@127.0.0.1:${slow.port}`, callId: 'raw-slow@test', fromTag: 's1', port: peer.port, branch: 'z9hG4bKslow', cseq: 1 };
      await peer.send(rawRequest({ ...base, method: 'INVITE', contentType: 'application/sdp', body: offer() }), slow.port);
      const refused = await peer.waitFor(/^SIP\/2\.0 503 [^]*Call-ID: raw-slow@test/);
      assert.match(refused, /no decision in time/);
      await peer.send(rawRequest({ ...base, method: 'ACK', toTag: toTagOf(refused) }), slow.port);
      assert.equal(aborted, true);
    } finally {
      await slow.close();
    }
  });

  test('over TCP, a final response whose connection closed meanwhile goes on a new connection to the port the Via names', { timeout: 10_000 }, async () => {
    invites.length = 0;
    const replies = createServer();
    let received = '';
    const gotReply = new Promise<void>((resolve) =>
      replies.on('connection', (socket) =>
        socket.on('data', (d) => {
          received += d.toString();
          if (/^SIP\/2\.0 404 /m.test(received)) resolve();
        }),
      ),
    );
    await new Promise<void>((resolve) => replies.listen(0, '127.0.0.1', resolve));
    const replyPort = (replies.address() as AddressInfo).port;
    let clientClosed: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (clientClosed = resolve));
    decide = async (invite) => {
      await closed;
      invite.reject(404, 'Not Found');
    };
    try {
      const invite = rawRequest({ uri: `sip:+15550001111@127.0.0.1:${agent.port};transport=tcp`, callId: 'raw-tcp-gone@test', fromTag: 'g1', port: replyPort, method: 'INVITE', branch: 'z9hG4bKtcpgone', cseq: 1, contentType: 'application/sdp', body: offer() }).replace('SIP/2.0/UDP', 'SIP/2.0/TCP');
      const client = connect({ host: '127.0.0.1', port: agent.port }, () => client.write(invite));
      client.on('error', () => undefined);
      await new Promise<void>((resolve) => client.on('data', (d) => /^SIP\/2\.0 100 /.test(d.toString()) && resolve()));
      client.destroy();
      await new Promise((r) => setTimeout(r, 100));
      clientClosed();
      await gotReply;
      assert.match(received, /Call-ID: raw-tcp-gone@test/);
      assert.equal(invites.length, 1);
    } finally {
      replies.close();
    }
  });

  test('an INVITE without G.711 gets 488 and reaches no one', async () => {
    invites.length = 0;
    const g722 = offer(34000).replace(/m=audio (\d+) RTP\/AVP [^\r]*/, 'm=audio $1 RTP/AVP 9').replace(/a=rtpmap:(0|8) [^\r]*\r\n/g, '');
    await peer.send(rawRequest({ uri: `sip:+15550001111@127.0.0.1:${agent.port}`, callId: 'raw-g722@test', fromTag: 't1', port: peer.port, method: 'INVITE', branch: 'z9hG4bKg722', cseq: 1, contentType: 'application/sdp', body: g722 }), agent.port);
    await peer.waitFor(/^SIP\/2\.0 488 [^]*Call-ID: raw-g722@test/);
    assert.equal(invites.length, 0);
  });

  test('a CANCEL before the answer: 200 to the CANCEL, 487 to the INVITE, the invite signal aborted and answer() refused', async () => {
    invites.length = 0;
    let cancelledSeen: Promise<void> | undefined;
    decide = async (invite) => {
      cancelledSeen = new Promise((resolve) => invite.signal.addEventListener('abort', () => resolve()));
      await cancelledSeen;
      await assert.rejects(invite.answer(offer()));
    };
    const base = { uri: `sip:+15550001111@127.0.0.1:${agent.port}`, callId: 'raw-cancel@test', fromTag: 'c1', port: peer.port, branch: 'z9hG4bKcancel1', cseq: 1 };
    await peer.send(rawRequest({ ...base, method: 'INVITE', contentType: 'application/sdp', body: offer() }), agent.port);
    await peer.waitFor(/^SIP\/2\.0 100 [^]*Call-ID: raw-cancel@test/);
    await peer.send(rawRequest({ ...base, method: 'CANCEL' }), agent.port);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 1 CANCEL/);
    const terminated = await peer.waitFor(/^SIP\/2\.0 487 [^]*Call-ID: raw-cancel@test/);
    await peer.send(rawRequest({ ...base, method: 'ACK', toTag: toTagOf(terminated) }), agent.port);
    assert.equal(invites.length, 1);
    await cancelledSeen;
  });
});

/** A response to a request the peer received (its Via, From, To, Call-ID, CSeq), with a To tag, and optional headers and body. */
function rawResponse(request: string, status: number, reason: string, extra: string[] = [], body = ''): string {
  const header = (name: string) => new RegExp(`^${name}: .*$`, 'im').exec(request)?.[0] ?? '';
  const to = header('To');
  return [
    `SIP/2.0 ${status} ${reason}`,
    ...request.split('\r\n').filter((l) => /^Via:/i.test(l)),
    header('From'),
    /;tag=/.test(to) ? to : `${to};tag=peer`,
    header('Call-ID'),
    header('CSeq'),
    ...extra,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

describe('SIP trunk agent: outbound transactions against a hand-written trunk', { timeout: 60_000 }, () => {
  let agent: SipTrunkAgent;
  let peer: RawPeer;

  before(async () => {
    peer = await RawPeer.open();
    agent = await startAgent(peer.port);
  });
  after(async () => {
    await agent?.close();
    peer?.close();
  });

  test("the INVITE is retransmitted until a response (Timer A); a retransmitted 200 gets the ACK again; the callee's refresh re-INVITE gets our offer again; our BYE goes to the Contact", async () => {
    const pending = agent.invite({ callId: 'raw-out-1@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer() });
    const invite = await peer.waitFor(/^INVITE [^]*Call-ID: raw-out-1@test/);
    await peer.waitFor(/^INVITE [^]*Call-ID: raw-out-1@test/, 2);
    assert.match(invite, new RegExp(`^INVITE sip:\\${CALLEE}@127\\.0\\.0\\.1:${peer.port} SIP/2\\.0`));
    assert.match(invite, /^Via: SIP\/2\.0\/UDP 127\.0\.0\.1:\d+;branch=z9hG4bK[0-9a-f]+;rport/m);
    assert.match(invite, new RegExp(`^From: <sip:\\${CALLER}@127\\.0\\.0\\.1>;tag=\\w+`, 'm'));
    assert.match(invite, new RegExp(`^To: <sip:\\${CALLEE}@127\\.0\\.0\\.1>`, 'm'));
    assert.match(invite, new RegExp(`^Contact: <sip:\\${CALLER}@127\\.0\\.0\\.1:${agent.port}>`, 'm'));
    const ok = rawResponse(invite, 200, 'OK', [`Contact: <sip:callee@127.0.0.1:${peer.port}>`, 'Content-Type: application/sdp'], offer(35000));
    await peer.send(ok, agent.port);
    const result = await pending;
    assert.equal(result.kind, 'answered');
    await peer.waitFor(/^ACK sip:callee@127\.0\.0\.1:\d+ /);
    await peer.send(ok, agent.port);
    await peer.waitFor(/^ACK /, 2);
    if (result.kind !== 'answered') return;
    // The callee's session refresh and keep-alive reach our dialog (their From is our To, tagged).
    const ours = /^From: (.*)$/m.exec(invite)![1];
    const theirs = `${/^To: (.*)$/m.exec(invite)![1]};tag=peer`;
    const inDialog = (method: string, cseq: number, branch: string, body = '') =>
      [
        `${method} sip:${CALLER}@127.0.0.1:${agent.port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${peer.port};branch=${branch};rport`,
        'Max-Forwards: 70',
        `From: ${theirs}`,
        `To: ${ours}`,
        'Call-ID: raw-out-1@test',
        `CSeq: ${cseq} ${method}`,
        `Contact: <sip:callee@127.0.0.1:${peer.port}>`,
        ...(body ? ['Content-Type: application/sdp'] : []),
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n');
    await peer.send(inDialog('INVITE', 100, 'z9hG4bKrefresh', offer(35000)), agent.port);
    const refreshed = await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 100 INVITE/);
    assert.match(refreshed, /a=rtpmap:0 PCMU\/8000/);
    assert.equal(refreshed.slice(refreshed.indexOf('\r\n\r\n') + 4), offer());
    await peer.send(inDialog('ACK', 100, 'z9hG4bKrefreshack'), agent.port);
    await peer.send(inDialog('OPTIONS', 101, 'z9hG4bKkeepalive'), agent.port);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*CSeq: 101 OPTIONS/);
    const byeSent = result.dialog.bye();
    const bye = await peer.waitFor(/^BYE sip:callee@127\.0\.0\.1:\d+ /);
    assert.match(bye, /^CSeq: 2 BYE/m);
    await peer.send(rawResponse(bye, 200, 'OK'), agent.port);
    await byeSent;
  });

  test('a 200 that crosses the CANCEL: the call is acknowledged, hung up with BYE, and reported cancelled', async () => {
    const controller = new AbortController();
    const pending = agent.invite({ callId: 'raw-out-2@test', fromNumber: CALLER, toNumber: CALLEE, sdp: offer(), signal: controller.signal, onProgress: () => controller.abort() });
    const invite = await peer.waitFor(/^INVITE [^]*Call-ID: raw-out-2@test/);
    await peer.send(rawResponse(invite, 180, 'Ringing'), agent.port);
    const cancel = await peer.waitFor(/^CANCEL [^]*Call-ID: raw-out-2@test/);
    assert.equal(/^Via: .*$/m.exec(cancel)?.[0], /^Via: .*$/m.exec(invite)?.[0]);
    await peer.send(rawResponse(invite, 200, 'OK', [`Contact: <sip:callee@127.0.0.1:${peer.port}>`, 'Content-Type: application/sdp'], offer(35002)), agent.port);
    await peer.send(rawResponse(cancel, 200, 'OK'), agent.port);
    assert.deepEqual(await pending, { kind: 'cancelled' });
    await peer.waitFor(/^ACK [^]*Call-ID: raw-out-2@test/);
    const bye = await peer.waitFor(/^BYE [^]*Call-ID: raw-out-2@test/);
    await peer.send(rawResponse(bye, 200, 'OK'), agent.port);
  });
});

/** Opens a TCP connection to the agent, writes `data`, and collects what comes back until the agent closes it (or 3 s pass). */
function tcpExchange(port: number, data: string | Buffer, waitForClose = true): Promise<{ text: string; closedByAgent: boolean }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedByAgent: false });
    }, waitForClose ? 3000 : 500);
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedByAgent: true });
    });
    socket.on('connect', () => socket.write(data));
  });
}

describe('SIP trunk agent: hostile input', { timeout: 60_000 }, () => {
  let agent: SipTrunkAgent;
  let peer: RawPeer;

  before(async () => {
    peer = await RawPeer.open();
    agent = await startAgent(peer.port, {}, { caps: { maxTcpConnectionsPerAddress: 2, maxMessageBytes: 8192 } });
  });
  after(async () => {
    await agent?.close();
    peer?.close();
  });

  const options = (branch: string, extra: string[] = [], body = ''): string =>
    rawRequest({ method: 'OPTIONS', uri: `sip:127.0.0.1:${agent.port}`, branch, callId: `${branch}@test`, cseq: 1, fromTag: 'h', port: peer.port, headers: extra, body });

  test('datagrams that are not SIP, or a request past the caps or malformed, get 400/513 or are dropped and counted; the next request is served', async () => {
    await peer.send('hello, is this a SIP server?', agent.port);
    await peer.send(Buffer.from([0, 1, 2, 3, 255, 254, 13, 10, 13, 10]), agent.port);
    await peer.send(options('z9hG4bKbadlen').replace(/Content-Length: 0/, 'Content-Length: abc'), agent.port);
    const badLength = await peer.waitFor(/^SIP\/2\.0 400 [^]*z9hG4bKbadlen/);
    assert.match(badLength, /malformed Content-Length/);
    const manyHeaders = Array.from({ length: 200 }, (_, i) => `X-Filler-${i}: ${i}`);
    await peer.send(options('z9hG4bKmany', manyHeaders), agent.port);
    await peer.waitFor(/^SIP\/2\.0 513 [^]*z9hG4bKmany/);
    const manyVias = Array.from({ length: 80 }, (_, i) => `Via: SIP/2.0/UDP 10.0.0.${i % 250}:5060;branch=z9hG4bKhop${i}`);
    await peer.send(options('z9hG4bKvias', manyVias), agent.port);
    await peer.waitFor(/^SIP\/2\.0 513 [^]*z9hG4bKvias/);
    await peer.send(options('z9hG4bKbig', [], 'x'.repeat(20_000)), agent.port);
    await peer.waitFor(/^SIP\/2\.0 513 [^]*z9hG4bKbig/);
    await peer.send(options('z9hG4bKfine'), agent.port);
    await peer.waitFor(/^SIP\/2\.0 200 [^]*z9hG4bKfine/);
    assert.equal(agent.stats.dropped, 2);
    assert.equal(agent.stats.answeredMalformed, 1);
    assert.equal(agent.stats.answeredTooLarge, 3);
  });

  test('TCP: a message without Content-Length gets 400 and the connection is closed; one past the size cap 513; a well-framed stream is served message by message', async () => {
    const noLength = await tcpExchange(agent.port, options('z9hG4bKtcpnolen').replace(/Content-Length: 0\r\n/, ''));
    assert.match(noLength.text, /^SIP\/2\.0 400 [^]*no Content-Length/);
    assert.equal(noLength.closedByAgent, true);
    const huge = await tcpExchange(agent.port, options('z9hG4bKtcphuge').replace(/Content-Length: 0/, 'Content-Length: 900000'));
    assert.match(huge.text, /^SIP\/2\.0 513 /);
    assert.equal(huge.closedByAgent, true);
    const endless = await tcpExchange(agent.port, `OPTIONS sip:x SIP/2.0\r\n${'X-Junk: aaaaaaaaaaaaaaaa\r\n'.repeat(1000)}`);
    assert.equal(endless.closedByAgent, true);
    // Two messages in one write and a keep-alive CRLF between them: each is answered.
    const tcpOptions = (branch: string) => options(branch).replace('SIP/2.0/UDP', 'SIP/2.0/TCP');
    const framed = await tcpExchange(agent.port, `${tcpOptions('z9hG4bKtcp1')}\r\n\r\n${tcpOptions('z9hG4bKtcp2')}`, false);
    assert.match(framed.text, /^SIP\/2\.0 200 [^]*z9hG4bKtcp1[^]*SIP\/2\.0 200 [^]*z9hG4bKtcp2/);
    assert.equal(agent.stats.closedTcpConnections, 3);
  });

  test('TCP: connections past the per-address cap are closed at once and counted', async () => {
    const sockets = await Promise.all(
      [1, 2].map(
        () =>
          new Promise<ReturnType<typeof connect>>((resolve) => {
            const s = connect({ host: '127.0.0.1', port: agent.port }, () => resolve(s));
          }),
      ),
    );
    await new Promise((r) => setTimeout(r, 50));
    const third = await tcpExchange(agent.port, options('z9hG4bKthird').replace('SIP/2.0/UDP', 'SIP/2.0/TCP'));
    assert.equal(third.closedByAgent, true);
    assert.equal(third.text, '');
    assert.equal(agent.stats.refusedTcpConnections, 1);
    for (const s of sockets) s.destroy();
  });

  test('UDP: a flood of distinct requests from one source is cut at SIP_SOURCE_REQUESTS_PER_SECOND (the rest dropped and counted); the trunk’s own address is exempt', async () => {
    const burst = async (allowedSources: string[]) => {
      const flooder = await RawPeer.open();
      const limited = await startAgent(flooder.port, { allowedSources, sourceRequestsPerSecond: 5 });
      try {
        for (let i = 0; i < 20; i++) {
          await flooder.send(rawRequest({ method: 'OPTIONS', uri: `sip:127.0.0.1:${limited.port}`, branch: `z9hG4bKflood${i}`, callId: `flood-${i}@test`, cseq: 1, fromTag: 'f', port: flooder.port }), limited.port);
        }
        // Every request is either answered (200 from the trunk's address, else 403) or counted as dropped.
        const deadline = Date.now() + 5000;
        while (flooder.all(/^SIP\/2\.0 (200|403) /).length + limited.stats.rateLimited < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        return { answered: flooder.all(/^SIP\/2\.0 (200|403) /).length, dropped: limited.stats.rateLimited };
      } finally {
        await limited.close();
        flooder.close();
      }
    };
    // Not the trunk: 5 a second are answered (403: not an allowed source); a burst that straddles two seconds gets 10 at most.
    const stranger = await burst(['192.0.2.1']);
    assert.equal(stranger.answered + stranger.dropped, 20, JSON.stringify(stranger));
    assert.ok(stranger.answered >= 5 && stranger.answered <= 10, JSON.stringify(stranger));
    // The trunk's own address: every request answered, none dropped.
    assert.deepEqual(await burst(['127.0.0.1']), { answered: 20, dropped: 0 });
  });
});
