// The media edge's SIP layer over a real WebSocket, with an injected admission and fake media:
// every refusal code, malformed input, CANCEL, BYE both ways, OPTIONS, re-INVITE, digest,
// per-socket limits, and a garbage-sending socket that must not disturb another's call.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import { WebSocket } from 'ws';
import { createLogger } from '../../src/logging/logger.js';
import { checkWebCallToken, mintWebCallToken } from '../../src/domain/webCallTokens.js';
import type { AdmissionResult, CallAdmission } from '../../src/mediaEdge/admission.js';
import { getHeader, getHeaderValues, type SipRequest, type SipResponse } from '../../src/mediaEdge/sip/message.js';
import { loadMediaEdgeConfig, startMediaEdge, type EstablishedCall, type MediaEdge } from '../../src/mediaEdge/server.js';
import { FAKE_ANSWER_SDP, FakeMediaAnswerer } from '../support/fakeMedia.js';
import { SipTestClient, staticAudioOffer } from '../support/sipClient.js';

const SECRET = 'sip-test-media-edge-secret';
const CALL_ID = '2f6f1d0e-8c1a-4d53-9a55-0d4f1c3b7a10';
const WEB_CALL_ID = 'a8b5f3c2-1d4e-4f60-8a7b-9c0d1e2f3a4b';

const admissions: string[] = [];
let admissionDelayMs = 0;
const admission: CallAdmission = {
  async admit(invite: SipRequest): Promise<AdmissionResult> {
    const token = getHeader(invite, 'X-Session-Token');
    admissions.push(token ?? getHeader(invite, 'X-Call-Token') ?? '(none)');
    if (admissionDelayMs) await new Promise((r) => setTimeout(r, admissionDelayMs));
    if (token === 'wst_good') return { callId: CALL_ID, credential: 'session_token' };
    if (token === 'wst_good_2') return { callId: '3f6f1d0e-8c1a-4d53-9a55-0d4f1c3b7a11', credential: 'session_token' };
    if (token === 'wst_used') return { reject: 409, reason: 'Session token has already been used' };
    if (token === 'wst_expired') return { reject: 410, reason: 'Session token has expired' };
    if (token) return { reject: 404, reason: 'Session token not found' };
    const callToken = getHeader(invite, 'X-Call-Token');
    const callId = getHeader(invite, 'X-Call-Id');
    if (callToken && callId && checkWebCallToken(SECRET, callId, callToken).valid) return { callId, credential: 'call_token' };
    return { reject: 403, reason: callToken ? 'Invalid call token' : 'Missing session token' };
  },
};

const media = new FakeMediaAnswerer();
const calls: EstablishedCall[] = [];
const ended: [string, string, boolean][] = [];
let edge: MediaEdge;
const clients: SipTestClient[] = [];

async function client(): Promise<SipTestClient> {
  const c = await SipTestClient.connect(edge.url);
  clients.push(c);
  return c;
}

function nextCall(timeoutMs = 5000): Promise<EstablishedCall> {
  const count = calls.length;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      if (calls.length > count) {
        clearInterval(poll);
        resolve(calls[calls.length - 1]);
      } else if (Date.now() - started > timeoutMs) {
        clearInterval(poll);
        reject(new Error('no call established'));
      }
    }, 5);
  });
}

before(async () => {
  edge = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission,
    media,
    logger: createLogger('silent'),
    onCall: (call) => calls.push(call),
    onCallEnded: (callId, reason, established) => ended.push([callId, reason, established]),
    maxCallsPerSocket: 2,
    maxMessageBytes: 16 * 1024,
    sipT1Ms: 100,
  });
});

beforeEach(() => {
  admissionDelayMs = 0;
  media.answerDelayMs = 0;
});

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await edge.close();
});

test('OPTIONS outside a dialog is answered 200 with Allow', async () => {
  const c = await client();
  const options = c.request('OPTIONS');
  const response = await c.finalResponse(options);
  assert.equal(response.status, 200);
  assert.equal(getHeader(response, 'Allow'), 'INVITE, ACK, CANCEL, BYE, OPTIONS');
  assert.match(getHeader(response, 'To') ?? '', /;tag=/);
});

