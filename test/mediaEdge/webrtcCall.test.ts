// test-runner: foreground (50 frames drain in 900–1500 ms)
// Real WebRTC through the media edge: a werift peer in the test plays the browser (offers
// Opus with PCMU, or PCMU only), dials over SIP, and both sides exchange tones. The edge's
// channel must deliver 20 ms frames of 16 kHz PCM with the tone's frequency and level, and
// frames enqueued on the edge must arrive at the browser, paced, with sane RTP timestamps.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/logging/logger.js';
import type { CallAdmission } from '../../src/mediaEdge/admission.js';
import { FRAME_SAMPLES } from '../../src/mediaEdge/media/channel.js';
import { getHeader } from '../../src/mediaEdge/sip/message.js';
import { startMediaEdge, type EstablishedCall, type MediaEdge } from '../../src/mediaEdge/server.js';
import { SipTestClient } from '../support/sipClient.js';
import { BrowserPeer, rms, toneAmplitude, toneFrames, zeroCrossingFrequency, type OfferedCodecs } from '../support/webrtcPeer.js';

let edge: MediaEdge;
let callSeq = 0;
const established = new Map<string, (call: EstablishedCall) => void>();
const admission: CallAdmission = {
  admit: async (invite) => ({ callId: getHeader(invite, 'X-Session-Token')!, credential: 'session_token' }),
};

before(async () => {
  edge = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission,
    logger: createLogger('silent'),
    onCall: (call) => established.get(call.callId)?.(call),
    rtc: { connectTimeoutMs: 4000, mediaTimeoutMs: 2000 },
  });
});

after(async () => {
  await edge.close();
});

interface Dialled {
  sip: SipTestClient;
  peer: BrowserPeer;
  call: EstablishedCall;
  dialog: ReturnType<SipTestClient['invite']>;
  answer: string;
}

async function dial(offered: OfferedCodecs): Promise<Dialled> {
  const callId = `call-${++callSeq}`;
  const sip = await SipTestClient.connect(edge.url);
  const peer = new BrowserPeer(offered);
  const call = new Promise<EstablishedCall>((resolve) => established.set(callId, resolve));
  const dialog = sip.invite({ headers: { 'X-Session-Token': callId }, sdp: await peer.offer() });
  const ok = await sip.answered(dialog);
  assert.equal(ok.status, 200, ok.reason);
  await peer.accept(ok.body);
  await peer.connected();
  return { sip, peer, call: await call, dialog, answer: ok.body };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function exchangeTones(d: Dialled, clientHz: number, edgeHz: number): Promise<void> {
  const inbound: Int16Array[] = [];
  d.call.channel.onInbound((frame) => inbound.push(frame));
  const sent: Int16Array[] = [];
  d.call.channel.onOutbound((frame) => sent.push(frame));

  d.peer.startTone(clientHz, 8000);
  for (const frame of toneFrames(edgeHz, 8000, 50)) d.call.channel.enqueue(frame);
  const started = Date.now();
  await d.call.channel.drained();
  const drainMs = Date.now() - started;
  await sleep(300);
  d.peer.stopSending();

  // Inbound: every frame is 20 ms of 16 kHz; the steady part carries the client's tone.
  assert.ok(inbound.length >= 50, `inbound frames: ${inbound.length}`);
  assert.ok(inbound.every((f) => f.length === FRAME_SAMPLES));
  // The steady part, less any frame the jitter buffer had to fill (a loaded machine can delay
  // the test's own sender): most frames must carry the tone.
  const window = inbound.slice(-40, -5);
  const loud = window.filter((f) => rms(f) > 1000);
  assert.ok(loud.length >= window.length * 0.8, `tone in ${loud.length} of ${window.length} frames`);
  const steady = concat(loud);
  const frequency = zeroCrossingFrequency(steady, 16_000);
  assert.ok(Math.abs(frequency - clientHz) < clientHz * 0.03, `inbound frequency ${frequency.toFixed(1)} Hz, expected ${clientHz}`);
  const level = rms(steady);
  assert.ok(level > 8000 / Math.SQRT2 * 0.7 && level < 8000 / Math.SQRT2 * 1.3, `inbound RMS ${level.toFixed(0)}`);
  assert.ok(toneAmplitude(steady, clientHz, 16_000) > 10 * toneAmplitude(steady, clientHz * 1.5, 16_000), 'a clean tone');

  // Outbound: all 50 frames left at one per 20 ms and arrived as the edge's tone.
  assert.equal(sent.length, 50);
  // Paced, not sent in a burst: 50 frames take at least ~1 s. How much longer depends on the
  // machine's load, which a test does not judge (bench/mediaTransport.ts measures lateness).
  assert.ok(drainMs >= 900, `50 frames drained in ${drainMs} ms`);
  assert.ok(d.peer.receivedPackets >= 48, `packets at the browser: ${d.peer.receivedPackets}`);
  const rate = d.peer.rate;
  const heard = d.peer.received.slice(Math.round(rate * 0.2), Math.round(rate * 0.9));
  const heardFrequency = zeroCrossingFrequency(heard, rate);
  assert.ok(Math.abs(heardFrequency - edgeHz) < edgeHz * 0.03, `outbound frequency ${heardFrequency.toFixed(1)} Hz, expected ${edgeHz}`);
  const heardLevel = rms(heard);
  assert.ok(heardLevel > 8000 / Math.SQRT2 * 0.7 && heardLevel < 8000 / Math.SQRT2 * 1.3, `outbound RMS ${heardLevel.toFixed(0)}`);
  // One talkspurt: one marker; timestamps one frame apart.
  assert.equal(d.peer.markers, 1);
  const step = d.peer.codec === 'opus' ? 960 : 160;
  const steps = d.peer.timestamps.slice(1).map((t, i) => (t - d.peer.timestamps[i] + 2 ** 32) % 2 ** 32);
  assert.ok(steps.every((s) => s === step), `timestamp steps ${[...new Set(steps)].join(',')}`);
}

function concat(frames: Int16Array[]): Int16Array {
  const out = new Int16Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of frames) {
    out.set(f, at);
    at += f.length;
  }
  return out;
}

