// ANALYSER=llm (src/analysis/llm.ts) through the analyseCall activity, over real Postgres, with
// the local chat-completions fake as the model: the result fields from the model's JSON, the
// deterministic analyser with a System Note when the answer fails validation or the service
// stays down (the activity's attempts, run in Temporal's activity context), and what the model
// is sent: this call only, never a key or another team's data.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities/index.js';
import { createCallAnalyser } from '../../src/analysis/index.js';
import { FALLBACK_ATTEMPT, LLM_ANALYSIS_NOTE_KIND } from '../../src/analysis/llm.js';
import type { Config } from '../../src/config/index.js';
import type { Pool } from '../../src/db/pool.js';
import { appendConversationTurns, appendSystemNotes, completeCall, findCallById, insertCall, markCallInProgress, setProviderCall } from '../../src/db/repositories/calls.js';
import { insertContact } from '../../src/db/repositories/contacts.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { LlmError } from '../../src/llm/chatCompletions.js';
import { createLogger } from '../../src/logging/logger.js';
import { callResultView } from '../../src/services/callViews.js';
import { createTestTeam, testConfig, testPool, type TestTeam } from '../support/app.js';
import { startFakeChatCompletions, type FakeChatCompletions, type FakeReply } from '../support/fakeChatCompletions.js';

const LLM_KEY = 'sk-analyser-test-0123456789abcdef';
const SECRET_NOTE = 'webhook answered with secret whsec_NOTFORTHEMODEL';
const SCRIPT = {
  name: 'Dental reminder',
  objectives: ['Confirm the appointment', { objective: 'Learn the best callback time', met_when: { variable: 'answers.callback', equals: 'never' } }],
  structured_data: { confirmed: 'answers.confirmed', callback_time: 'answers.callback' },
  steps: [
    { id: 'hello', type: 'say', text: 'Hello {{contact.first_name}}, this is the dental office.' },
    { id: 'confirm', type: 'ask', question: 'Can you come on Tuesday at ten?', variable: 'answers.confirmed', expect: 'yes_no' },
    { id: 'bye', type: 'end', text: 'Goodbye.' },
  ],
};
const VALID_ANSWER = {
  call_summary: 'The office called Ada, who confirmed Tuesday at ten and asked to be called back after five.',
  structured_data: { confirmed: true, callback_time: 'after 5 pm' },
  objectives: [
    { objective: 'Learn the best callback time', met: true },
    { objective: 'Confirm the appointment', met: true },
  ],
};

let pool: Pool;
let fake: FakeChatCompletions;
let config: Config;
let team: TestTeam;
let otherTeam: TestTeam;
let nextReply: FakeReply = { text: '' };
// A Temporal client that never connects: analyseCall starts no workflow.
const temporal = new Client();

before(async () => {
  pool = await testPool();
  fake = await startFakeChatCompletions({ apiKey: LLM_KEY, reply: () => nextReply });
  config = testConfig({ ANALYSER: 'llm', LLM_BASE_URL: fake.baseUrl, LLM_API_KEY: LLM_KEY, LLM_MODEL: 'gpt-fake-mini' });
  team = await createTestTeam(pool);
  otherTeam = await createTestTeam(pool, { name: 'other team' });
});
after(() => fake.close());

/** An ended call of `who`'s team with the dental script, its turns and a System Note from a webhook. */
async function endedCall(who: TestTeam, contact: { first_name: string; last_name: string }, turns: { role: 'agent' | 'user'; text: string }[]): Promise<string> {
  const script = await insertScript(pool, { teamId: who.teamId, name: SCRIPT.name, definition: SCRIPT });
  const phone = `+1415555${String(Math.floor(Math.random() * 9000) + 1000)}`;
  const row = await insertContact(pool, who.teamId, { phone_number: phone, ...contact });
  const id = randomUUID();
  await insertCall(pool, { id, teamId: who.teamId, contactId: row!.id, scriptId: script.id, type: 'outbound', fromNumber: who.fromNumber, toNumber: phone, scheduledTime: new Date(), progress: 'queued' });
  // Simulated: analysis does not wait for a recording file.
  await setProviderCall(pool, id, 'simulator', `simulator-${id}`);
  await markCallInProgress(pool, id, new Date(Date.now() - 30_000), 'in_conversation');
  await appendConversationTurns(pool, id, 0, turns.map((t) => ({ ...t, at: new Date().toISOString() })) as never);
  await appendSystemNotes(pool, id, 0, [{ at: new Date().toISOString(), kind: 'webhook', text: SECRET_NOTE }]);
  await completeCall(pool, id, { status: 'completed', endReason: 'agent_hangup', endTime: new Date(), progress: 'analysing' });
  return id;
}