test('an admitted INVITE gets 100 Trying and 200 OK with the SDP answer and a Contact; ACK establishes the call with its headers; BYE from the browser ends it as remote_hangup', async () => {
  const c = await client();
  const headers = { 'X-Session-Token': 'wst_good', 'X-Session-Id': 'sess-1', 'X-Script-Id': 'script-1', 'X-Participant-Identity': 'Ada' };
  const established = nextCall();
  const dialog = c.invite({ headers });
  const ok = await c.answered(dialog);
  assert.equal(ok.status, 200);
  assert.deepEqual(
    c.responsesTo(dialog.invite).map((r) => r.status),
    [100, 200],
  );
  assert.equal(ok.body, FAKE_ANSWER_SDP);
  assert.equal(getHeader(ok, 'Content-Type'), 'application/sdp');
  assert.match(getHeader(ok, 'Contact') ?? '', /^<sip:edge@127\.0\.0\.1:\d+;transport=ws>$/);
  assert.match(getHeader(ok, 'To') ?? '', /;tag=[0-9a-f]+$/);
  assert.equal(getHeader(ok, 'Via'), getHeader(dialog.invite, 'Via'), 'the JsSIP-style WSS Via with a .invalid host is echoed');

  const call = await established;
  assert.equal(call.callId, CALL_ID);
  assert.equal(call.credential, 'session_token');
  assert.equal(call.sipCallId, dialog.callId);
  assert.equal(call.inviteHeaders['x-session-id'], 'sess-1');
  assert.equal(call.inviteHeaders['x-participant-identity'], 'Ada');
  assert.equal(edge.calls.get(CALL_ID), call);

  const bye = c.bye(dialog);
  assert.equal((await c.finalResponse(bye)).status, 200);
  assert.equal(await call.channel.closed, 'remote_hangup');
  assert.equal(edge.calls.has(CALL_ID), false);
  assert.deepEqual(ended.at(-1), [CALL_ID, 'remote_hangup', true]);
});

test('the edge hangs up: BYE to the browser in the dialog, answered 200; the channel closes as local_hangup', async () => {
  const c = await client();
  const established = nextCall();
  const dialog = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  await c.answered(dialog);
  const call = await established;
  await call.hangUp();
  const bye = (await c.waitFor((m) => m.kind === 'request' && m.method === 'BYE')) as SipRequest;
  assert.equal(getHeader(bye, 'Call-ID'), dialog.callId);
  assert.equal(bye.uri, /<([^>]+)>/.exec(getHeader(dialog.invite, 'Contact')!)![1], 'sent to the browser Contact');
  assert.equal(getHeader(bye, 'To'), getHeader(dialog.invite, 'From'));
  assert.equal(getHeader(bye, 'From'), dialog.remoteTo);
  assert.match(getHeader(bye, 'Via') ?? '', /^SIP\/2\.0\/WS 127\.0\.0\.1:\d+;branch=z9hG4bK/);
  assert.equal(await call.channel.closed, 'local_hangup');
  await call.hangUp(); // idempotent
  // A BYE for the ended dialog is 481.
  assert.equal((await c.finalResponse(c.bye(dialog))).status, 481);
});

test('refusals: no token 403, bad call token 403, unknown 404, used 409, expired 410', async () => {
  const c = await client();
  const cases: [Record<string, string>, number][] = [
    [{}, 403],
    [{ 'X-Call-Id': WEB_CALL_ID, 'X-Call-Token': 'forged' }, 403],
    [{ 'X-Session-Token': 'wst_unknown' }, 404],
    [{ 'X-Session-Token': 'wst_used' }, 409],
    [{ 'X-Session-Token': 'wst_expired' }, 410],
  ];
  for (const [headers, status] of cases) {
    const dialog = c.invite({ headers });
    const response = await c.finalResponse(dialog.invite);
    assert.equal(response.status, status, JSON.stringify(headers));
    assert.match(getHeader(response, 'To') ?? '', /;tag=/);
    c.ack(dialog); // the ACK of a non-2xx is absorbed
  }
  assert.equal(media.sessions.filter((s) => !s.closeReason).length, 0, 'no media left open by a refusal');
});

test('a socket whose INVITEs are refused ten times is closed (1008): no token guessing on one connection', async () => {
  const c = await client();
  for (let i = 0; i < 9; i++) {
    const dialog = c.invite({ headers: { 'X-Session-Token': `wst_guess_${i}` } });
    assert.equal((await c.finalResponse(dialog.invite)).status, 404);
  }
  c.invite({ headers: { 'X-Session-Token': 'wst_guess_last' } });
  assert.equal((await c.closed).code, 1008);
});

