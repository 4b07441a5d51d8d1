// A phone call's RTP session on loopback UDP against a test-side far end (test/support/rtpPeer.ts):
// G.711 both ways at 8 kHz ↔ the channel's 16 kHz, the jitter buffer under reordered, lost and
// duplicated packets, symmetric RTP, hostile datagrams dropped and counted, RFC 4733 digits both
// ways, inactivity closing the channel `media_lost`, and the port range running out.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { describe, it } from 'node:test';
import type { PcmFrame } from '../../src/mediaEdge/media/channel.js';
import { RtpPortsExhaustedError } from '../../src/mediaEdge/rtp/portAllocator.js';
import { openRtpSession } from '../../src/mediaEdge/rtp/rtpSession.js';
import { loadMediaEdgeConfig } from '../../src/mediaEdge/server.js';
import { createLogger } from '../../src/logging/logger.js';
import { establishedPhoneCall } from '../../src/mediaEdge/phoneCall.js';
import type { SipDialog } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import { parseTelephoneEvent } from '../../src/mediaEdge/rtp/telephoneEvent.js';
import { LOOPBACK, loopbackRtp } from '../support/loopbackRtp.js';
import { PHONE_FRAME } from '../support/rtpPeer.js';
import { rms, toneFrames, zeroCrossingFrequency } from '../support/webrtcPeer.js';
import { eventually } from '../support/eventually.js';

// A range of its own per file (other test files may open sessions at the same time).
const rtp = loopbackRtp({ min: 47_000, max: 47_199 });
const loopback = LOOPBACK;

async function call(options: { payloadType?: 0 | 8; inactivityMs?: number; telephoneEvent?: boolean } = {}) {
  const { session, peer } = await rtp.call({
    payloadType: options.payloadType ?? 0,
    inactivityMs: options.inactivityMs ?? 5000,
    peerTelephoneEvent: 101,
    sessionTelephoneEvent: options.telephoneEvent === false ? undefined : 101,
  });
  const inbound: PcmFrame[] = [];
  session.channel.onInbound((frame) => inbound.push(frame));
  return { session, peer, inbound };
}

const tone8k = (frequency: number, amplitude: number, samples: number) =>
  Int16Array.from({ length: samples }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / 8000)));

const median = (frame: Int16Array) => [...frame].sort((a, b) => a - b)[frame.length >> 1];

