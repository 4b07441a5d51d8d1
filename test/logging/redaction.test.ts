// Credentials never reach a log line: the project's pino logger and the Temporal runtime's
// log function, written to a stream and read back as an operator would read them.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger, type Logger } from '../../src/logging/logger.js';
import { redactCredentials, redactHookToken, redactPath } from '../../src/logging/redaction.js';
import { writeTemporalLog } from '../../src/temporal/worker.js';

const HOOK_TOKEN = 'wh_Q3mZ0uV7yK2pL9sT4wX8aB1cD6eF5gH0';
const SESSION_TOKEN = 'wst_N4b8Qk2Lr7Zt1Vx6Hm3Pj9Wc5Fy0Ds2Ga8Ke4Uo1Ti7';
const API_KEY = 'vaq8z2m4k7x1_Zr5Tq8Wn2Lp6Vb3Xc9Hd1Jf4Gk7Mh0Ns5Pa2Qe8Rt';
const WEBHOOK_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const CALL_TOKEN = 'Yh3kP0qW8zL5nB2vR7tX4mC1sD9fG6jA0eU3iO8pK5w';
const MEDIA_EDGE_SECRET = 'media-edge-secret-for-the-log-test';
const DIGEST_RESPONSE = '6629fae49393a05397450978507c4ef1';

