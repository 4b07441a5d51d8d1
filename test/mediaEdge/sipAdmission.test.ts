// The service admission of INVITEs: session tokens redeemed on the internal API (a fake of
// the same protocol here), its answers mapped to SIP statuses; call tokens checked locally
// (HMAC and expiry), then their call claimed on the internal API.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/logging/logger.js';
import { mintWebCallToken } from '../../src/domain/webCallTokens.js';
import { ServiceCallAdmission } from '../../src/mediaEdge/admission.js';
import type { SipRequest } from '../../src/mediaEdge/sip/message.js';
import { webCallToken } from '../../src/services/webSessions.js';

const SECRET = 'admission-test-secret-0123456789';
const CALL_ID = '0b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c';
let server: Server;
let apiUrl: string;
const seen: { authorization?: string; body: string; url?: string }[] = [];

/** Web calls the claim endpoint answers for (docs/web-calls.md), by call id. */
const ENDED_CALL = '2b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c';
const CONNECTED_CALL = '3b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c';
const BROKEN_CALL = '4b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c';
const CLAIMS: Record<string, [number, object]> = {
  [CALL_ID]: [200, { success: true, call_id: CALL_ID, team_id: 't-1', script_id: 's-1', contact_id: 'c-1' }],
  [ENDED_CALL]: [410, { success: false, message: 'Call has ended: its status is failed' }],
  [CONNECTED_CALL]: [409, { success: false, message: 'Call already connected' }],
  [BROKEN_CALL]: [500, { success: false, message: 'boom' }],
};

/** The redeem endpoint's documented answers, chosen by the token. */
const ANSWERS: Record<string, [number, object]> = {
  wst_ok: [201, { success: true, call_id: CALL_ID, script_id: 's-1', contact_id: 'c-1' }],
  wst_missing: [404, { success: false, message: 'Session token not found' }],
  wst_used: [409, { success: false, message: 'Session token has already been used' }],
  wst_expired: [410, { success: false, message: 'Session token has expired' }],
  wst_bad: [400, { success: false, message: 'session_token is required' }],
  wst_secret: [401, { success: false, message: 'Unauthorized' }],
  wst_broken: [500, { success: false, message: 'boom' }],
};

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push({ authorization: req.headers.authorization, body, url: req.url });
      const claim = /^\/internal\/v1\/web-calls\/([^/]+)\/(claim|release)$/.exec(req.url ?? '');
      if (claim) {
        const [status, answer] = claim[2] === 'release' ? [200, { success: true, released: true }] : (CLAIMS[claim[1]] ?? [404, { success: false, message: 'Call not found' }]);
        return void res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
      }
      const token = (JSON.parse(body) as { session_token: string }).session_token;
      const [status, answer] = req.url === '/internal/v1/web-sessions/redeem' ? (ANSWERS[token] ?? [404, {}]) : [404, {}];
      if (token === 'wst_slow') return; // never answers: the timeout decides
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const invite = (headers: Record<string, string>): SipRequest => ({
  kind: 'request',
  method: 'INVITE',
  uri: 'sip:agent@edge.test',
  headers: Object.entries(headers).map(([name, value]) => ({ name, value })),
  body: '',
});

// A short timeout only where the timeout is what is tested: a loaded machine can take longer
// than that to answer the first request of a process.
const admission = (timeoutMs = 10_000) => new ServiceCallAdmission({ apiUrl, secret: SECRET, logger: createLogger('silent'), timeoutMs });

test('a session token is redeemed with the bearer secret; 201 admits the call it created', async () => {
  seen.length = 0;
  const result = await admission().admit(invite({ 'X-Session-Token': 'wst_ok' }));
  assert.deepEqual(result, { callId: CALL_ID, credential: 'session_token', scriptId: 's-1', contactId: 'c-1' });
  assert.equal(seen[0].authorization, `Bearer ${SECRET}`);
  assert.deepEqual(JSON.parse(seen[0].body), { session_token: 'wst_ok' });
});

test('redeem answers map to SIP: 404, 409, 410 as they are; 400 and 401 are 403; 500 and unreachable are 503', async () => {
  const cases: [string, number][] = [
    ['wst_missing', 404],
    ['wst_used', 409],
    ['wst_expired', 410],
    ['wst_bad', 403],
    ['wst_secret', 403],
    ['wst_broken', 503],
    ['wst_slow', 503],
  ];
  for (const [token, status] of cases) {
    const result = await admission(token === 'wst_slow' ? 300 : undefined).admit(invite({ 'X-Session-Token': token }));
    assert.ok('reject' in result, token);
    assert.equal(result.reject, status, token);
  }
  const unreachable = new ServiceCallAdmission({ apiUrl: 'http://127.0.0.1:9', secret: SECRET, logger: createLogger('silent') });
  const result = await unreachable.admit(invite({ 'X-Session-Token': 'wst_ok' }));
  assert.deepEqual(result, { reject: 503, reason: 'Service unavailable' });
});

