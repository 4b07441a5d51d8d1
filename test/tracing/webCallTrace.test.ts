// A browser call is one trace, as a phone call is (docs/observability.md, "Traces"): from the
// request that created the call (create-web-call, or the media edge's redemption of a web
// session's token) through the call workflow and the edge's speech activities to the media
// edge's call-event requests. Nothing on the edge is inside that trace when the browser's
// INVITE arrives: the service keeps the call's traceparent (call_traces) and answers the edge's
// claim or redemption with it, and the edge sends it with the call's events. The real Koa app,
// a worker made by the production createWorker, the real media edge (startVoiceEdge) and a
// werift caller (chaos/browserCaller.ts), on a Temporal dev server, with an in-memory exporter.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { browserCall, SpokenAnswers } from '../../chaos/browserCaller.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { shutdownTracing } from '../../src/tracing/tracing.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import { callResultOrStuck } from '../support/calls.js';
import { ancestry, installTestTracing, spanIdOf as idOf, spansOnce } from '../support/traceSpans.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';

/** The agent says goodbye and hangs up: a call with one edge activity and one event (answered). */
const SCRIPT = { name: 'Short web call', steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] };
const EVENTS_ROUTE = '/internal/v1/calls/{call_id}/events';

let exporter: InMemorySpanExporter;
let stack: VoiceStack;
let team: TestTeam;
let scriptId: string;
let silent: SpokenAnswers;

before(async () => {
  exporter = await installTestTracing('web-trace-test');
  stack = await startVoiceStack('web-trace', {}, { webCallDomain: 'edge.web-trace.test', traced: true });
  team = await createTestTeam(stack.app.pool);
  ({ id: scriptId } = await insertScript(stack.app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  await stack.startEdge();
  silent = await SpokenAnswers.prepare([]);
});

after(async () => {
  await stack?.stop();
  await shutdownTracing();
});

/** The call workflow's run span (the workflow interceptor names its workflow `workflowId`). */
const isCallRun = (s: ReadableSpan, callId: string) => s.name === 'RunWorkflow:callWorkflow' && s.attributes.workflowId === callWorkflowId(callId);

/** What create-web-call and create-web-session answer: the browser's bootstrap, and the session's or call's id. */
interface WebCallBootstrap {
  ws_url: string;
  target: string;
  headers: Record<string, string>;
  call_id?: string;
  session_id?: string;
}

/**
 * Dials the bootstrap from the browser (a busy machine's werift now and then gives up before
 * media flows: the caller tries again, as a person would) until the agent hangs up; the call's
 * result, then its spans once the edge's event and speech activity are exported.
 */
async function callAndCollect(bootstrap: () => Promise<WebCallBootstrap>, callIdOf: (minted: WebCallBootstrap) => Promise<string>) {
  let outcome = '';
  let callId = '';
  for (let attempt = 1; attempt <= 3 && outcome !== 'bye'; attempt++) {
    const b = await bootstrap();
    outcome = await browserCall(b, silent, () => undefined, 60_000);
    callId = await callIdOf(b);
  }
  assert.equal(outcome, 'bye', 'the agent said goodbye and hung up');
  assert.deepEqual(await callResultOrStuck(stack.app.pool, stack.env.client, callId, 60_000), { callId, status: 'completed', endReason: 'agent_hangup' });
  const isEvent = (s: ReadableSpan) => s.attributes['http.route'] === EVENTS_ROUTE && String(s.attributes['http.target'] ?? s.attributes['url.path'] ?? '').includes(callId);
  const spans = await spansOnce(exporter, (finished) => finished.some(isEvent) && finished.some((s) => isCallRun(s, callId)));
  return { callId, spans, events: spans.filter(isEvent) };
}

/** Each of the call's event requests is in `root`'s trace, and its parents lead to `root`. */
function assertEventsUnder(root: ReadableSpan, events: ReadableSpan[], spans: ReadableSpan[]): void {
  assert.ok(events.length >= 1, `the call's event requests: ${spans.map((s) => s.name).join(', ')}`);
  for (const event of events) {
    assert.equal(event.spanContext().traceId, root.spanContext().traceId, `${event.name} is in the call's trace`);
    const chain = ancestry(event, spans);
    assert.equal(idOf(chain.at(-1)!), idOf(root), chain.map((s) => s.name).join(' → '));
  }
}

/** The edge's speech activity for the call (its goodbye) and the call workflow are in `root`'s trace, under it. */
function assertCallUnder(root: ReadableSpan, callId: string, spans: ReadableSpan[]): void {
  const run = spans.find((s) => isCallRun(s, callId));
  assert.ok(run, 'the call workflow ran traced');
  assert.equal(idOf(ancestry(run, spans).at(-1)!), idOf(root), 'the call workflow is under the call’s root');
  const edgeActivities = spans.filter((s) => s.name.startsWith('RunActivity:') && s.spanContext().traceId === root.spanContext().traceId && ancestry(s, spans).some((a) => idOf(a) === idOf(run)));
  assert.ok(edgeActivities.some((s) => /speakToCaller|hangUpCaller/.test(s.name)), edgeActivities.map((s) => s.name).join(', '));
}

test("create-web-call is one trace: the request → the call workflow → the edge's speech activity, and the edge's call events", async () => {
  const requestId = `web-call-trace-${Date.now()}`;
  const { callId, spans, events } = await callAndCollect(
    async () => {
      const res = await stack.app.request('POST', '/api/v1/create-web-call', { key: team.apiKey, headers: { 'X-Request-Id': requestId }, body: { script_id: scriptId } });
      assert.equal(res.status, 201, res.text);
      return res.json as WebCallBootstrap;
    },
    async (minted) => minted.call_id!,
  );
  const roots = spans.filter((s) => s.attributes['request.id'] === requestId);
  // The last attempt's create request: the one whose call it is.
  const root = roots.find((s) => s.spanContext().traceId === events[0]?.spanContext().traceId);
  assert.ok(root, `the create-web-call span of the call ${callId}`);
  assert.equal(root.name, 'POST /api/v1/create-web-call');
  assertEventsUnder(root, events, spans);
  assertCallUnder(root, callId, spans);
});

test("a redeemed web session is one trace: the edge's redemption → the call workflow → the edge's speech activity, and the edge's call events", async () => {
  const { callId, spans, events } = await callAndCollect(
    async () => {
      const res = await stack.app.request('POST', '/api/v1/create-web-session', { key: team.apiKey, body: { script_id: scriptId } });
      assert.equal(res.status, 201, res.text);
      return res.json as WebCallBootstrap;
    },
    async (minted) => {
      const { rows } = await stack.app.pool.query<{ call_id: string | null }>('SELECT call_id FROM web_sessions WHERE id = $1', [minted.session_id]);
      return rows[0]?.call_id ?? '';
    },
  );
  const redemptions = spans.filter((s) => s.attributes['http.route'] === '/internal/v1/web-sessions/redeem');
  const root = redemptions.find((s) => s.spanContext().traceId === events[0]?.spanContext().traceId);
  assert.ok(root, `the redemption span of the call ${callId}: ${events.map((e) => ancestry(e, spans).map((s) => s.name).join(' → ')).join('; ')}`);
  assertEventsUnder(root, events, spans);
  assertCallUnder(root, callId, spans);
});