/** A logger at debug level writing to memory, and everything it wrote. */
function capturedLogger(): { logger: Logger; output: () => string; lines: () => any[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('debug', stream);
  const output = () => chunks.join('');
  return { logger, output, lines: () => output().trim().split('\n').map((l) => JSON.parse(l)) };
}

test('a hook path in the access log keeps the prefix and the last 4 characters of the token', () => {
  assert.equal(redactPath(`/api/v1/hooks/${HOOK_TOKEN}`), `/api/v1/hooks/wh_…${HOOK_TOKEN.slice(-4)}`);
  assert.equal(redactPath(`/API/V1/HOOKS/${HOOK_TOKEN}/`), `/API/V1/HOOKS/wh_…${HOOK_TOKEN.slice(-4)}/`);
  // A segment that is no token of ours is still cut: it may be a mangled real one.
  assert.equal(redactPath('/api/v1/hooks/abcdefghijklmnop'), '/api/v1/hooks/…mnop');
  // Short guesses show nothing of themselves.
  assert.equal(redactHookToken('wh_abc'), 'wh_…');
  // Redacting twice changes nothing.
  assert.equal(redactPath(redactPath(`/api/v1/hooks/${HOOK_TOKEN}`)), `/api/v1/hooks/wh_…${HOOK_TOKEN.slice(-4)}`);
  assert.equal(redactPath('/api/v1/calls'), '/api/v1/calls');
});

test('every kind of credential in free text is redacted, and what is not a credential stays', () => {
  const cases: Array<[string, string]> = [
    [`POST /api/v1/hooks/${HOOK_TOKEN} failed`, `POST /api/v1/hooks/wh_…${HOOK_TOKEN.slice(-4)} failed`],
    [`token ${HOOK_TOKEN} in a message`, `token wh_…${HOOK_TOKEN.slice(-4)} in a message`],
    [`session ${SESSION_TOKEN}`, `session wst_…${SESSION_TOKEN.slice(-4)}`],
    [`key ${API_KEY}!`, 'key vaq8z2m4k7x1_…!'],
    [`secret ${WEBHOOK_SECRET}`, 'secret whsec_…'],
    [`Authorization: Bearer ${MEDIA_EDGE_SECRET}`, 'Authorization: [REDACTED]'],
    [`sent bearer ${MEDIA_EDGE_SECRET}`, 'sent bearer [REDACTED]'],
    [`X-Call-Token: ${CALL_TOKEN}\r\nX-Call-Id: 1`, 'X-Call-Token: [REDACTED]\r\nX-Call-Id: 1'],
    [`x-webhook-signature: sha256=${'ab'.repeat(32)}`, 'x-webhook-signature: [REDACTED]'],
    [`Digest username="alice", realm="edge", response="${DIGEST_RESPONSE}"`, 'Digest username="alice", realm="edge", response="[REDACTED]"'],
    ['connect postgres://voice:hunter22@db.internal:5432/voice', 'connect postgres://[REDACTED]@db.internal:5432/voice'],
    ['GET https://example.com/cb?id=7&token=abc123&signature=zz#x', 'GET https://example.com/cb?id=7&token=[REDACTED]&signature=[REDACTED]#x'],
    ['https://bucket.s3/x?X-Amz-Credential=AKIA%2F&X-Amz-Signature=f00d', 'https://bucket.s3/x?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]'],
    ['To: <sip:alice:s3cret@edge.example>', 'To: <sip:alice:[REDACTED]@edge.example>'],
    ['model refused sk-proj-Abc123def456GHI789jkl0_mn', 'model refused sk-…'],
    ['Incorrect API key provided: sk-abc12************************wxyz.', 'Incorrect API key provided: sk-….'],
    // Not credentials: left alone.
    ['INVITE sip:agent@edge.example SIP/2.0', 'INVITE sip:agent@edge.example SIP/2.0'],
    ['Via: SIP/2.0/WSS host.invalid:5060;branch=z9hG4bK1', 'Via: SIP/2.0/WSS host.invalid:5060;branch=z9hG4bK1'],
    ['call 3f0c2a9e-1d2b-4c3d-8e9f-0a1b2c3d4e5f ended: Bearer header missing', 'call 3f0c2a9e-1d2b-4c3d-8e9f-0a1b2c3d4e5f ended: Bearer header missing'],
    ['the task-list ran', 'the task-list ran'],
  ];
  for (const [input, expected] of cases) assert.equal(redactCredentials(input), expected, input);
});

test('the logger redacts credential fields, messages, format arguments, child bindings and nested headers', () => {
  const { logger, output, lines } = capturedLogger();
  logger.info({ path: `/api/v1/hooks/${HOOK_TOKEN}`, status: 202 }, 'request');
  logger.child({ requestId: 'r1', sessionToken: SESSION_TOKEN }).warn(
    { headers: { Authorization: `Bearer ${API_KEY}`, 'X-Call-Token': CALL_TOKEN, 'content-type': 'application/json' }, secret: WEBHOOK_SECRET, signed: true },
    'redeem with %s',
    `Bearer ${MEDIA_EDGE_SECRET}`,
  );
  logger.info(`hook ${HOOK_TOKEN} seen`);
  const text = output();
  for (const credential of [HOOK_TOKEN, SESSION_TOKEN, API_KEY, WEBHOOK_SECRET, CALL_TOKEN, MEDIA_EDGE_SECRET]) {
    assert.ok(!text.includes(credential), `${credential} must not be logged:\n${text}`);
  }
  const [request, redeem, message] = lines();
  assert.equal(request.path, `/api/v1/hooks/wh_…${HOOK_TOKEN.slice(-4)}`);
  assert.equal(request.status, 202);
  assert.equal(redeem.requestId, 'r1');
  assert.equal(redeem.sessionToken, '[REDACTED]');
  assert.deepEqual(redeem.headers, { Authorization: '[REDACTED]', 'X-Call-Token': '[REDACTED]', 'content-type': 'application/json' });
  assert.equal(redeem.secret, '[REDACTED]');
  assert.equal(redeem.signed, true);
  assert.equal(redeem.msg, 'redeem with Bearer [REDACTED]');
  assert.equal(message.msg, `hook wh_…${HOOK_TOKEN.slice(-4)} seen`);
});

test('errors: messages, stacks, causes and own fields are redacted; a Postgres error loses its detail', () => {
  const { logger, output, lines } = capturedLogger();
  const fetchError = new TypeError(`Request cannot be constructed from a URL that includes credentials: https://ops:${MEDIA_EDGE_SECRET}@hooks.example/x`);
  logger.error({ err: fetchError }, 'script webhook step failed');
  const wrapped = new Error('redemption failed', { cause: new Error(`upstream said ${SESSION_TOKEN}`) });
  logger.error(wrapped);
  // What node-postgres throws for a NOT NULL or CHECK violation: the row, secret included, in `detail`.
  const pgError = Object.assign(new Error('new row for relation "hooks" violates check constraint'), {
    severity: 'ERROR',
    code: '23514',
    routine: 'ExecConstraints',
    table: 'hooks',
    detail: `Failing row contains (1, 2, hash, ${WEBHOOK_SECRET.slice('whsec_'.length)}, {}).`,
  });
  logger.error({ err: pgError }, 'request failed');
  logger.warn({ err: Object.assign(new Error('invalid url'), { input: `https://u:p@x.example/?api_key=${API_KEY}` }) }, 'bad url');
  const text = output();
  for (const credential of [MEDIA_EDGE_SECRET, SESSION_TOKEN, WEBHOOK_SECRET.slice('whsec_'.length), API_KEY]) {
    assert.ok(!text.includes(credential), `${credential} must not be logged:\n${text}`);
  }
  const [fetchLine, wrappedLine, pgLine, urlLine] = lines();
  assert.equal(fetchLine.err.type, 'TypeError');
  assert.match(fetchLine.err.message, /https:\/\/\[REDACTED\]@hooks\.example\/x/);
  assert.match(fetchLine.err.stack, /^TypeError: Request cannot be constructed/);
  assert.match(wrappedLine.msg, /^redemption failed/);
  assert.match(wrappedLine.err.message, /upstream said wst_…/);
  assert.equal(pgLine.err.code, '23514');
  assert.equal(pgLine.err.table, 'hooks');
  assert.equal(pgLine.err.detail, '[REDACTED]');
  assert.equal(urlLine.err.input, 'https://[REDACTED]@x.example/?api_key=[REDACTED]');
});

test('a SIP message sample keeps its start line and loses its credentials', () => {
  const { logger, lines } = capturedLogger();
  const invite = [
    'INVITE sip:agent@edge.example SIP/2.0',
    `Authorization: Digest username="alice", realm="edge", nonce="n1", uri="sip:agent@edge.example", response="${DIGEST_RESPONSE}"`,
    `X-Session-Token: ${SESSION_TOKEN}`,
    `X-Call-Token: ${CALL_TOKEN}`,
    '',
    '',
  ].join('\r\n');
  logger.warn({ sample: invite, reason: `malformed header line: ${JSON.stringify(`X-Session-Token ${SESSION_TOKEN}`)}` }, 'unparseable SIP message');
  const [line] = lines();
  assert.equal(
    line.sample,
    ['INVITE sip:agent@edge.example SIP/2.0', 'Authorization: [REDACTED]', 'X-Session-Token: [REDACTED]', 'X-Call-Token: [REDACTED]', '', ''].join('\r\n'),
  );
  assert.equal(line.reason, `malformed header line: "X-Session-Token wst_…${SESSION_TOKEN.slice(-4)}"`);
});

test('the Temporal runtime’s log lines are redacted the same way', () => {
  let written = '';
  writeTemporalLog(
    { level: 'WARN', message: `Activity failed: POST /api/v1/hooks/${HOOK_TOKEN}`, meta: { error: new Error(`fetch https://a:${MEDIA_EDGE_SECRET}@h/`), secret: WEBHOOK_SECRET }, timestampNanos: 1_700_000_000_000_000_000n },
    (line) => (written += line),
  );
  assert.match(written, /^2023-11-14T22:13:20\.000Z \[WARN\] Activity failed: POST \/api\/v1\/hooks\/wh_…/);
  for (const credential of [HOOK_TOKEN, MEDIA_EDGE_SECRET, WEBHOOK_SECRET]) assert.ok(!written.includes(credential), `${credential} must not be logged:\n${written}`);
});