const TURNS = [
  { role: 'agent' as const, text: 'Hello Ada, this is the dental office. Can you come on Tuesday at ten?' },
  { role: 'user' as const, text: 'Yes, Tuesday at ten is fine. Call me back after five if anything changes.' },
  { role: 'agent' as const, text: 'Goodbye.' },
];

/** analyseCall as the call workflow runs it: in an activity context, at `attempt`. */
function analyse(callId: string, attempt = 1): Promise<void> {
  const activities = createActivities({ config, pool, logger: createLogger('silent'), temporal });
  return new MockActivityEnvironment({ attempt }).run(activities.analyseCall, { callId });
}

const llmNotes = async (callId: string) => (await findCallById(pool, callId))!.system_notes.filter((n) => n.kind === LLM_ANALYSIS_NOTE_KIND);

test('the model fills call_summary, structured_data and objectives from its JSON answer; its usage is in the System Note', async () => {
  const callId = await endedCall(team, { first_name: 'Ada', last_name: 'Lovelace' }, TURNS);
  nextReply = { text: JSON.stringify(VALID_ANSWER) };
  const asked = fake.requests.length;
  await analyse(callId);
  assert.equal(fake.requests.length, asked + 1);
  const call = (await findCallById(pool, callId))!;
  assert.equal(call.call_summary, VALID_ANSWER.call_summary);
  // The script's keys from the model, the facts from the deterministic analyser beside them.
  assert.equal(call.structured_data?.confirmed, true);
  assert.equal(call.structured_data?.callback_time, 'after 5 pm');
  assert.equal(call.structured_data?.outcome, 'completed');
  assert.equal(call.structured_data?.user_turn_count, 1);
  // In the script's order, whatever order the model gave.
  assert.deepEqual(call.objectives, [
    { objective: 'Confirm the appointment', met: true },
    { objective: 'Learn the best callback time', met: true },
  ]);
  assert.match(call.transcript ?? '', /Tuesday at ten is fine/);
  const [note] = await llmNotes(callId);
  assert.match(note.text, /gpt-fake-mini\) analysed the call/);
  const usage = (note.data as { usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } }).usage;
  assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  // get-call-result's usage counts the analysis' tokens (not a model turn).
  assert.deepEqual(callResultView(call).usage, { model_turns: 0, ...usage });

  // What was asked: the model, JSON matching a schema of the script's keys and objectives.
  const { body, headers } = fake.requests.at(-1)!;
  assert.equal(body.model, 'gpt-fake-mini');
  assert.equal(headers.authorization, `Bearer ${LLM_KEY}`);
  assert.equal(body.response_format.type, 'json_schema');
  const schema = body.response_format.json_schema.schema;
  assert.deepEqual(schema.properties.structured_data.required, ['confirmed', 'callback_time']);
  assert.deepEqual(schema.properties.objectives.items.properties.objective.enum, ['Confirm the appointment', 'Learn the best callback time']);
});

test('the model is sent this call only: no key, no System Notes, no contact field the script does not use, nothing of another team', async () => {
  await endedCall(otherTeam, { first_name: 'Zebediah', last_name: 'Quux' }, [{ role: 'user', text: 'Zebediah speaking about invoice 7731' }]);
  const callId = await endedCall(team, { first_name: 'Ada', last_name: 'Lovelace' }, TURNS);
  nextReply = { text: JSON.stringify(VALID_ANSWER) };
  await analyse(callId);
  const sent = JSON.stringify(fake.requests.at(-1)!.body);
  const call = (await findCallById(pool, callId))!;
  // Its own transcript and the contact field the script uses...
  const prompt = JSON.parse(fake.requests.at(-1)!.body.messages[1].content);
  assert.deepEqual(prompt.contact, { first_name: 'Ada' });
  assert.deepEqual(prompt.transcript, TURNS);
  // ...and nothing else.
  for (const absent of [LLM_KEY, team.apiKey, otherTeam.apiKey, 'Zebediah', 'Quux', 'invoice 7731', SECRET_NOTE, 'whsec_', 'Lovelace', call.to_number!, team.teamId, otherTeam.teamId]) {
    assert.equal(sent.includes(absent), false, `the model was sent ${absent}: ${sent}`);
  }
});