describe('RTP session', () => {
  for (const payloadType of [0, 8] as const) {
    it(`${payloadType === 0 ? 'PCMU' : 'PCMA'}: the far end's 8 kHz tone is heard at 16 kHz, and agent audio reaches it as 20 ms packets at 8 kHz`, async () => {
      const { session, peer, inbound } = await call({ payloadType });
      await peer.play(tone8k(1000, 8000, 8000)); // 1 s
      await eventually(() => inbound.filter((f) => rms(f) > 3000).length >= 40, 'the tone heard');
      const loud = inbound.filter((f) => rms(f) > 3000).flatMap((f) => [...f]);
      assert.ok(Math.abs(zeroCrossingFrequency(loud, 16_000) - 1000) < 30, `frequency ${zeroCrossingFrequency(loud, 16_000)}`);
      const sizes = new Set<number>();
      peer.onPacket((pt, payload) => pt === payloadType && sizes.add(payload.length));
      const before = peer.received.length;
      for (const frame of toneFrames(500, 8000, 25)) session.channel.enqueue(frame);
      await session.channel.drained();
      await eventually(() => peer.received.length - before >= 25 * PHONE_FRAME, 'the agent audio');
      assert.deepEqual([...sizes], [PHONE_FRAME]);
      const heard = peer.received.slice(before);
      const loudAt = heard.findIndex((x) => Math.abs(x) > 4000);
      const agent = heard.slice(loudAt + 200, loudAt + 200 + 20 * PHONE_FRAME);
      assert.ok(Math.abs(zeroCrossingFrequency(agent, 8000) - 500) < 20, `frequency ${zeroCrossingFrequency(agent, 8000)}`);
      assert.equal(session.stats.dropped.payload_type ?? 0, 0);
      assert.equal(session.channel.band, 'telephone', 'recognised as telephone-band audio');
    });
  }

  it('while the agent is silent the stream goes on with silence, which no outbound listener hears', async () => {
    const { session, peer } = await call();
    const outbound: PcmFrame[] = [];
    session.channel.onOutbound((frame) => outbound.push(frame));
    await eventually(() => peer.receivedPackets >= 10, 'silence packets');
    assert.equal(outbound.length, 0);
    assert.ok(peer.received.every((x) => Math.abs(x) < 50));
  });

  it('reordered, duplicated and lost packets play in timestamp order, the loss as one silent frame', async () => {
    const { session, peer, inbound } = await call();
    // Packet n holds a steady level of 1000·(n+1): what each 20 ms frame heard tells which packet it was.
    const sendPacket = (n: number) => peer.sendFrame(new Int16Array(PHONE_FRAME).fill(1000 * (n + 1)), { sequenceNumber: 500 + n, timestamp: 16_000 + n * PHONE_FRAME });
    for (const n of [0, 1, 3, 2, 2, 5, 6, 7]) sendPacket(n);
    await eventually(() => inbound.some((f) => median(f) > 7500), 'the packets played');
    const levels = inbound.map((f) => Math.round(median(f) / 1000)).filter((level, i, all) => level > 0 || (i > 0 && all[i - 1] > 0));
    assert.deepEqual(levels.slice(0, 8), [1, 2, 3, 4, 0, 6, 7, 8], `levels ${levels.join(',')}`);
    const jitter = session.stats.jitter;
    assert.equal(jitter.duplicate, 1);
    assert.equal(jitter.lost, 1);
  });

  it("symmetric RTP: packets go to the SDP's port until the far end's first packet, then to where it sends from; others' packets are dropped", async () => {
    const session = await rtp.session();
    const decoy = createSocket('udp4');
    await new Promise<void>((resolve) => decoy.bind(0, loopback, resolve));
    let atDecoy = 0;
    decoy.on('message', () => atDecoy++);
    const inbound: PcmFrame[] = [];
    session.channel.onInbound((f) => inbound.push(f));
    session.setRemote({ address: loopback, port: decoy.address().port, payloadType: 0 });
    await eventually(() => atDecoy >= 3, 'packets at the SDP address');
    // The far end writes the decoy's port in its SDP but sends (and receives) from another.
    const peer = await rtp.peer(session);
    peer.keepAlive();
    await eventually(() => peer.receivedPackets >= 5, 'packets at the real source');
    assert.deepEqual(session.sendingTo, { address: loopback, port: peer.port });
    const decoyCount = atDecoy;
    // A third party sends well-formed RTP: dropped, and the stream stays latched.
    const intruder = await rtp.peer(session);
    for (let i = 0; i < 5; i++) intruder.sendFrame(tone8k(1000, 20_000, PHONE_FRAME));
    await eventually(() => (session.stats.dropped.foreign_source ?? 0) === 5, 'the intruder counted');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(atDecoy - decoyCount <= 2, 'nothing more to the SDP port once latched');
    assert.ok(inbound.every((f) => rms(f) < 1000), 'the intruder was not heard');
    peer.stop();
    decoy.close();
  });

  it('hostile datagrams are dropped and counted, and the call goes on', async () => {
    const { session, peer, inbound } = await call();
    peer.sendRaw(new Uint8Array(0));
    peer.sendRaw(Uint8Array.of(1, 2, 3));
    peer.sendRaw(Buffer.alloc(40, 0xff));
    peer.sendRaw(Buffer.from([0x80, 201, 0, 1, ...Buffer.alloc(24)]));
    peer.sendRaw(Buffer.from([0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 2, 3])); // a payload type never negotiated
    peer.sendRaw(Buffer.from([0x8f, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]));
    await peer.play(tone8k(1000, 8000, 2400));
    await eventually(() => inbound.some((f) => rms(f) > 3000), 'the tone heard after the junk');
    const dropped = session.stats.dropped;
    assert.deepEqual(
      { too_short: dropped.too_short, version: dropped.version, rtcp: dropped.rtcp, payload_type: dropped.payload_type, csrc_overrun: dropped.csrc_overrun },
      { too_short: 2, version: 1, rtcp: 1, payload_type: 1, csrc_overrun: 1 },
    );
  });

  it('keypad digits: each RFC 4733 event is one digit however many packets carry it, and the edge can key digits too', async () => {
    const { session, peer } = await call();
    const digits: string[] = [];
    session.channel.onDigit((d) => digits.push(d));
    peer.keepAlive();
    await peer.sendDigits('12#');
    await eventually(() => digits.length >= 3, 'three digits');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(digits, ['1', '2', '#']);
    assert.equal(session.stats.digits, 3);

    const events: { digit: string; end: boolean }[] = [];
    peer.onPacket((pt, payload) => {
      const event = pt === 101 ? parseTelephoneEvent(payload) : undefined;
      if (event) events.push({ digit: event.digit, end: event.end });
    });
    session.sendDigits('9');
    await eventually(() => events.filter((e) => e.end).length === 3, 'the end packets');
    assert.ok(events.every((e) => e.digit === '9'));
    assert.throws(() => session.sendDigits('x'), /not a keypad digit/);
    peer.stop();
  });

  it("a key the signalling carried (SIP INFO) through the phone call's dialog is a digit on the channel", async () => {
    const { session } = await call({ telephoneEvent: false });
    const digits: string[] = [];
    session.channel.onDigit((d) => digits.push(d));
    const infoListeners = new Set<(contentType: string, body: string) => void>();
    const dialog: SipDialog = {
      callId: 'info-test',
      bye: async () => undefined,
      refer: async () => ({ accepted: false, status: 0 }),
      onEnded: () => () => undefined,
      onInfo: (listener) => {
        infoListeners.add(listener);
        return () => infoListeners.delete(listener);
      },
    };
    establishedPhoneCall('call-info', session, dialog, 'PCMU', createLogger('silent'));
    for (const [type, body] of [['application/dtmf-relay', 'Signal=3\r\nDuration=160'], ['application/dtmf', '#'], ['text/plain', 'Signal=9']]) {
      for (const listener of infoListeners) listener(type, body);
    }
    session.receiveDigit('x');
    assert.deepEqual(digits, ['3', '#']);
    session.close();
    await session.channel.closed;
    assert.equal(infoListeners.size, 0, 'the dialog is no longer listened to once the call ends');
  });

  it('digits from a far end that did not negotiate telephone-event are dropped as an unknown payload type', async () => {
    const { session, peer } = await call({ telephoneEvent: false });
    const digits: string[] = [];
    session.channel.onDigit((d) => digits.push(d));
    await peer.sendDigits('5');
    await eventually(() => (session.stats.dropped.payload_type ?? 0) >= 7, 'counted');
    assert.deepEqual(digits, []);
  });

  it('no RTP for the inactivity time closes the channel media_lost and frees the port; a hang-up closes with its reason', async () => {
    const quiet = await call({ inactivityMs: 300 });
    quiet.peer.keepAlive();
    await new Promise((resolve) => setTimeout(resolve, 600));
    quiet.peer.stop();
    assert.equal(await quiet.session.channel.closed, 'media_lost');
    const silent = await call({ inactivityMs: 300 });
    assert.equal(await silent.session.channel.closed, 'media_lost');

    const hungUp = await call();
    hungUp.session.channel.hangUp('remote_hangup');
    hungUp.session.close();
    assert.equal(await hungUp.session.channel.closed, 'remote_hangup');
    const closed = await call();
    closed.session.close();
    assert.equal(await closed.session.channel.closed, 'local_hangup');
    // The port is free again: a socket binds it.
    const probe = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.bind(closed.session.localPort, loopback, resolve);
    });
    probe.close();
  });

  it('a full port range gives a clear error, and a closed session gives its port back', async () => {
    const small = { min: 47_300, max: 47_303 };
    const a = await openRtpSession({ portRange: small, bindAddress: loopback });
    const b = await openRtpSession({ portRange: small, bindAddress: loopback });
    assert.deepEqual([a.localPort, b.localPort].sort(), [47_300, 47_302]);
    await assert.rejects(openRtpSession({ portRange: small, bindAddress: loopback }), RtpPortsExhaustedError);
    a.close();
    await a.channel.closed;
    const c = await openRtpSession({ portRange: small, bindAddress: loopback });
    assert.equal(c.localPort, a.localPort);
    b.close();
    c.close();
  });
});


