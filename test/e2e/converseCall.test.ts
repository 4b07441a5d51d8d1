// A converse step end to end through the media edge, in real time: the real API and call
// worker, a Temporal dev server, the real media edge (startVoiceEdge: SIP over WebSocket,
// WebRTC with Opus, Festival and pocketsphinx) whose converse turns stream from the local fake
// chat-completions service (test/support/fakeChatCompletions.ts) through the real client.
// The callers are werift peers (test/support/webrtcPeer.ts, Opus like Chrome) that dial with a
// session minted through the API and answer with festival-made speech once the agent is quiet
// (the edge sends no packets while it is silent), or while it speaks (a barge-in). The fake
// cannot understand speech: it answers each call's turns from a list, found by the script id in
// the system prompt.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ScriptDefinitionInput } from '../../src/domain/scripts/definition.js';
import { ChatCompletionsClient } from '../../src/llm/chatCompletions.js';
import { callResultView } from '../../src/services/callViews.js';
import { createTestTeam, type TestApi, type TestTeam } from '../support/app.js';
import { callResultOrStuck, callRow } from '../support/calls.js';
import { startFakeChatCompletions, type FakeChatCompletions, type FakeReply } from '../support/fakeChatCompletions.js';
import { storeCheckedScript } from '../support/scripts.js';
import { SipTestClient } from '../support/sipClient.js';
import { opusSilence, spokenOpus } from '../support/spokenOpus.js';
import { startVoiceStack, type VoiceStack } from '../support/voiceStack.js';
import { BrowserPeer } from '../support/webrtcPeer.js';

/** The agent is done speaking when no packet came for this long. */
const QUIET_MS = 500;
/** A gap this long between two looks of the caller's loop is this process stalling (a loaded machine), not time it watched. */
const STALL_MS = 250;
/** Frames a late caller clock sends at once to keep up with the wall clock: up to half a second, which the edge's jitter buffer takes without skipping (it skips past 800 ms). */
const MAX_CATCH_UP_FRAMES = 25;

let stack: VoiceStack;
let env: TestWorkflowEnvironment;
let app: TestApi;
let team: TestTeam;
let fake: FakeChatCompletions;
/** The fake's answers, by the script id its system prompt names. */
const replies = new Map<string, FakeReply[]>();

before(async () => {
  // A model's pace: the first token after 300 ms, then 40 tokens a second.
  fake = await startFakeChatCompletions({
    firstTokenMs: 300,
    tokensPerSecond: 40,
    reply: (request) => {
      const scriptId = /\[script (\S+)\]/.exec(String(request.body.messages[0]?.content ?? ''))?.[1] ?? '';
      return replies.get(scriptId)?.shift() ?? { status: 500 };
    },
  });
  stack = await startVoiceStack('converse-call', {}, { webCallDomain: 'edge.converse.test' });
  ({ env, app } = stack);
  await stack.startEdge({ llm: new ChatCompletionsClient({ baseUrl: fake.baseUrl, model: 'fake-model', timeoutMs: 20_000 }) });
  team = await createTestTeam(app.pool);
});

after(async () => {
  await stack?.stop();
  await fake?.close();
});

const TOOLS = [
  {
    name: 'book_appointment',
    description: 'Books the appointment once the caller agreed on a day and a time.',
    parameters: { type: 'object', properties: { day: { type: 'string' }, time: { type: 'string' } }, required: ['day', 'time'] },
    next: 'booked',
    variable: 'answers.booking',
  },
];

function converseScript(name: string, onError?: string): ScriptDefinitionInput {
  return {
    name,
    structured_data: { day: 'answers.booking.day', time: 'answers.booking.time' },
    steps: [
      {
        id: 'talk',
        type: 'converse',
        instructions: 'You book appointments at the clinic. [script {{call.script_id}}]',
        first_line: 'Hello, this is the clinic. When would you like to come in?',
        tools: TOOLS,
        ...(onError ? { on_error: onError } : {}),
      },
      { id: 'booked', type: 'end', text: 'You are booked on {{answers.booking.day}}. Goodbye.' },
      { id: 'sorry', type: 'end', text: 'Sorry, we will call you back. Goodbye.' },
    ],
  };
}