test('an answer that fails validation: the deterministic analyser fills the fields and a System Note says why', async () => {
  for (const [text, why] of [
    ['The call went well.', /did not match the schema \(not JSON/],
    [JSON.stringify({ ...VALID_ANSWER, structured_data: { confirmed: true } }), /structured_data.callback_time: is required/],
    [JSON.stringify({ ...VALID_ANSWER, objectives: [VALID_ANSWER.objectives[0]] }), /did not give each objective once/],
  ] as const) {
    const callId = await endedCall(team, { first_name: 'Ada', last_name: 'Lovelace' }, TURNS);
    nextReply = { text };
    await analyse(callId);
    const call = (await findCallById(pool, callId))!;
    assert.match(call.call_summary ?? '', /^Call to Ada Lovelace with the script "Dental reminder"\./);
    assert.equal(call.structured_data?.outcome, 'completed');
    assert.equal(call.objectives?.length, 2);
    assert.equal(call.progress, 'done');
    const notes = await llmNotes(callId);
    assert.equal(notes.length, 1);
    assert.match(notes[0].text, /could not analyse the call: its answer/);
    assert.match(notes[0].text, why);
    assert.match(notes[0].text, /The deterministic analyser filled the result\./);
  }
});

test('the service answering 500 throughout: earlier attempts fail for the activity to retry, then the deterministic analyser and a System Note', async () => {
  const callId = await endedCall(team, { first_name: 'Ada', last_name: 'Lovelace' }, TURNS);
  nextReply = { status: 500 };
  const asked = fake.requests.length;
  for (let attempt = 1; attempt < FALLBACK_ATTEMPT; attempt++) {
    await assert.rejects(analyse(callId, attempt), (err: unknown) => err instanceof LlmError && err.code === 'server_error' && err.retryable);
    const call = (await findCallById(pool, callId))!;
    assert.equal(call.call_summary, null);
    assert.equal(call.progress, 'analysing');
  }
  await analyse(callId, FALLBACK_ATTEMPT);
  assert.equal(fake.requests.length, asked + FALLBACK_ATTEMPT);
  const call = (await findCallById(pool, callId))!;
  assert.match(call.call_summary ?? '', /^Call to Ada Lovelace/);
  assert.equal(call.progress, 'done');
  const notes = await llmNotes(callId);
  assert.equal(notes.length, 1);
  assert.match(notes[0].text, new RegExp(`its service failed ${FALLBACK_ATTEMPT} time\\(s\\), the last with the model service answered 500`));
  // A retry of the finished activity adds no second note.
  await analyse(callId, FALLBACK_ATTEMPT + 1);
  assert.equal((await llmNotes(callId)).length, 1);
});

test('a refusal no retry helps (401) falls back at once; a call where nothing was said is not sent to the model', async () => {
  const refused = await endedCall(team, { first_name: 'Ada', last_name: 'Lovelace' }, TURNS);
  const wrongKey = createActivities({ config: { ...config, LLM_API_KEY: 'sk-wrong-key-000000000000000' }, pool, logger: createLogger('silent'), temporal });
  await new MockActivityEnvironment({ attempt: 1 }).run(wrongKey.analyseCall, { callId: refused });
  const [note] = await llmNotes(refused);
  assert.match(note.text, /could not analyse the call: the model service answered 401/);
  assert.ok(!note.text.includes('sk-wrong-key'));

  // A refusal cost no tokens: the call's usage stays null.
  assert.equal(callResultView((await findCallById(pool, refused))!).usage, null);

  const silent = await endedCall(team, { first_name: 'Ada', last_name: 'Lovelace' }, []);
  const asked = fake.requests.length;
  await analyse(silent);
  assert.equal(fake.requests.length, asked);
  assert.match((await findCallById(pool, silent))!.call_summary ?? '', /Nothing was said\./);
  assert.deepEqual(await llmNotes(silent), []);
});

test('ANALYSER is deterministic unless set to llm', () => {
  assert.equal(createCallAnalyser(testConfig()).name, 'deterministic');
  assert.equal(createCallAnalyser(config).name, 'llm');
});