describe('settings', () => {
  it('RTP_INACTIVITY_SECONDS and DTMF_DIGIT_TIMEOUT_MS: defaults 10 s and 3 s, and a bad value stops start-up naming its variable', () => {
    const config = loadMediaEdgeConfig({ MEDIA_EDGE_SECRET: 'rtp-settings-secret' });
    assert.deepEqual([config.RTP_INACTIVITY_SECONDS, config.DTMF_DIGIT_TIMEOUT_MS], [10, 3000]);
    assert.equal(loadMediaEdgeConfig({ MEDIA_EDGE_SECRET: 'rtp-settings-secret', RTP_INACTIVITY_SECONDS: '30' }).RTP_INACTIVITY_SECONDS, 30);
    for (const [env, variable] of [
      [{ RTP_INACTIVITY_SECONDS: '0' }, /RTP_INACTIVITY_SECONDS/],
      [{ RTP_INACTIVITY_SECONDS: 'ten' }, /RTP_INACTIVITY_SECONDS/],
      [{ RTP_INACTIVITY_SECONDS: '7200' }, /RTP_INACTIVITY_SECONDS must be at most 3600/],
      [{ DTMF_DIGIT_TIMEOUT_MS: '50' }, /DTMF_DIGIT_TIMEOUT_MS must be at least 200/],
    ] as [Record<string, string>, RegExp][]) {
      assert.throws(() => loadMediaEdgeConfig({ MEDIA_EDGE_SECRET: 'rtp-settings-secret', ...env }), variable, JSON.stringify(env));
    }
  });
});