async function storeScript(definition: ScriptDefinitionInput, turns: FakeReply[]): Promise<string> {
  const id = await storeCheckedScript(app.pool, team.teamId, definition);
  replies.set(id, turns);
  return id;
}

const QUIET_FRAME = opusSilence();

/**
 * One caller: dials a web session of `scriptId`, then for each answer waits for the agent's
 * words (`bargeInAfterPackets`: speaks once that many of them came, else once it is quiet) and
 * says it; then waits for the agent's BYE. Returns the call id.
 */
/** The calls' WebRTC handshakes go one after another (three at once on a loaded machine failed ICE once). */
let handshakes: Promise<void> = Promise.resolve();

async function converseByVoice(scriptId: string, answers: Array<{ text: string; bargeInAfterPackets?: number }>): Promise<string> {
  const myTurn = handshakes;
  let connectedNow!: () => void;
  handshakes = new Promise<void>((resolve) => (connectedNow = resolve));
  await myTurn;
  try {
    return await dialAndAnswer(scriptId, answers, connectedNow);
  } finally {
    connectedNow();
  }
}

async function dialAndAnswer(scriptId: string, answers: Array<{ text: string; bargeInAfterPackets?: number }>, connectedNow: () => void): Promise<string> {
  const session = await app.request('POST', '/api/v1/create-web-session', { key: team.apiKey, body: { script_id: scriptId } });
  assert.equal(session.status, 201, session.text);
  const payloads = await Promise.all(answers.map((a) => spokenOpus(a.text)));
  const sip = await SipTestClient.connect(session.json.ws_url);
  const peer = new BrowserPeer('opus', { decode: false });
  let packets = 0;
  let lastPacketAt = 0;
  peer.onPacket(() => {
    packets++;
    lastPacketAt = performance.now();
  });
  let speaking: Buffer[] = [];
  // The caller keeps the wall clock's pace as a browser does: a timer that fires late (this
  // process starved on a loaded machine) sends every frame due since, so the caller's speech
  // does not reach the edge stretched with gaps (a barge-in needs 100 ms of voice in a row).
  let sentUntil = performance.now();
  const clock = setInterval(() => {
    const due = Math.min(MAX_CATCH_UP_FRAMES, Math.floor((performance.now() - sentUntil) / 20));
    if (due >= MAX_CATCH_UP_FRAMES) sentUntil = performance.now();
    else sentUntil += due * 20;
    for (let i = 0; i < due; i++) peer.sendEncoded(speaking.shift() ?? QUIET_FRAME);
  }, 20);
  try {
    const dialog = sip.invite({ target: session.json.target, headers: session.json.headers, sdp: await peer.offer() });
    const ok = await sip.answered(dialog, 20_000);
    assert.equal(ok.status, 200, ok.reason);
    await peer.accept(ok.body);
    await peer.connected(20_000);
    connectedNow();
    const bye = sip.waitFor((m) => m.kind === 'request' && m.method === 'BYE', 60_000, 'the agent hanging up');
    for (const [i, answer] of answers.entries()) {
      const heardBefore = packets;
      let watchingSince = performance.now();
      for (;;) {
        const lookedAt = performance.now();
        await new Promise((r) => setTimeout(r, 20));
        // Packets already waiting on the socket are taken before the agent is judged quiet.
        await new Promise((r) => setImmediate(r));
        const now = performance.now();
        // After a stall of this process (the edge's too), the quiet counts from now.
        if (now - lookedAt > STALL_MS) watchingSince = now;
        const heard = packets - heardBefore;
        if (answer.bargeInAfterPackets !== undefined ? heard >= answer.bargeInAfterPackets : heard > 0 && now - Math.max(lastPacketAt, watchingSince) >= QUIET_MS) break;
      }
      speaking = [...payloads[i]];
      while (speaking.length) await new Promise((r) => setTimeout(r, 20));
    }
    await bye;
    const { rows } = await app.pool.query<{ call_id: string }>('SELECT call_id FROM web_sessions WHERE id = $1', [session.json.session_id]);
    return rows[0].call_id;
  } finally {
    clearInterval(clock);
    await peer.close();
    await sip.close();
  }
}