test('a create-web-call token is checked against its call id; a second live session of the same call is 409', async () => {
  const c = await client();
  const headers = { 'X-Call-Id': WEB_CALL_ID, 'X-Call-Token': mintWebCallToken(SECRET, WEB_CALL_ID, new Date(Date.now() + 60_000)) };
  const established = nextCall();
  const first = c.invite({ headers });
  assert.equal((await c.answered(first)).status, 200);
  const call = await established;
  assert.equal(call.callId, WEB_CALL_ID);
  assert.equal(call.credential, 'call_token');
  const other = await client();
  const replay = other.invite({ headers });
  assert.equal((await other.finalResponse(replay.invite)).status, 409);
  await call.hangUp();
});

test('an offer without usable audio is 488 and the token is not spent', async () => {
  const c = await client();
  admissions.length = 0;
  for (const sdp of [staticAudioOffer('none'), '', 'v=0\r\ns=-\r\nm=audio 5004 RTP/AVP 0\r\n']) {
    const dialog = c.invite({ headers: { 'X-Session-Token': 'wst_good' }, sdp });
    assert.equal((await c.finalResponse(dialog.invite)).status, 488, JSON.stringify(sdp.slice(0, 40)));
  }
  assert.deepEqual(admissions, [], 'admission was never asked');
});

