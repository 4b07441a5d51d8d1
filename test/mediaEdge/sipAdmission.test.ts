// The service admission of INVITEs: session tokens redeemed on the internal API (a fake of
// the same protocol here), its answers mapped to SIP statuses; call tokens checked locally.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/logging/logger.js';
import { expectedCallToken, ServiceCallAdmission } from '../../src/mediaEdge/admission.js';
import type { SipRequest } from '../../src/mediaEdge/sip/message.js';
import { webCallToken } from '../../src/services/webSessions.js';

const SECRET = 'admission-test-secret-0123456789';
const CALL_ID = '0b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c';
let server: Server;
let apiUrl: string;
const seen: { authorization?: string; body: string }[] = [];

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
      seen.push({ authorization: req.headers.authorization, body });
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

const admission = () => new ServiceCallAdmission({ apiUrl, secret: SECRET, logger: createLogger('silent'), timeoutMs: 300 });

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
    const result = await admission().admit(invite({ 'X-Session-Token': token }));
    assert.ok('reject' in result, token);
    assert.equal(result.reject, status, token);
  }
  const unreachable = new ServiceCallAdmission({ apiUrl: 'http://127.0.0.1:9', secret: SECRET, logger: createLogger('silent') });
  const result = await unreachable.admit(invite({ 'X-Session-Token': 'wst_ok' }));
  assert.deepEqual(result, { reject: 503, reason: 'Service unavailable' });
});

test('a call token is the HMAC the service issues for X-Call-Id; a forged, misplaced or missing one is 403 without asking the service', async () => {
  seen.length = 0;
  assert.equal(expectedCallToken(SECRET, CALL_ID), webCallToken(SECRET, CALL_ID), 'the same HMAC as create-web-call');
  const good = await admission().admit(invite({ 'X-Call-Id': CALL_ID, 'X-Call-Token': webCallToken(SECRET, CALL_ID) }));
  assert.deepEqual(good, { callId: CALL_ID, credential: 'call_token' });
  const otherCall = '1b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c';
  const refusals: Record<string, string>[] = [
    { 'X-Call-Id': otherCall, 'X-Call-Token': webCallToken(SECRET, CALL_ID) },
    { 'X-Call-Id': CALL_ID, 'X-Call-Token': webCallToken('another-secret-0123456789', CALL_ID) },
    { 'X-Call-Id': CALL_ID, 'X-Call-Token': 'x' },
    { 'X-Call-Token': webCallToken(SECRET, CALL_ID) },
    { 'X-Call-Id': 'not-a-uuid', 'X-Call-Token': webCallToken(SECRET, 'not-a-uuid') },
    {},
  ];
  for (const headers of refusals) {
    const result = await admission().admit(invite(headers));
    assert.ok('reject' in result && result.reject === 403, JSON.stringify(headers));
  }
  assert.equal(seen.length, 0, 'the service was never asked');
});