test('a call token is the HMAC the service issues for X-Call-Id; a forged, misplaced or missing one is 403 without asking the service', async () => {
  seen.length = 0;
  const expiresAt = new Date(Date.now() + 60_000);
  const token = (callId: string, secret = SECRET) => webCallToken(secret, callId, expiresAt);
  assert.equal(mintWebCallToken(SECRET, CALL_ID, expiresAt), token(CALL_ID), 'the same HMAC as create-web-call');
  const good = await admission().admit(invite({ 'X-Call-Id': CALL_ID, 'X-Call-Token': token(CALL_ID) }));
  const claimId = (JSON.parse(seen[0].body) as { claim_id: string }).claim_id;
  assert.deepEqual(good, { callId: CALL_ID, credential: 'call_token', claimId });
  seen.length = 0; // the good token's claim: asked for on purpose (next test)
  const otherCall = '1b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c';
  const refusals: Record<string, string>[] = [
    { 'X-Call-Id': otherCall, 'X-Call-Token': token(CALL_ID) },
    { 'X-Call-Id': CALL_ID, 'X-Call-Token': token(CALL_ID, 'another-secret-0123456789') },
    { 'X-Call-Id': CALL_ID, 'X-Call-Token': 'x' },
    { 'X-Call-Token': token(CALL_ID) },
    { 'X-Call-Id': 'not-a-uuid', 'X-Call-Token': token('not-a-uuid') },
    {},
  ];
  for (const headers of refusals) {
    const result = await admission().admit(invite(headers));
    assert.ok('reject' in result && result.reject === 403, JSON.stringify(headers));
  }
  assert.equal(seen.length, 0, 'the service was never asked');
});

test('a call token carries its expiry inside the HMAC: past it 410 Call token has expired, an altered expiry 403, neither asks the service', async () => {
  seen.length = 0;
  const expired = webCallToken(SECRET, CALL_ID, new Date(Date.now() - 1000));
  assert.deepEqual(await admission().admit(invite({ 'X-Call-Id': CALL_ID, 'X-Call-Token': expired })), { reject: 410, reason: 'Call token has expired' });
  // The old token of the same call with a later expiry written in: the HMAC no longer matches.
  const [exp, mac] = expired.split('.');
  const extended = `${Number(exp) + 3600}.${mac}`;
  assert.deepEqual(await admission().admit(invite({ 'X-Call-Id': CALL_ID, 'X-Call-Token': extended })), { reject: 403, reason: 'Invalid call token' });
  // The token format before expiries existed (an HMAC of the call id alone) is refused.
  const legacy = createHmac('sha256', SECRET).update(`web-call:${CALL_ID}`).digest('base64url');
  assert.deepEqual(await admission().admit(invite({ 'X-Call-Id': CALL_ID, 'X-Call-Token': legacy })), { reject: 403, reason: 'Invalid call token' });
  assert.equal(seen.length, 0, 'the service was never asked');
});

test('a valid call token claims its call before admission: 200 admits with the claim, 409 / 410 / 404 as the service says, 5xx and unreachable 503; a claim whose media never came up is released', async () => {
  const token = (callId: string) => webCallToken(SECRET, callId, new Date(Date.now() + 60_000));
  seen.length = 0;
  const admitted = await admission().admit(invite({ 'X-Call-Id': CALL_ID.toUpperCase(), 'X-Call-Token': token(CALL_ID.toUpperCase()) }));
  assert.ok(!('reject' in admitted));
  assert.equal(admitted.callId, CALL_ID, 'the call id lower-cased');
  assert.equal(seen[0].url, `/internal/v1/web-calls/${CALL_ID}/claim`);
  assert.equal(seen[0].authorization, `Bearer ${SECRET}`);
  assert.deepEqual(JSON.parse(seen[0].body), { claim_id: admitted.claimId });

  const cases: [string, number, string][] = [
    [CONNECTED_CALL, 409, 'Call already connected'],
    [ENDED_CALL, 410, 'Call has ended: its status is failed'],
    ['5b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c', 404, 'Call not found'],
    [BROKEN_CALL, 503, 'Claim failed'],
  ];
  for (const [callId, status, reason] of cases) {
    assert.deepEqual(await admission().admit(invite({ 'X-Call-Id': callId, 'X-Call-Token': token(callId) })), { reject: status, reason }, callId);
  }
  const unreachable = new ServiceCallAdmission({ apiUrl: 'http://127.0.0.1:9', secret: SECRET, logger: createLogger('silent') });
  assert.deepEqual(await unreachable.admit(invite({ 'X-Call-Id': CALL_ID, 'X-Call-Token': token(CALL_ID) })), { reject: 503, reason: 'Service unavailable' });

  seen.length = 0;
  await admission().ended(admitted, true);
  assert.equal(seen.length, 0, 'a call that connected keeps its claim');
  await admission().ended(admitted, false);
  assert.deepEqual(
    seen.map((r) => [r.url, JSON.parse(r.body)]),
    [[`/internal/v1/web-calls/${CALL_ID}/release`, { claim_id: admitted.claimId }]],
  );
});
