// A phone call through the SIP trunk is one trace (docs/observability.md, "Traces"): from the
// API's create-phone-call span through the call workflow and the edge's dial activity to the
// media edge's call-event requests (ringing, answered, ended), which the edge sends with fetch
// and the call's traceparent. The real Koa app, a worker made by the production createWorker,
// the real media edge (startVoiceEdge with its trunk agent) and SIPp as the trunk
// (test/mediaEdge/sipScenarios/uas-auth-401.xml: challenges, answers, waits for our BYE), on a
// Temporal dev server, with an in-memory span exporter.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { freePort } from '../../src/localPorts.js';
import { freeSipPort } from '../support/sipPorts.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { shutdownTracing } from '../../src/tracing/tracing.js';
import { callWorkflowId } from '../../workflows/contracts.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import { callResultOrStuck } from '../support/calls.js';
import { startSipp } from '../support/sipp.js';
import { ancestry, installTestTracing, spansOnce } from '../support/traceSpans.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';

const CALLEE = '+14155550191';
/** Not screened for an answering machine: SIPp sends no audio, and a silent line is a machine. */
const SCRIPT = { name: 'Short call', voicemail_detection: false, steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }] };

let exporter: InMemorySpanExporter;
let stack: VoiceStack;
let team: TestTeam;
let scriptId: string;
let trunkPort: number;

before(async () => {
  exporter = await installTestTracing('phone-trace-test');
  stack = await startVoiceStack('phone-trace', { VOICE_PROVIDER: 'sip' }, { traced: true });
  team = await createTestTeam(stack.app.pool);
  ({ id: scriptId } = await insertScript(stack.app.pool, { teamId: team.teamId, name: SCRIPT.name, definition: SCRIPT }));
  trunkPort = await freePort();
  await stack.startEdge({
    trunk: parseTrunkSettings({
      SIP_TRUNK_URI: `sip:127.0.0.1:${trunkPort};transport=udp`,
      SIP_TRUNK_USERNAME: 'alice',
      SIP_TRUNK_PASSWORD: 'secret',
      SIP_LISTEN: `127.0.0.1:${await freeSipPort()}`,
      RTP_PORT_RANGE: '44900-44999',
    }),
  });
});

after(async () => {
  await stack?.stop();
  await shutdownTracing();
});

test("a phone call through the trunk is one trace: create-phone-call → workflow → the edge's dial activity → its call-event requests", async () => {
  const sipp = await startSipp({ scenario: 'test/mediaEdge/sipScenarios/uas-auth-401.xml', port: trunkPort });
  try {
    const requestId = `phone-trace-${Date.now()}`;
    const res = await stack.app.request('POST', '/api/v1/create-phone-call', {
      key: team.apiKey,
      headers: { 'X-Request-Id': requestId },
      body: { from_number: team.fromNumber, script_id: scriptId, contact: { phone_number: CALLEE, first_name: 'Ada' } },
    });
    assert.equal(res.status, 201, res.text);
    const callId: string = res.json.call_id;
    assert.deepEqual(await callResultOrStuck(stack.app.pool, stack.env.client, callId, 60_000), { callId, status: 'completed', endReason: 'agent_hangup' });
    assert.equal((await sipp.done).code, 0);

    const eventsRoute = '/internal/v1/calls/{call_id}/events';
    const isEvent = (s: ReadableSpan) => s.attributes['http.route'] === eventsRoute && String(s.attributes['http.target'] ?? s.attributes['url.path'] ?? '').includes(callId);
    // The workflow's spans carry its id as `workflowId` (the worker's span sink adds the workflow's info).
    const spans = await spansOnce(exporter, (finished) => finished.filter(isEvent).length >= 2 && finished.some((s) => s.name === 'RunWorkflow:callWorkflow' && s.attributes.workflowId === callWorkflowId(callId)));
    const http = spans.find((s) => s.attributes['request.id'] === requestId);
    assert.ok(http, 'the create-phone-call span');
    const traceId = http.spanContext().traceId;

    // The edge's event requests (answered at least; ringing when the trunk sent 180): each in the call's trace, up to the create request.
    const events = spans.filter(isEvent);
    assert.ok(events.length >= 1, `the call's event requests: ${spans.map((s) => s.name).join(', ')}`);
    for (const event of events) {
      assert.equal(event.spanContext().traceId, traceId, `${event.name} is in the call's trace`);
      const chain = ancestry(event, spans).map((s) => s.name);
      assert.equal(chain.at(-1), 'POST /api/v1/create-phone-call', chain.join(' → '));
      assert.ok(chain.includes('RunWorkflow:callWorkflow') && chain.some((name) => name.startsWith('RunActivity:')), chain.join(' → '));
    }
    // The dial claim too: the edge's first request for the call.
    const claims = spans.filter((s) => s.attributes['http.route'] === '/internal/v1/calls/{call_id}/dial-claim');
    assert.ok(claims.length >= 1 && claims.every((s) => s.spanContext().traceId === traceId), 'the dial claim is in the trace');
  } finally {
    await sipp.stop();
  }
});