test('Opus: the answer picks Opus; tones cross both ways at the right frequency and level; BYE ends it as remote_hangup', async () => {
  const d = await dial('opus');
  try {
    assert.match(d.answer, /a=rtpmap:\d+ opus\/48000\/2/);
    assert.doesNotMatch(d.answer, /PCMU/);
    assert.match(d.answer, /a=candidate:.* 127\.0\.0\.1 \d+ typ host/, 'loopback advertised');
    assert.match(d.answer, /a=end-of-candidates/, 'all candidates in the answer (no trickle)');
    assert.match(d.answer, /a=setup:passive/, 'the browser starts the DTLS handshake');
    assert.equal(d.call.codec, 'opus');
    await exchangeTones(d, 440, 1000);
    assert.equal((await d.sip.finalResponse(d.sip.bye(d.dialog))).status, 200);
    assert.equal(await d.call.channel.closed, 'remote_hangup');
  } finally {
    await d.peer.close();
    await d.sip.close();
  }
});

test('PCMU only: the answer falls back to PCMU; tones cross both ways; the edge hangs up (local_hangup)', async () => {
  const d = await dial('pcmu');
  try {
    assert.match(d.answer, /a=rtpmap:\d+ PCMU\/8000/);
    assert.doesNotMatch(d.answer, /opus/);
    assert.equal(d.call.codec, 'PCMU');
    await exchangeTones(d, 700, 400);
    await d.call.hangUp();
    assert.ok(d.sip.received.some((m) => m.kind === 'request' && m.method === 'BYE'));
    assert.equal(await d.call.channel.closed, 'local_hangup');
  } finally {
    await d.peer.close();
    await d.sip.close();
  }
});

test('clear() drops queued audio at once (barge-in) and drained() resolves', async () => {
  const d = await dial('opus');
  try {
    for (const frame of toneFrames(500, 4000, 100)) d.call.channel.enqueue(frame);
    await sleep(200);
    d.call.channel.clear();
    await d.call.channel.drained();
    const packets = d.peer.receivedPackets;
    await sleep(200);
    assert.ok(d.peer.receivedPackets - packets <= 2, 'nothing more sent after clear');
    assert.ok(packets < 20, `sent before clear: ${packets}`);
  } finally {
    await d.call.hangUp();
    await d.peer.close();
    await d.sip.close();
  }
});

test('media loss: the browser peer goes away without BYE, the channel closes as media_lost and the edge sends BYE', async () => {
  const d = await dial('opus');
  try {
    await d.peer.close();
    const reason = await Promise.race([d.call.channel.closed, sleep(8000).then(() => 'still open')]);
    assert.equal(reason, 'media_lost');
    await d.sip.waitFor((m) => m.kind === 'request' && m.method === 'BYE', 5000, 'BYE from the edge');
  } finally {
    await d.sip.close();
  }
});

test('an offer whose ICE never connects ends as media_lost within the connect timeout, with a BYE', async () => {
  const sip = await SipTestClient.connect(edge.url);
  const peer = new BrowserPeer('opus');
  const callId = `call-${++callSeq}`;
  try {
    // Offer, but never apply the answer: the edge's ICE checks go unanswered.
    const dialog = sip.invite({ headers: { 'X-Session-Token': callId }, sdp: await peer.offer() });
    assert.equal((await sip.answered(dialog)).status, 200);
    await sip.waitFor((m) => m.kind === 'request' && m.method === 'BYE', 8000, 'BYE after the connect timeout');
    assert.equal(edge.calls.has(callId), false, 'never established');
  } finally {
    await peer.close();
    await sip.close();
  }
});

test('configured addresses are advertised first and ICE sockets stay in the configured port range', async () => {
  const ranged = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission,
    logger: createLogger('silent'),
    onCall: (call) => established.get(call.callId)?.(call),
    // A loopback alias stands in for a public address: test traffic stays on this machine.
    rtc: { advertisedAddresses: ['127.0.0.2'], portRange: [47_000, 47_099] },
  });
  const sip = await SipTestClient.connect(ranged.url);
  const peer = new BrowserPeer('opus');
  const callId = `call-${++callSeq}`;
  try {
    const call = new Promise<EstablishedCall>((resolve) => established.set(callId, resolve));
    const dialog = sip.invite({ headers: { 'X-Session-Token': callId }, sdp: await peer.offer() });
    const ok = await sip.answered(dialog);
    const candidates = [...ok.body.matchAll(/^a=candidate:\S+ \d+ udp \d+ (\S+) (\d+) typ host/gm)].map((m) => ({ address: m[1], port: Number(m[2]) }));
    assert.equal(candidates[0]?.address, '127.0.0.2');
    assert.ok(candidates.some((c) => c.address === '127.0.0.1'));
    for (const c of candidates) assert.ok(c.port >= 47_000 && c.port <= 47_099, `port ${c.port} of ${c.address}`);
    await peer.accept(ok.body);
    await peer.connected();
    await (await call).hangUp();
  } finally {
    await peer.close();
    await sip.close();
    await ranged.close();
  }
});
