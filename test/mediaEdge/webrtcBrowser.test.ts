// The example page (JsSIP in headless Chromium) against the real media edge: the browser
// contract end to end with real WebRTC (Chrome's ICE, DTLS-SRTP and Opus against werift).
// The API is a fake answering create-web-session with a bootstrap that points at the edge;
// admission is injected. Chromium's fake microphone plays a 440 Hz WAV, and the edge must
// hear 440 Hz; the edge plays 1 kHz, and Chrome must receive audio energy. Hang-up from the
// page and from the edge both end the call cleanly on both sides; JsSIP answers a digest challenge.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { type Browser, type Page } from 'playwright-core';
import { startExampleServer, type ExampleServer } from '../../examples/web-call/server.js';
import { createLogger } from '../../src/logging/logger.js';
import type { CallAdmission } from '../../src/mediaEdge/admission.js';
import { getHeader } from '../../src/mediaEdge/sip/message.js';
import { startMediaEdge, type EstablishedCall, type MediaEdge } from '../../src/mediaEdge/server.js';
import { rms, toneFrames, zeroCrossingFrequency } from '../support/webrtcPeer.js';
import { FAKE_MEDIA_ARGS, launchChromium } from '../support/chromium.js';

const TARGET = 'sip:agent@edge.browser.test';
let edge: MediaEdge;
/** The edge the fake API sends browsers to. */
let wsUrl = '';
let fakeApi: Server;
let example: ExampleServer;
let browser: Browser;
let tmp: string;
let sessions = 0;
const calls: EstablishedCall[] = [];
const inviteHeaders: Record<string, string>[] = [];

const admission: CallAdmission = {
  admit: async (invite) => {
    const token = getHeader(invite, 'X-Session-Token');
    return token?.startsWith('wst_browser_') ? { callId: `call-${token.slice(12)}`, credential: 'session_token' } : { reject: 403, reason: 'Missing session token' };
  },
};

/** A mono 16-bit WAV of a sine tone. */
function toneWav(file: string, hz: number, seconds: number, rate = 48_000): void {
  const n = rate * seconds;
  const data = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) data.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / rate)), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + data.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(data.length, 40);
  writeFileSync(file, Buffer.concat([header, data]));
}

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'edge-browser-'));
  const wav = path.join(tmp, 'tone440.wav');
  toneWav(wav, 440, 5);
  edge = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission,
    logger: createLogger('silent'),
    onCall: (call) => {
      calls.push(call);
      inviteHeaders.push(call.inviteHeaders);
    },
  });
  wsUrl = edge.url;
  // The API's create-web-session, as far as the example server and the page need it.
  fakeApi = createServer((req, res) => {
    req.resume();
    const id = ++sessions;
    res.writeHead(201, { 'Content-Type': 'application/json' }).end(
      JSON.stringify({
        success: true,
        session_id: `sess-${id}`,
        session_token: `wst_browser_${id}`,
        expires_at: new Date(Date.now() + 120_000).toISOString(),
        ws_url: wsUrl,
        sip_domain: 'edge.browser.test',
        sip_username: 'web-caller',
        sip_password: 'web-caller',
        target: TARGET,
        headers: { 'X-Session-Token': `wst_browser_${id}`, 'X-Session-Id': `sess-${id}`, 'X-Script-Id': 'script-1', 'X-Participant-Identity': 'web visitor' },
      }),
    );
  });
  await new Promise<void>((resolve) => fakeApi.listen(0, '127.0.0.1', resolve));
  example = await startExampleServer({
    apiUrl: `http://127.0.0.1:${(fakeApi.address() as AddressInfo).port}`,
    apiKey: 'key_unused',
    scriptId: 'script-1',
    port: 0,
    iceServers: [],
  });
  browser = await launchChromium([...FAKE_MEDIA_ARGS, `--use-file-for-fake-audio-capture=${wav}`, '--autoplay-policy=no-user-gesture-required']);
});