test('malformed requests that can be answered get 400 and the socket stays usable', async () => {
  const c = await client();
  const base = c.request('OPTIONS');
  const lines = (cseq: string, extra = '') =>
    [
      'OPTIONS sip:agent@edge.test SIP/2.0',
      `Via: ${getHeader(base, 'Via')!.replace(/branch=\w+/, 'branch=z9hG4bKmalformed' + cseq.length)}`,
      'To: <sip:agent@edge.test>',
      'From: <sip:web-caller@edge.test>;tag=abc',
      'Call-ID: malformed-1',
      `CSeq: ${cseq}`,
      extra,
      '',
      '',
    ].join('\r\n');
  c.send(lines('5 INVITE'));
  const bad = (await c.waitFor((m) => m.kind === 'response' && getHeader(m, 'CSeq') === '5 INVITE')) as SipResponse;
  assert.equal(bad.status, 400, 'CSeq method differs from the request method');
  assert.match(bad.reason, /^Bad Request \(/);
  c.send(lines('7 OPTIONS', 'Content-Length: 500'));
  const short = (await c.waitFor((m) => m.kind === 'response' && getHeader(m, 'CSeq') === '7 OPTIONS')) as SipResponse;
  assert.equal(short.status, 400);
  assert.equal((await c.finalResponse(c.request('OPTIONS'))).status, 200, 'still served');
});

test('unsupported methods get 405 with Allow', async () => {
  const c = await client();
  for (const method of ['MESSAGE', 'REGISTER', 'SUBSCRIBE']) {
    const response = await c.finalResponse(c.request(method));
    assert.equal(response.status, 405, method);
    assert.equal(getHeader(response, 'Allow'), 'INVITE, ACK, CANCEL, BYE, OPTIONS');
  }
});

test('garbage closes that WebSocket (1002) and its calls; a call on another socket is unaffected', async () => {
  const healthy = await client();
  const established = nextCall();
  const dialog = healthy.invite({ headers: { 'X-Session-Token': 'wst_good_2' } });
  await healthy.answered(dialog);
  const call = await established;

  const noisy = await client();
  const noisyEstablished = nextCall();
  const noisyDialog = noisy.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  await noisy.answered(noisyDialog);
  const noisyCall = await noisyEstablished;
  noisy.send('\u0000\u0001 this is not SIP at all');
  const { code } = await noisy.closed;
  assert.equal(code, 1002);
  assert.equal(await noisyCall.channel.closed, 'media_lost', 'the garbage socket\'s own call lost its signalling');

  noisy.socket.terminate();
  const binary = await client();
  binary.socket.send(Buffer.from([0xff, 0xfe, 0x00, 0x13]));
  assert.equal((await binary.closed).code, 1002);

  const race = await Promise.race([call.channel.closed, new Promise((r) => setTimeout(() => r('open'), 100))]);
  assert.equal(race, 'open');
  assert.equal((await healthy.finalResponse(healthy.request('OPTIONS'))).status, 200);
  assert.equal((await healthy.finalResponse(healthy.bye(dialog))).status, 200);
  assert.equal(await call.channel.closed, 'remote_hangup');
});

test('CANCEL before the answer: 200 to the CANCEL, 487 to the INVITE, no call', async () => {
  const c = await client();
  admissionDelayMs = 200;
  const callsBefore = calls.length;
  const dialog = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  await c.waitFor((m) => m.kind === 'response' && m.status === 100);
  const cancel = c.cancel(dialog);
  assert.equal((await c.finalResponse(cancel)).status, 200);
  const final = await c.finalResponse(dialog.invite);
  assert.equal(final.status, 487);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(calls.length, callsBefore);
  assert.deepEqual(ended.at(-1), [CALL_ID, 'remote_hangup', false], 'admitted, never established');
  assert.equal(c.responsesTo(dialog.invite).filter((r) => r.status >= 200).length, 1, 'exactly one final response');
  // The call id was released: the same token admits again.
  admissionDelayMs = 0;
  const again = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  const established = nextCall();
  assert.equal((await c.answered(again)).status, 200);
  await (await established).hangUp();
  // A CANCEL matching no INVITE is 481.
  const stray = c.cancel({ ...dialog, callId: 'no-such-call', branch: 'z9hG4bKnothing' });
  assert.equal((await c.finalResponse(stray)).status, 481);
});

test('CANCEL while the media answer is being made also ends in 487 and closes that media', async () => {
  const c = await client();
  media.answerDelayMs = 200;
  const dialog = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  await c.waitFor((m) => m.kind === 'response' && m.status === 100 && getHeader(m, 'Call-ID') === dialog.callId);
  await new Promise((r) => setTimeout(r, 50));
  c.cancel(dialog);
  assert.equal((await c.finalResponse(dialog.invite)).status, 487);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(media.sessions[media.sessions.length - 1].closeReason, 'remote_hangup');
});

test('re-INVITE with the same session is answered with the current SDP; one that changes the transport is 488 and the call goes on', async () => {
  const c = await client();
  const established = nextCall();
  const dialog = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  await c.answered(dialog);
  const call = await established;

  const same = c.inDialog(dialog, 'INVITE', undefined, staticAudioOffer());
  c.send(same);
  const sameResponse = await c.finalResponse(same);
  assert.equal(sameResponse.status, 200);
  assert.equal(sameResponse.body, FAKE_ANSWER_SDP);
  c.send(c.inDialog(dialog, 'ACK', Number(getHeader(same, 'CSeq')!.split(' ')[0])));

  const restart = c.inDialog(dialog, 'INVITE', undefined, staticAudioOffer('opus', 'wxyz'));
  c.send(restart);
  assert.equal((await c.finalResponse(restart)).status, 488);

  const stale = c.inDialog(dialog, 'INFO', 1);
  c.send(stale);
  assert.equal((await c.finalResponse(stale)).status, 500, 'CSeq going backwards');
  const info = c.inDialog(dialog, 'INFO');
  c.send(info);
  assert.equal((await c.finalResponse(info)).status, 405);

  const race = await Promise.race([call.channel.closed, new Promise((r) => setTimeout(() => r('open'), 50))]);
  assert.equal(race, 'open');
  await call.hangUp();
});

test('a socket holds at most maxCallsPerSocket calls (486 beyond)', async () => {
  const c = await client();
  const first = nextCall();
  const a = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  await c.answered(a);
  const callA = await first;
  const second = nextCall();
  const b = c.invite({ headers: { 'X-Session-Token': 'wst_good_2' } });
  await c.answered(b);
  const callB = await second;
  const third = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  assert.equal((await c.finalResponse(third.invite)).status, 486);
  await Promise.all([callA.hangUp(), callB.hangUp()]);
});

test('a closed WebSocket ends its calls with media_lost', async () => {
  const c = await client();
  const established = nextCall();
  await c.answered(c.invite({ headers: { 'X-Session-Token': 'wst_good' } }));
  const call = await established;
  c.socket.terminate();
  assert.equal(await call.channel.closed, 'media_lost');
});

test('a WebSocket without the sip subprotocol is refused; an oversized message closes the socket (1009)', async () => {
  await assert.rejects(SipTestClient.connect(edge.url, 'chat'));
  const c = await client();
  c.send(`OPTIONS sip:a@b SIP/2.0\r\nX-Padding: ${'x'.repeat(20_000)}\r\n\r\n`);
  assert.equal((await c.closed).code, 1009);
});

test('a request with thousands of Via entries is answered 513 (Message Too Large), its answer echoing at most 70 Vias; the socket stays usable', async () => {
  const c = await client();
  const base = c.request('OPTIONS');
  const vias = [getHeader(base, 'Via')!, ...Array<string>(7000).fill('x')].join(',');
  const text = ['OPTIONS sip:agent@edge.test SIP/2.0', `v: ${vias}`, 'To: <sip:agent@edge.test>', 'From: <sip:web-caller@edge.test>;tag=via', 'Call-ID: many-vias', 'CSeq: 9 OPTIONS', '', ''].join('\r\n');
  const sizes: number[] = [];
  c.socket.on('message', (data: Buffer) => sizes.push(data.length));
  c.send(text);
  const answer = (await c.waitFor((m) => m.kind === 'response' && getHeader(m, 'Call-ID') === 'many-vias')) as SipResponse;
  assert.equal(answer.status, 513);
  assert.match(answer.reason, /^Message Too Large \(more than 70 Via entries\)/);
  assert.equal(getHeaderValues(answer, 'Via').length, 70);
  assert.ok(Math.max(...sizes) < 2000, `an answer of ${Math.max(...sizes)} bytes to ${text.length}`);
  assert.equal((await c.finalResponse(c.request('OPTIONS'))).status, 200, 'still served');
});

test('a client that does not read its answers has its socket dropped past the send budget, and counted', async () => {
  const budgetEdge = await startMediaEdge({ wsUrl: 'ws://127.0.0.1:0/ws', admission, media, logger: createLogger('silent'), sendBudgetBytes: 32 * 1024 });
  const reader = await SipTestClient.connect(budgetEdge.url);
  const stalled = await SipTestClient.connect(budgetEdge.url);
  try {
    stalled.socket.pause();
    // Each OPTIONS is answered with its 8 KB Call-ID echoed: the answers fill the kernel's buffers, then the edge's.
    const callId = 'c'.repeat(8000);
    const options = (n: number) =>
      ['OPTIONS sip:agent@edge.test SIP/2.0', `Via: SIP/2.0/WSS stalled.invalid;branch=z9hG4bKbudget${n}`, 'To: <sip:agent@edge.test>', 'From: <sip:web-caller@edge.test>;tag=budget', `Call-ID: ${callId}`, `CSeq: ${n + 1} OPTIONS`, '', ''].join('\r\n');
    let sent = 0;
    // About 4 MB of answers fill the loopback's buffers here; bounded at 40 MB, so that an edge
    // without a budget (which holds them all) fails here rather than hangs.
    while (budgetEdge.connections === 2 && sent < 5000) {
      for (let i = 0; i < 50; i++) stalled.send(options(sent++));
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(budgetEdge.sendBudgetClosures, 1, `dropped after ${sent} unread answers`);
    stalled.socket.resume();
    assert.equal((await stalled.closed).code, 1006, 'dropped without a close frame');
    assert.equal(budgetEdge.connections, 1);
    assert.equal((await reader.finalResponse(reader.request('OPTIONS'))).status, 200, 'a reading client is served');
  } finally {
    await Promise.all([reader.close(), stalled.close()]);
    await budgetEdge.close();
  }
});

test('an INVITE retransmission is answered with the last response, not a second call', async () => {
  const c = await client();
  const established = nextCall();
  const dialog = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
  await c.answered(dialog);
  const call = await established;
  const count = calls.length;
  c.send(dialog.invite);
  await c.waitFor((m) => m.kind === 'response' && m.status === 200 && c.responsesTo(dialog.invite).filter((r) => r.status === 200).length >= 2);
  assert.equal(calls.length, count);
  await call.hangUp();
});

test('with digest configured, an INVITE is challenged (401) and admitted once it answers the challenge', async () => {
  const digestEdge = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission,
    media,
    logger: createLogger('silent'),
    digest: { username: 'web-caller', password: 'web-caller', realm: 'edge.test' },
  });
  const c = await SipTestClient.connect(digestEdge.url);
  try {
    admissions.length = 0;
    const first = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
    const challenge = await c.finalResponse(first.invite);
    assert.equal(challenge.status, 401);
    assert.deepEqual(admissions, [], 'no token spent before authentication');
    const www = getHeader(challenge, 'WWW-Authenticate')!;
    const nonce = /nonce="([^"]+)"/.exec(www)![1];
    const realm = /realm="([^"]+)"/.exec(www)![1];
    const md5 = (s: string) => createHash('md5').update(s).digest('hex');
    const uri = 'sip:agent@edge.test';
    const ha1 = md5(`web-caller:${realm}:web-caller`);
    const ha2 = md5(`INVITE:${uri}`);
    const cnonce = 'c0ffee';
    const response = md5(`${ha1}:${nonce}:00000001:${cnonce}:auth:${ha2}`);
    const authorization = `Digest algorithm=MD5, username="web-caller", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", qop=auth, cnonce="${cnonce}", nc=00000001`;
    const wrong = c.invite({ headers: { 'X-Session-Token': 'wst_good', Authorization: authorization.replace(response, md5('nope')) } });
    assert.equal((await c.finalResponse(wrong.invite)).status, 401);
    const second = c.invite({ headers: { 'X-Session-Token': 'wst_good', Authorization: authorization } });
    assert.equal((await c.answered(second)).status, 200);
  } finally {
    await c.close();
    await digestEdge.close();
  }
});

