// ANALYSER=llm inside the call workflow (time-skipping server, the real call worker): a model
// service answering 500 throughout makes the analyseCall local activity fail and Temporal retry
// it with the workflow's policy, and at its FALLBACK_ATTEMPT-th attempt the deterministic
// analyser fills the fields with a System Note. This is where the analyser's attempt number
// comes from Temporal itself (src/analysis/llm.ts).
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FALLBACK_ATTEMPT, LLM_ANALYSIS_NOTE_KIND } from '../../src/analysis/llm.js';
import type { Pool } from '../../src/db/pool.js';
import type { CallServiceDeps } from '../../src/services/calls.js';
import { createTestTeam } from '../support/app.js';
import { callRow, callTestConfig } from '../support/calls.js';
import { callWorkflowEnv, scheduleSimulatedCall } from '../support/callWorkflowEnv.js';
import { startFakeChatCompletions } from '../support/fakeChatCompletions.js';

const LLM_KEY = 'sk-workflow-test-0123456789abcdef';
// Started before the worker (which reads the settings once), so the config can name it.
const fake = await startFakeChatCompletions({ apiKey: LLM_KEY, reply: () => ({ status: 500 }) });
after(() => fake.close());

let pool: Pool;
let deps: CallServiceDeps;
const calls = callWorkflowEnv(callTestConfig({ ANALYSER: 'llm', LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: LLM_KEY, LLM_MODEL: 'gpt-fake-mini' }), (started) => ({ pool, deps } = started));

test('the model service failing throughout: analyseCall retried by its policy, then the deterministic fields and a System Note at the fallback attempt', async () => {
  const team = await createTestTeam(pool);
  const call = await scheduleSimulatedCall(deps, team, '1234');
  // The result comes after the analysis: 2 s and 4 s of backoff between the attempts.
  assert.equal((await calls.result(call.callId, 90_000)).status, 'completed');
  const row = await callRow(pool, call.callId);
  assert.equal(row.progress, 'done');
  assert.match(row.call_summary ?? '', /^Call to .* with the script "Demo: greet and verify"\./);
  assert.equal(row.objectives?.length, 2);
  // One request per attempt, each with the call's transcript: the fallback came at the attempt Temporal counted.
  assert.equal(fake.requests.length, FALLBACK_ATTEMPT);
  for (const request of fake.requests) assert.match(request.body.messages[1].content, /"transcript":\[\{"role":"agent"/);
  const notes = row.system_notes.filter((n) => n.kind === LLM_ANALYSIS_NOTE_KIND);
  assert.equal(notes.length, 1);
  assert.match(notes[0].text, new RegExp(`its service failed ${FALLBACK_ATTEMPT} time\\(s\\), the last with the model service answered 500`));
  assert.equal((await calls.steps(call.callId)).filter((s) => s === 'analyseCall').length, 1);
});