const transcript = async (callId: string) => (await callRow(app.pool, callId)).conversation.map((t) => `${t.role}: ${t.text}`);

// The three calls run at once (each its own script and caller): the file stays within a minute or so.
describe('converse calls through the media edge', { concurrency: true }, () => {
  test('a converse step books an appointment through a tool, and the script goes on at its next', async () => {
    const scriptId = await storeScript(converseScript('Converse booking'), [
      { text: 'Monday works. What time suits you?' },
      { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Monday","time":"10:00"}' }] },
    ]);
    const callId = await converseByVoice(scriptId, [{ text: 'I would like to come on Monday.' }, { text: 'Ten in the morning please.' }]);
    assert.deepEqual(await callResultOrStuck(app.pool, env.client, callId, 30_000), { callId, status: 'completed', endReason: 'agent_hangup' });
    const lines = await transcript(callId);
    assert.deepEqual(lines.filter((l) => l.startsWith('agent:')), [
      'agent: Hello, this is the clinic. When would you like to come in?',
      'agent: Monday works. What time suits you?',
      'agent: You are booked on Monday. Goodbye.',
    ]);
    assert.equal(lines.filter((l) => l.startsWith('user:')).length, 2, `the caller's two answers: ${lines.join(' | ')}`);
    const row = await callRow(app.pool, callId);
    assert.ok(row.system_notes.some((n) => n.kind === 'converse' && /called book_appointment/.test(n.text)));
    assert.equal(callResultView(row).usage?.model_turns, 2);
  });

  test('the caller barges in mid-sentence: the transcript holds only what was said', async () => {
    const long = 'We have openings on Monday at nine in the morning, on Tuesday at two in the afternoon, and on Thursday at four. Which of these would suit you best?';
    const scriptId = await storeScript(converseScript('Converse barge-in'), [
      { text: long },
      { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Tuesday","time":"14:00"}' }] },
    ]);
    // The second answer starts after one second of the model's long answer.
    const callId = await converseByVoice(scriptId, [{ text: 'Next week please.' }, { text: 'Tuesday is fine.', bargeInAfterPackets: 50 }]);
    assert.deepEqual(await callResultOrStuck(app.pool, env.client, callId, 30_000), { callId, status: 'completed', endReason: 'agent_hangup' });
    const cut = (await transcript(callId)).find((l) => l.startsWith('agent: We have'));
    assert.ok(cut, 'the interrupted answer is in the transcript');
    const said = cut.slice('agent: '.length);
    assert.ok(long.startsWith(said) && said.length < long.length / 2, `only what was said: "${said}"`);
  });

  test("the model's service fails mid-call: the call still ends, failed / provider_error with a System Note", async () => {
    const scriptId = await storeScript(converseScript('Converse failure'), [{ text: 'Monday works. What time suits you?' }, { status: 500 }, { status: 503 }]);
    const callId = await converseByVoice(scriptId, [{ text: 'I would like to come on Monday.' }, { text: 'Ten in the morning please.' }]);
    assert.deepEqual(await callResultOrStuck(app.pool, env.client, callId, 30_000), { callId, status: 'failed', endReason: 'provider_error' });
    const row = await callRow(app.pool, callId);
    const note = row.system_notes.find((n) => n.kind === 'converse');
    assert.match(note?.text ?? '', /the model service failed \(server_error.*the script stops and the call ends/);
    assert.ok((await transcript(callId)).includes('agent: Monday works. What time suits you?'), 'what was said before the failure stays');
  });
});