test('edge shutdown hangs up live calls with BYE', async () => {
  const shutdownEdge = await startMediaEdge({ wsUrl: 'ws://127.0.0.1:0/ws', admission, media, logger: createLogger('silent') });
  const c = await SipTestClient.connect(shutdownEdge.url);
  await c.answered(c.invite({ headers: { 'X-Session-Token': 'wst_good' } }));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(shutdownEdge.calls.size, 1);
  await shutdownEdge.close();
  assert.ok(c.received.some((m) => m.kind === 'request' && m.method === 'BYE'));
  assert.equal((await c.closed).code, 1001);
  assert.equal(WebSocket.CLOSED, c.socket.readyState);
});

test('configuration: defaults match npm start; a bad value stops start-up naming its variable', () => {
  const config = loadMediaEdgeConfig({ MEDIA_EDGE_SECRET: SECRET });
  assert.equal(config.MEDIA_EDGE_WS_URL, 'ws://127.0.0.1:5070/ws');
  assert.equal(config.API_URL, 'http://127.0.0.1:3000');
  assert.equal(config.MEDIA_EDGE_SIP_DIGEST, false);
  assert.equal(config.MEDIA_EDGE_MAX_CALLS_PER_SOCKET, 4);
  assert.deepEqual(loadMediaEdgeConfig({ MEDIA_EDGE_SECRET: SECRET, MEDIA_EDGE_RTC_HOST: '203.0.113.7, 198.51.100.2' }).MEDIA_EDGE_RTC_HOST, ['203.0.113.7', '198.51.100.2']);
  const bad: [Record<string, string>, RegExp][] = [
    [{}, /MEDIA_EDGE_SECRET/],
    [{ MEDIA_EDGE_SECRET: SECRET, MEDIA_EDGE_WS_URL: 'http://x/ws' }, /MEDIA_EDGE_WS_URL/],
    [{ MEDIA_EDGE_SECRET: SECRET, MEDIA_EDGE_RTC_PORT_MIN: '40000' }, /MEDIA_EDGE_RTC_PORT_MAX/],
    [{ MEDIA_EDGE_SECRET: SECRET, MEDIA_EDGE_RTC_PORT_MIN: '40010', MEDIA_EDGE_RTC_PORT_MAX: '40000' }, /MEDIA_EDGE_RTC_PORT_MAX/],
    [{ MEDIA_EDGE_SECRET: SECRET, MEDIA_EDGE_SIP_DIGEST: 'maybe' }, /MEDIA_EDGE_SIP_DIGEST/],
  ];
  for (const [env, variable] of bad) assert.throws(() => loadMediaEdgeConfig(env), variable, JSON.stringify(env));
});

test('a 200 OK without ACK is retransmitted with a doubling interval, then the edge gives up with BYE (64 × T1)', async () => {
  const quickEdge = await startMediaEdge({ wsUrl: 'ws://127.0.0.1:0/ws', admission, media, logger: createLogger('silent'), sipT1Ms: 20 });
  const c = await SipTestClient.connect(quickEdge.url);
  try {
    const dialog = c.invite({ headers: { 'X-Session-Token': 'wst_good' } });
    await c.finalResponse(dialog.invite);
    const bye = (await c.waitFor((m) => m.kind === 'request' && m.method === 'BYE', 5000, 'BYE after the ACK timeout')) as SipRequest;
    assert.equal(getHeader(bye, 'Call-ID'), dialog.callId);
    const oks = c.responsesTo(dialog.invite).filter((r) => r.status === 200);
    assert.ok(oks.length >= 4, `200 OK sent ${oks.length} times`);
    assert.equal(media.sessions.at(-1)?.closeReason, 'media_lost');
    assert.equal(quickEdge.calls.size, 0, 'never established');
  } finally {
    await c.close();
    await quickEdge.close();
  }
});
