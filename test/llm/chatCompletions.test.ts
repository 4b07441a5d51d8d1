// The chat-completions client (src/llm/chatCompletions.ts) against the local fake of the
// protocol (test/support/fakeChatCompletions.ts): streamed text and tool calls put together,
// what goes over the wire, and each failure classified as the retry policies need it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ChatCompletionsClient, LlmError, chatCompletionsClientFromConfig, type ChatCompletionRequest } from '../../src/llm/chatCompletions.js';
import { loadConfig } from '../../src/config/index.js';
import { startFakeChatCompletions, type FakeChatCompletions, type FakeReply } from '../support/fakeChatCompletions.js';

const API_KEY = 'sk-test-0123456789abcdefghijklmnop';
let fake: FakeChatCompletions;
let nextReply: FakeReply = { text: '' };

before(async () => {
  fake = await startFakeChatCompletions({ apiKey: API_KEY, reply: () => nextReply });
});
after(() => fake.close());

const client = (options: Partial<ConstructorParameters<typeof ChatCompletionsClient>[0]> = {}) =>
  new ChatCompletionsClient({ baseUrl: fake.baseUrl, apiKey: API_KEY, model: 'gpt-test-mini', ...options });

const REQUEST: ChatCompletionRequest = {
  messages: [
    { role: 'system', content: 'You book appointments.' },
    { role: 'user', content: 'Can I come on Tuesday?' },
  ],
};

async function llmError(promise: Promise<unknown>): Promise<LlmError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof LlmError, `expected an LlmError, got ${String(err)}`);
    return err;
  }
  assert.fail('the request should have failed');
}

test('a streamed answer: each text delta handed on as it comes, the whole text, the finish reason and the usage chunk', async () => {
  nextReply = { text: 'Tuesday at ten works. Shall I book it?', tokensPerSecond: 50 };
  const deltas: string[] = [];
  let completedAtFirstDelta = -1;
  const before = fake.completed;
  const answer = await client().stream(REQUEST, (delta) => {
    if (deltas.length === 0) completedAtFirstDelta = fake.completed - before;
    deltas.push(delta);
  });
  assert.equal(answer.content, 'Tuesday at ten works. Shall I book it?');
  assert.deepEqual(deltas, ['Tuesday', ' at', ' ten', ' works.', ' Shall', ' I', ' book', ' it?']);
  // The first delta reached the caller while the fake was still sending the rest.
  assert.equal(completedAtFirstDelta, 0);
  assert.equal(answer.finishReason, 'stop');
  assert.deepEqual(answer.toolCalls, []);
  assert.equal(answer.usage.completionTokens, 8);
  assert.ok(answer.usage.promptTokens > 0);
  assert.equal(answer.usage.totalTokens, answer.usage.promptTokens + 8);
});

test('the request on the wire: the model, the messages, the tools as functions, stream_options.include_usage and the bearer key', async () => {
  nextReply = { text: 'Sure.' };
  const tools = [
    {
      name: 'book_appointment',
      description: 'Books the appointment the caller chose.',
      parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'], additionalProperties: false },
    },
  ];
  const messages: ChatCompletionRequest['messages'] = [
    ...REQUEST.messages,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', name: 'check_day', arguments: '{"day":"Tuesday"}' }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"free":true}' },
  ];
  await client().stream({ messages, tools, maxTokens: 200, temperature: 0.2 });
  const { body, headers } = fake.requests.at(-1)!;
  assert.equal(headers.authorization, `Bearer ${API_KEY}`);
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(body.model, 'gpt-test-mini');
  assert.equal(body.stream, true);
  assert.deepEqual(body.stream_options, { include_usage: true });
  assert.equal(body.max_tokens, 200);
  assert.equal(body.temperature, 0.2);
  assert.deepEqual(body.messages, [
    { role: 'system', content: 'You book appointments.' },
    { role: 'user', content: 'Can I come on Tuesday?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'check_day', arguments: '{"day":"Tuesday"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"free":true}' },
  ]);
  assert.deepEqual(body.tools, [{ type: 'function', function: tools[0] }]);
  assert.equal(body.response_format, undefined);
});

test('streamed tool calls are put together from their pieces, in order, with their ids', async () => {
  nextReply = {
    text: 'Let me book that.',
    toolCalls: [
      { name: 'book_appointment', arguments: '{"day":"Tuesday","time":"10:00","name":"Ada Lovelace"}' },
      { name: 'send_confirmation', arguments: '{"channel":"sms"}' },
    ],
  };
  const answer = await client().stream(REQUEST);
  assert.equal(answer.content, 'Let me book that.');
  assert.equal(answer.finishReason, 'tool_calls');
  assert.deepEqual(
    answer.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments })),
    nextReply.toolCalls,
  );
  for (const call of answer.toolCalls) assert.match(call.id, /^call_/);
  assert.notEqual(answer.toolCalls[0].id, answer.toolCalls[1].id);
});

