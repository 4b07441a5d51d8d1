// The web-call example end to end in headless Chromium (Debian's /usr/bin/chromium driven
// by playwright-core, fake microphone): the example server (examples/web-call/server.ts)
// in front of the real API and worker, and the SIP-over-WebSocket test endpoint
// (test/support/sipTestEndpoint.ts) as the media edge, which records the INVITE and
// redeems its token like the real media edge would.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { type Browser } from 'playwright-core';
import { countTeamWebSessions } from '../../src/db/repositories/webSessions.js';
import { startExampleServer, type ExampleServer } from '../../examples/web-call/server.js';
import { sipHeader, startSipTestEndpoint, type SipTestEndpoint } from '../support/sipTestEndpoint.js';
import { createTestTeam, startTestApi, type TestApi, type TestResponse, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig, createCallWorker } from '../support/calls.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { FAKE_MEDIA_ARGS, launchChromium } from '../support/chromium.js';

const SECRET = 'browser-test-media-edge-secret';
const TARGET = 'sip:agent-7@edge.browser.test';

let env: TestWorkflowEnvironment;
let sip: SipTestEndpoint;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;
let example: ExampleServer;
let browser: Browser;
const redemptions: TestResponse[] = [];

before(async () => {
  env = await createTimeSkippingEnv();
  sip = await startSipTestEndpoint({
    onInvite: async (invite) => {
      const res = await app.request('POST', '/internal/v1/web-sessions/redeem', { key: SECRET, body: { session_token: sipHeader(invite, 'X-Session-Token') } });
      redemptions.push(res);
      return { status: 480, reason: 'Temporarily Unavailable' };
    },
  });
  const overrides = {
    TEMPORAL_TASK_QUEUE: 'web-call-browser',
    MEDIA_EDGE_WS_URL: sip.url,
    MEDIA_EDGE_SIP_DOMAIN: 'edge.browser.test',
    MEDIA_EDGE_SIP_USERNAME: 'browser-caller',
    MEDIA_EDGE_SIP_PASSWORD: 'not-a-credential',
    MEDIA_EDGE_TARGET: TARGET,
    MEDIA_EDGE_SECRET: SECRET,
  } as const;
  app = await startTestApi({ temporal: env.client, config: overrides });
  worker = await createCallWorker(env, app.pool, callTestConfig(overrides));
  running = worker.run();
  team = await createTestTeam(app.pool);
  // An unreachable STUN server: the page must still dial (it stops waiting for candidates).
  example = await startExampleServer({ apiUrl: app.url, apiKey: team.apiKey, scriptId: team.scriptId, port: 0, iceServers: [{ urls: 'stun:127.0.0.1:9' }] });
  browser = await launchChromium(FAKE_MEDIA_ARGS);
});

after(async () => {
  await browser?.close();
  await example?.close();
  worker?.shutdown();
  await running;
  await app?.close();
  await sip?.close();
  await env?.teardown();
});

test('a click mints exactly one session; the INVITE dials target audio-only with every header; the API key never reaches the browser', async () => {
  const page = await browser.newPage();
  const seenByBrowser: string[] = [];
  let minted: Record<string, any> | undefined;
  page.on('request', (req) => seenByBrowser.push(req.url(), JSON.stringify(req.headers()), req.postData() ?? ''));
  page.on('response', async (res) => {
    const text = await res.text().catch(() => '');
    seenByBrowser.push(JSON.stringify(res.headers()), text);
    if (res.url().endsWith('/session')) minted = JSON.parse(text);
  });
  page.on('websocket', (ws) => {
    ws.on('framesent', (f) => seenByBrowser.push(String(f.payload)));
    ws.on('framereceived', (f) => seenByBrowser.push(String(f.payload)));
  });

  await page.goto(example.url);
  await page.waitForLoadState('networkidle');
  assert.equal(example.mints(), 0, 'nothing minted on page load');
  assert.equal((await countTeamWebSessions(app.pool, team.teamId)).minted, 0);
  assert.equal(sip.requests.length, 0, 'no SIP traffic before the click (no registration)');

  await page.click('#call');
  const invite = await sip.firstInvite(30_000);
  await page.waitForSelector('#status[data-state="failed"]', { timeout: 30_000 });

  // Exactly one session, minted by the click.
  assert.equal(example.mints(), 1);
  const sessions = await countTeamWebSessions(app.pool, team.teamId);
  assert.equal(sessions.minted + sessions.used + sessions.expired, 1);
  assert.ok(minted, 'the page received the session from the example server');

  // The INVITE: target from configuration, as the configured SIP user, every header forwarded unchanged.
  assert.equal(invite.requestUri, TARGET);
  assert.match(sipHeader(invite, 'To') ?? '', /<sip:agent-7@edge\.browser\.test>/);
  assert.match(sipHeader(invite, 'From') ?? '', /<sip:browser-caller@edge\.browser\.test>/);
  const headers = minted!.headers as Record<string, string>;
  assert.ok(Object.keys(headers).length >= 4);
  for (const [name, value] of Object.entries(headers)) assert.equal(sipHeader(invite, name), value, `header ${name}`);
  const { rows } = await app.pool.query<{ token_hash: string; id: string }>('SELECT id, token_hash FROM web_sessions WHERE team_id = $1', [team.teamId]);
  assert.equal(createHash('sha256').update(sipHeader(invite, 'X-Session-Token')!).digest('hex'), rows[0].token_hash, 'the INVITE carries the minted token');
  assert.equal(sipHeader(invite, 'X-Session-Id'), rows[0].id);

  // Audio only, no registration, no session timers.
  assert.match(invite.body, /^m=audio /m);
  assert.doesNotMatch(invite.body, /^m=video /m);
  assert.deepEqual(sip.requests.map((r) => r.method).filter((m) => m !== 'INVITE' && m !== 'ACK'), []);
  assert.equal(sipHeader(invite, 'Session-Expires'), undefined);
  assert.doesNotMatch(sipHeader(invite, 'Supported') ?? '', /\btimer\b/);

  // The media edge's redemption created the web call.
  assert.equal(redemptions.length, 1);
  assert.equal(redemptions[0].status, 201, redemptions[0].text);
  const call = await callRow(app.pool, redemptions[0].json.call_id);
  assert.equal(call.type, 'web');
  assert.equal(call.team_id, team.teamId);

  // The API key was never sent to, or by, the browser.
  seenByBrowser.push(await page.content());
  assert.ok(seenByBrowser.length > 10);
  for (const item of seenByBrowser) assert.ok(!item.includes(team.apiKey), 'the API key reached the browser');
  await page.close();
});