after(async () => {
  await browser?.close();
  await example?.close();
  fakeApi?.closeAllConnections();
  await new Promise((resolve) => fakeApi?.close(resolve));
  await edge?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** Opens the page with its RTCPeerConnections reachable as window.__pcs, clicks Start call, waits for "connected". */
async function startCall(): Promise<{ page: Page; call: EstablishedCall }> {
  const page = await browser.newPage();
  await page.addInitScript(() => {
    const Native = window.RTCPeerConnection;
    const pcs: RTCPeerConnection[] = [];
    (window as unknown as { __pcs: RTCPeerConnection[] }).__pcs = pcs;
    window.RTCPeerConnection = class extends Native {
      constructor(config?: RTCConfiguration) {
        super(config);
        pcs.push(this);
      }
    } as typeof RTCPeerConnection;
  });
  await page.goto(example.url);
  const count = calls.length;
  await page.click('#call');
  await page.waitForSelector('#status[data-state="connected"]', { timeout: 20_000 });
  const started = Date.now();
  while (calls.length === count) {
    if (Date.now() - started > 10_000) throw new Error('the edge never established the call');
    await new Promise((r) => setTimeout(r, 20));
  }
  return { page, call: calls[calls.length - 1] };
}

async function inboundRtp(page: Page): Promise<{ packetsReceived: number; totalAudioEnergy: number; codec: string }> {
  return page.evaluate(async () => {
    const pc = (window as unknown as { __pcs: RTCPeerConnection[] }).__pcs[0];
    const stats = [...(await pc.getStats()).values()] as Record<string, unknown>[];
    const rtp = stats.find((s) => s.type === 'inbound-rtp' && s.kind === 'audio') ?? {};
    const codec = stats.find((s) => s.id === rtp.codecId) ?? {};
    return { packetsReceived: Number(rtp.packetsReceived ?? 0), totalAudioEnergy: Number(rtp.totalAudioEnergy ?? 0), codec: String(codec.mimeType ?? '') };
  });
}

test('the example page calls the edge: Opus both ways, 440 Hz heard by the edge, the edge heard by Chrome; the page hangs up (remote_hangup)', async () => {
  const { page, call } = await startCall();
  try {
    assert.equal(call.codec, 'opus');
    assert.equal(inviteHeaders.at(-1)?.['x-session-id'], `sess-${sessions}`);
    assert.equal(call.invite.uri, TARGET);

    const inbound: Int16Array[] = [];
    call.channel.onInbound((frame) => inbound.push(frame));
    for (const frame of toneFrames(1000, 8000, 100)) call.channel.enqueue(frame);
    await call.channel.drained();
    await new Promise((r) => setTimeout(r, 300));

    const loud = inbound.filter((f) => rms(f) > 1000);
    assert.ok(loud.length >= 40, `loud inbound frames: ${loud.length} of ${inbound.length}`);
    const heard = new Int16Array(loud.slice(5, 35).flatMap((f) => [...f]));
    const frequency = zeroCrossingFrequency(heard, 16_000);
    assert.ok(Math.abs(frequency - 440) < 20, `the edge hears ${frequency.toFixed(1)} Hz`);

    const stats = await inboundRtp(page);
    assert.equal(stats.codec.toLowerCase(), 'audio/opus');
    assert.ok(stats.packetsReceived >= 95, `Chrome received ${stats.packetsReceived} packets`);
    assert.ok(stats.totalAudioEnergy > 0.1, `Chrome heard energy ${stats.totalAudioEnergy}`);

    await page.click('#hangup');
    assert.equal(await call.channel.closed, 'remote_hangup');
    await page.waitForSelector('#status[data-state="ended"]', { timeout: 5000 });
  } finally {
    await page.close();
  }
});

test('the edge hangs up: the page shows the call ended', async () => {
  const { page, call } = await startCall();
  try {
    await call.hangUp();
    assert.equal(await call.channel.closed, 'local_hangup');
    await page.waitForSelector('#status[data-state="ended"]', { timeout: 5000 });
    assert.match((await page.textContent('#status')) ?? '', /ended/i);
  } finally {
    await page.close();
  }
});

test('with digest enabled, JsSIP answers the 401 challenge with the bootstrap credentials and the call connects', async () => {
  const digestEdge = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission,
    logger: createLogger('silent'),
    onCall: (call) => calls.push(call),
    digest: { username: 'web-caller', password: 'web-caller', realm: 'edge.browser.test' },
  });
  wsUrl = digestEdge.url;
  try {
    const { page, call } = await startCall();
    assert.equal(call.codec, 'opus');
    await page.click('#hangup');
    assert.equal(await call.channel.closed, 'remote_hangup');
    await page.close();
  } finally {
    wsUrl = edge.url;
    await digestEdge.close();
  }
});
