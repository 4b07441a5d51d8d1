// create-web-call tokens at two media edges against the real service (Koa app, Postgres, the
// call workflow in the time-skipping environment): the service decides whether a call may
// connect before any media is made for the INVITE, across edges. Media is the SIP tests'
// fake, which counts every session it makes (each one a port binding with real WebRTC).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { mintWebCallToken } from '../../src/domain/webCallTokens.js';
import { createLogger } from '../../src/logging/logger.js';
import { ServiceCallAdmission } from '../../src/mediaEdge/admission.js';
import { startMediaEdge, type EstablishedCall, type MediaEdge } from '../../src/mediaEdge/server.js';
import type { MediaSession } from '../../src/mediaEdge/sip/userAgentServer.js';
import { WEB_CONNECT_TIMEOUT_MS } from '../../workflows/callWorkflow.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from '../support/app.js';
import { callTestConfig, createCallWorker } from '../support/calls.js';
import { FakeMediaAnswerer } from '../support/fakeMedia.js';
import { SipTestClient } from '../support/sipClient.js';
import { createTimeSkippingEnv } from '../support/temporal.js';
import { eventually } from '../support/eventually.js';

const SECRET = 'claims-media-edge-secret-0123456789';
const EDGE = {
  TEMPORAL_TASK_QUEUE: 'web-call-claims',
  RATE_LIMITS_ENABLED: 'false',
  MEDIA_EDGE_WS_URL: 'ws://127.0.0.1:5070/ws',
  MEDIA_EDGE_SIP_DOMAIN: 'edge.example.test',
  MEDIA_EDGE_SECRET: SECRET,
} as const;

/** The fake media, failing its next answers on request (an offer the WebRTC stack cannot use). */
class CountingMedia extends FakeMediaAnswerer {
  failures = 0;
  override answer(offerSdp: string): Promise<MediaSession> {
    if (this.failures > 0) {
      this.failures--;
      return Promise.reject(new Error('no usable candidate'));
    }
    return super.answer(offerSdp);
  }
}

interface TestEdge {
  edge: MediaEdge;
  media: CountingMedia;
  calls: EstablishedCall[];
}

let env: TestWorkflowEnvironment;
let app: TestApi;
let worker: Worker;
let running: Promise<void>;
let team: TestTeam;
let edgeA: TestEdge;
let edgeB: TestEdge;
const clients: SipTestClient[] = [];

async function startEdge(): Promise<TestEdge> {
  const logger = createLogger('silent');
  const media = new CountingMedia();
  const calls: EstablishedCall[] = [];
  const edge = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission: new ServiceCallAdmission({ apiUrl: app.url, secret: SECRET, logger }),
    media,
    logger,
    onCall: (call) => calls.push(call),
    sipT1Ms: 100,
  });
  return { edge, media, calls };
}

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, config: EDGE });
  worker = await createCallWorker(env, app.pool, callTestConfig(EDGE));
  running = worker.run();
  team = await createTestTeam(app.pool, { maxConcurrent: 20 });
  edgeA = await startEdge();
  edgeB = await startEdge();
});

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await edgeA?.edge.close();
  await edgeB?.edge.close();
  worker?.shutdown();
  await running;
  await app?.close();
  await env?.teardown();
});

async function client(edge: TestEdge): Promise<SipTestClient> {
  const c = await SipTestClient.connect(edge.edge.url);
  clients.push(c);
  return c;
}

/** create-web-call's headers, forwarded as the browser would. */
async function createWebCall(): Promise<{ callId: string; headers: Record<string, string> }> {
  const res = await app.request('POST', '/api/v1/create-web-call', { key: team.apiKey, body: { script_id: team.scriptId } });
  assert.equal(res.status, 201, res.text);
  return { callId: res.json.call_id, headers: res.json.headers };
}

async function claimCount(callId: string): Promise<number> {
  const { rows } = await app.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM web_call_claims WHERE call_id = $1', [callId]);
  return rows[0].n;
}

/** Waits until `predicate` holds (a released claim is handed back after the INVITE's answer). */
test('a web call connects at one edge only: another edge’s INVITE is 409 before any media is made; a claim whose media never came up is handed back', async () => {
  const { callId, headers } = await createWebCall();

  // Edge B admits the call but cannot answer its offer: 488, and the claim goes back.
  edgeB.media.failures = 1;
  const b = await client(edgeB);
  const failed = b.invite({ headers });
  assert.equal((await b.finalResponse(failed.invite)).status, 488);
  await eventually(async () => (await claimCount(callId)) === 0, 'the claim is released');

  // So the browser's next try connects, at edge A.
  const a = await client(edgeA);
  const first = a.invite({ headers });
  assert.equal((await a.answered(first)).status, 200);
  await eventually(async () => edgeA.calls.some((c) => c.callId === callId), 'the call is established at edge A');
  assert.equal(edgeA.media.sessions.length, 1);

  // The same token replayed at edge B while the call is up there: refused before any media.
  const sessionsBefore = edgeB.media.sessions.length;
  const replay = b.invite({ headers });
  const refused = await b.finalResponse(replay.invite);
  assert.equal(refused.status, 409);
  assert.equal(refused.reason, 'Call already connected');
  const again = a.invite({ headers });
  assert.equal((await a.finalResponse(again.invite)).status, 409, 'and at edge A itself');
  assert.equal(edgeB.media.sessions.length, sessionsBefore, 'edge B made no media for the replay');
  assert.equal(edgeA.media.sessions.length, 1, 'edge A made no second media session');
  assert.equal(await claimCount(callId), 1, 'the connected call keeps its claim');
});

test('a web call that has ended is 410 at the edge before any media is made', async () => {
  const { callId, headers } = await createWebCall();
  await env.sleep(WEB_CONNECT_TIMEOUT_MS + 1000);
  const result = await env.client.workflow.getHandle(callWorkflowId(callId)).result();
  assert.equal(result.status, 'failed');

  const sessionsBefore = edgeA.media.sessions.length;
  const c = await client(edgeA);
  const dialog = c.invite({ headers });
  const response = await c.finalResponse(dialog.invite);
  assert.equal(response.status, 410);
  assert.equal(response.reason, 'Call has ended: its status is failed');
  assert.equal(edgeA.media.sessions.length, sessionsBefore, 'no media for an ended call');
});

test('an expired call token is 410 and an unknown call 404, neither making media', async () => {
  const { callId } = await createWebCall();
  const sessionsBefore = edgeA.media.sessions.length;
  const c = await client(edgeA);
  const expired = c.invite({ headers: { 'X-Call-Id': callId, 'X-Call-Token': mintWebCallToken(SECRET, callId, new Date(Date.now() - 1000)) } });
  const expiredResponse = await c.finalResponse(expired.invite);
  assert.deepEqual([expiredResponse.status, expiredResponse.reason], [410, 'Call token has expired']);
  assert.equal(await claimCount(callId), 0, 'an expired token claims nothing');

  const unknownId = randomUUID();
  const unknown = c.invite({ headers: { 'X-Call-Id': unknownId, 'X-Call-Token': mintWebCallToken(SECRET, unknownId, new Date(Date.now() + 60_000)) } });
  assert.equal((await c.finalResponse(unknown.invite)).status, 404);
  assert.equal(edgeA.media.sessions.length, sessionsBefore);
});