test('a malformed tool call comes back as the model sent it, for the caller to refuse', async () => {
  nextReply = { toolCalls: [{ name: 'book_appointment', arguments: '{"day": "Tuesday", "time": ' }] };
  const answer = await client().stream(REQUEST);
  assert.equal(answer.content, '');
  assert.equal(answer.toolCalls[0].arguments, '{"day": "Tuesday", "time": ');
  assert.throws(() => JSON.parse(answer.toolCalls[0].arguments));
});

test('not streamed: text, tool calls and usage from the body; a JSON schema goes as response_format json_schema', async () => {
  nextReply = { text: '{"summary":"ok"}' };
  const schema = { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'], additionalProperties: false };
  const answer = await client().complete({ ...REQUEST, jsonSchema: { name: 'call_analysis', schema } });
  assert.equal(answer.content, '{"summary":"ok"}');
  assert.equal(answer.finishReason, 'stop');
  assert.ok(answer.usage.totalTokens > 0);
  const { body } = fake.requests.at(-1)!;
  assert.equal(body.stream, undefined);
  assert.equal(body.stream_options, undefined);
  assert.deepEqual(body.response_format, { type: 'json_schema', json_schema: { name: 'call_analysis', schema, strict: true } });

  nextReply = { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Monday"}' }] };
  const tools = await client().complete(REQUEST);
  assert.equal(tools.content, '');
  assert.equal(tools.finishReason, 'tool_calls');
  assert.deepEqual(tools.toolCalls.map((c) => [c.name, c.arguments]), [['book_appointment', '{"day":"Monday"}']]);
});

test('a 500 is a retryable server_error with the status, streamed or not', async () => {
  nextReply = { status: 500 };
  for (const send of [() => client().stream(REQUEST), () => client().complete(REQUEST)]) {
    const err = await llmError(send());
    assert.equal(err.code, 'server_error');
    assert.equal(err.status, 500);
    assert.equal(err.retryable, true);
    assert.match(err.message, /500: The server had an error/);
  }
});

test('401 and 403 are not retryable; 429 is, with its Retry-After; another 4xx is a bad_request; the key never in the message', async () => {
  const wrongKey = 'sk-wrong-9876543210zyxwvutsrqpon';
  const unauthorized = await llmError(client({ apiKey: wrongKey }).stream(REQUEST));
  assert.deepEqual([unauthorized.code, unauthorized.status, unauthorized.retryable], ['unauthorized', 401, false]);
  assert.ok(!unauthorized.message.includes(wrongKey));
  const noKey = await llmError(client({ apiKey: undefined }).complete(REQUEST));
  assert.equal(noKey.code, 'unauthorized');
  assert.equal(fake.requests.at(-1)?.headers.authorization, undefined);

  nextReply = { status: 403 };
  const forbidden = await llmError(client().stream(REQUEST));
  assert.deepEqual([forbidden.code, forbidden.retryable], ['forbidden', false]);
  nextReply = { status: 429 };
  const limited = await llmError(client().stream(REQUEST));
  assert.deepEqual([limited.code, limited.status, limited.retryable], ['rate_limited', 429, true]);
  nextReply = { status: 404 };
  const unknownModel = await llmError(client().complete(REQUEST));
  assert.deepEqual([unknownModel.code, unknownModel.status, unknownModel.retryable], ['bad_request', 404, false]);
  // A request the protocol refuses (a tool call answer without its id) is the fake's own 400.
  const refused = await llmError(client().stream({ messages: [{ role: 'tool', content: 'x' } as never] }));
  assert.deepEqual([refused.code, refused.status, refused.retryable], ['bad_request', 400, false]);
  assert.match(refused.message, /tool_call_id/);
});

test('a stream cut midway (no [DONE]) is a retryable stream_cut, after the deltas that came', async () => {
  nextReply = { text: 'one two three four five six', cutAfterTokens: 3 };
  const deltas: string[] = [];
  const err = await llmError(client().stream(REQUEST, (d) => deltas.push(d)));
  assert.equal(err.code, 'stream_cut');
  assert.equal(err.retryable, true);
  assert.deepEqual(deltas, ['one', ' two', ' three']);

  nextReply = { text: 'all of it', cutAfterTokens: 3 };
  const atTheEnd = await llmError(client().stream(REQUEST));
  assert.equal(atTheEnd.code, 'stream_cut');
});

test('a slow first token ends at the first-token timeout; a slow stream at the whole timeout; both retryable', async () => {
  nextReply = { text: 'late', firstTokenMs: 30_000 };
  const slowFirst = await llmError(client({ firstTokenTimeoutMs: 100, timeoutMs: 60_000 }).stream(REQUEST));
  assert.deepEqual([slowFirst.code, slowFirst.retryable], ['first_token_timeout', true]);

  nextReply = { text: 'a b c d e f g h', tokensPerSecond: 1 };
  const deltas: string[] = [];
  const slowStream = await llmError(client({ firstTokenTimeoutMs: 100, timeoutMs: 400 }).stream(REQUEST, (d) => deltas.push(d)));
  assert.deepEqual([slowStream.code, slowStream.retryable], ['timeout', true]);
  // The first token came in time: only the whole request was too slow.
  assert.equal(deltas[0], 'a');

  nextReply = { text: 'late', firstTokenMs: 30_000 };
  const slowBody = await llmError(client({ timeoutMs: 100 }).complete(REQUEST));
  assert.equal(slowBody.code, 'timeout');
});

test("the caller's abort is not retryable; a service that cannot be reached is a retryable network error", async () => {
  nextReply = { text: 'never heard', firstTokenMs: 30_000 };
  const controller = new AbortController();
  const pending = client().stream({ ...REQUEST, signal: controller.signal });
  setTimeout(() => controller.abort(), 50);
  const aborted = await llmError(pending);
  assert.deepEqual([aborted.code, aborted.retryable], ['aborted', false]);

  const closed = await startFakeChatCompletions({ reply: () => ({ text: '' }) });
  const baseUrl = closed.baseUrl;
  await closed.close();
  const unreachable = await llmError(new ChatCompletionsClient({ baseUrl, model: 'm' }).stream(REQUEST));
  assert.deepEqual([unreachable.code, unreachable.retryable], ['network', true]);
});

test('from config: no model unless a key is set or the base URL is not the vendor’s; the timeout in seconds', async () => {
  assert.equal(chatCompletionsClientFromConfig(loadConfig({})), undefined);
  const hosted = chatCompletionsClientFromConfig(loadConfig({ LLM_API_KEY: API_KEY }));
  assert.equal(hosted?.baseUrl, 'https://api.openai.com/v1');
  assert.equal(hosted?.model, 'gpt-4.1-mini');
  // A server of one's own without a key: requests go without Authorization.
  const selfHosted = chatCompletionsClientFromConfig(loadConfig({ LLM_BASE_URL: fake.baseUrl.replace('/v1', '/v1/'), LLM_MODEL: 'llama-3.1-8b' }));
  assert.ok(selfHosted);
  assert.equal(selfHosted.baseUrl, fake.baseUrl);
  // The fake here wants a key: the 401 shows that none was sent.
  assert.equal((await llmError(selfHosted.complete(REQUEST))).code, 'unauthorized');
  assert.equal(fake.requests.at(-1)?.body.model, 'llama-3.1-8b');
  // Logging the client shows no key.
  assert.ok(!JSON.stringify(hosted).includes(API_KEY));
});

test('bad model settings stop start-up naming the variable', () => {
  for (const [env, message] of [
    [{ LLM_BASE_URL: 'api.openai.com' }, 'LLM_BASE_URL must be a URL (http: or https:)'],
    [{ LLM_TIMEOUT_SECONDS: '0' }, 'LLM_TIMEOUT_SECONDS must be positive'],
    [{ LLM_TIMEOUT_SECONDS: '601' }, 'LLM_TIMEOUT_SECONDS must be at most 600'],
    [{ LLM_MODEL: 'two words' }, 'LLM_MODEL must be a model name without spaces'],
    [{ LLM_API_KEY: 'sk two' }, 'LLM_API_KEY must be one word without spaces'],
    [{ ANALYSER: 'gpt' }, 'ANALYSER must be deterministic or llm'],
    [{ ANALYSER: 'llm' }, 'ANALYSER llm needs a model: set LLM_API_KEY (or LLM_BASE_URL to a server of your own)'],
  ] as const) {
    assert.throws(() => loadConfig(env), { message: `Invalid configuration: ${message}` }, JSON.stringify(env));
  }
  assert.equal(loadConfig({ ANALYSER: 'llm', LLM_API_KEY: API_KEY }).ANALYSER, 'llm');
  assert.equal(loadConfig({}).ANALYSER, 'deterministic');
  assert.equal(loadConfig({}).LLM_TIMEOUT_SECONDS, 30);
});
