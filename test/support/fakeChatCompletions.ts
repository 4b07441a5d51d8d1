// A fake OpenAI-compatible chat-completions service for tests: a local HTTP server speaking
// POST {baseUrl}/chat/completions as the OpenAI API reference documents it. With `stream: true`
// it answers text/event-stream: `data: {chat.completion.chunk}` events (the role first, then one
// chunk per token of the text, tool calls as `delta.tool_calls[{index, id, type, function}]`
// pieces: the name first, then the arguments in pieces), a last chunk with the finish_reason, a
// usage chunk with empty choices when `stream_options.include_usage` (the other chunks then carry
// `usage: null`), then `data: [DONE]`. Without it, one `chat.completion` body. Errors are
// `{ error: { message, type, param, code } }` with the HTTP status; a request the real service
// would refuse (no model, no messages, a tool not of type function) gets its 400.
//
// It cannot think: `reply` says what it answers to each request. Speeds are realistic when
// asked: the first token after firstTokenMs, then tokensPerSecond. Failure modes: a status
// (500, 429...), a stream cut after N tokens (the connection destroyed, no [DONE]), a slow
// first token, a malformed tool call (arguments are sent as given, valid JSON or not).
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeReply {
  text?: string;
  toolCalls?: { name: string; arguments: string }[];
  /** Answer this HTTP status with the protocol's error body (e.g. 500). */
  status?: number;
  /** The stream stops mid-way after this many tokens: the connection is destroyed, no [DONE]. */
  cutAfterTokens?: number;
  firstTokenMs?: number;
  tokensPerSecond?: number;
  finishReason?: string;
}

export interface FakeChatRequest {
  /** The parsed request JSON. */
  body: any;
  /** Lower-cased header names. */
  headers: Record<string, string>;
}

export interface FakeChatCompletionsOptions {
  reply: (request: FakeChatRequest) => FakeReply | Promise<FakeReply>;
  /** Default for replies that set none: ms before the first token (0). */
  firstTokenMs?: number;
  /** Default for replies that set none: tokens a second after the first (0: no wait). */
  tokensPerSecond?: number;
  /** Then every request must carry `Authorization: Bearer <apiKey>` (else 401). */
  apiKey?: string;
}

export interface FakeChatCompletions {
  /** Such as http://127.0.0.1:PORT/v1. */
  baseUrl: string;
  requests: FakeChatRequest[];
  /** Answers sent whole (a stream through [DONE]). */
  completed: number;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

/** The fake's tokens: each word with the whitespace before it (close enough to a tokenizer for timing and counts). */
export function fakeTokens(text: string): string[] {
  return text.match(/\s*\S+|\s+/g) ?? [];
}

/** Pieces of a tool call's arguments, a few characters each, as a model streams them. */
function argumentPieces(args: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 8) out.push(args.slice(i, i + 8));
  return out;
}

function promptTokens(body: any): number {
  let count = 0;
  for (const m of Array.isArray(body?.messages) ? body.messages : []) count += 4 + fakeTokens(typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content ?? '')).length;
  if (body?.tools) count += fakeTokens(JSON.stringify(body.tools)).length;
  return count;
}

/** Why the real service would refuse this body (400), or undefined. */
function invalidRequest(body: any): { message: string; param: string } | undefined {
  if (typeof body?.model !== 'string' || body.model === '') return { message: 'you must provide a model parameter', param: 'model' };
  if (!Array.isArray(body.messages) || body.messages.length === 0) return { message: "'messages' must contain at least one message", param: 'messages' };
  for (const [i, m] of body.messages.entries()) {
    if (!['system', 'developer', 'user', 'assistant', 'tool'].includes(m?.role)) return { message: `Invalid value for 'role'`, param: `messages[${i}].role` };
    if (m.role === 'tool' && typeof m.tool_call_id !== 'string') return { message: `Missing required parameter: 'messages[${i}].tool_call_id'`, param: `messages[${i}].tool_call_id` };
  }
  for (const [i, t] of (Array.isArray(body.tools) ? body.tools : []).entries()) {
    if (t?.type !== 'function' || typeof t.function?.name !== 'string') return { message: `Invalid value for 'tools[${i}]': expected a function tool`, param: `tools[${i}]` };
  }
  if (body.stream_options !== undefined && body.stream !== true) return { message: 'The stream_options parameter is only allowed when stream is enabled.', param: 'stream_options' };
  return undefined;
}

export async function startFakeChatCompletions(options: FakeChatCompletionsOptions): Promise<FakeChatCompletions> {
  const requests: FakeChatRequest[] = [];
  const sockets = new Set<Socket>();
  let sequence = 0;

  const sendError = (res: http.ServerResponse, status: number, message: string, param: string | null = null) => {
    const kind = ERROR_TYPES[status] ?? { type: status >= 500 ? 'server_error' : 'invalid_request_error', code: null };
    const body = JSON.stringify({ error: { message, type: kind.type, param, code: kind.code } });
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') return sendError(res, 404, `Invalid URL (${req.method} ${url.pathname})`);
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
    let body: any;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      body = undefined;
    }
    // Every request is kept, refused ones too (a test may look at what a refused one carried).
    const request = { body, headers };
    requests.push(request);
    if (options.apiKey !== undefined && headers.authorization !== `Bearer ${options.apiKey}`) {
      return sendError(res, 401, headers.authorization ? 'Incorrect API key provided.' : "You didn't provide an API key.");
    }
    if (body === undefined) return sendError(res, 400, 'We could not parse the JSON body of your request.');
    const invalid = invalidRequest(body);
    if (invalid) return sendError(res, 400, invalid.message, invalid.param);
    const reply = await options.reply(request);
    if (reply.status && reply.status >= 400) {
      return sendError(res, reply.status, reply.status >= 500 ? 'The server had an error while processing your request.' : `Refused with ${reply.status}.`);
    }
    const firstTokenMs = reply.firstTokenMs ?? options.firstTokenMs ?? 0;
    const tokensPerSecond = reply.tokensPerSecond ?? options.tokensPerSecond ?? 0;
    const tokenGapMs = tokensPerSecond > 0 ? 1000 / tokensPerSecond : 0;
    const textTokens = fakeTokens(reply.text ?? '');
    const toolCalls = (reply.toolCalls ?? []).map((call, index) => ({ ...call, index, id: `call_fake${++sequence}` }));
    const completionTokens = textTokens.length + toolCalls.reduce((n, call) => n + 1 + argumentPieces(call.arguments).length, 0);
    const usage = { prompt_tokens: promptTokens(body), completion_tokens: completionTokens, total_tokens: promptTokens(body) + completionTokens };
    const finishReason = reply.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop');
    const id = `chatcmpl-fake${++sequence}`;
    const created = Math.floor(Date.now() / 1000);
    let closed = false;
    res.on('close', () => (closed = true));
    // A wait ends early when the client goes away (a cancelled or timed-out request).
    const wait = (ms: number) =>
      ms > 0 && !closed
        ? new Promise<void>((resolve) => {
            // One listener per wait, removed when the wait ends: a streamed answer waits once a token.
            const done = () => {
              clearTimeout(timer);
              res.off('close', done);
              resolve();
            };
            const timer = setTimeout(done, ms);
            res.once('close', done);
          })
        : Promise.resolve();

    if (body.stream !== true) {
      // The whole generation happens before the body is sent.
      await wait(firstTokenMs + Math.max(0, completionTokens - 1) * tokenGapMs);
      if (closed) return;
      const message = {
        role: 'assistant',
        content: reply.text ?? (toolCalls.length ? null : ''),
        refusal: null,
        ...(toolCalls.length ? { tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })) } : {}),
      };
      const answer = JSON.stringify({ id, object: 'chat.completion', created, model: body.model, choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason }], usage });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) }).end(answer);
      fake.completed++;
      return;
    }

    const includeUsage = body.stream_options?.include_usage === true;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
    let flushed: Promise<void> = Promise.resolve();
    const send = (delta: Record<string, unknown>, finish: string | null = null) => {
      const chunk = { id, object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: 'fp_fake', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...(includeUsage ? { usage: null } : {}) };
      flushed = new Promise((resolve) => res.write(`data: ${JSON.stringify(chunk)}\n\n`, () => resolve()));
    };
    // The connection breaks after what was sent has left (destroying at once would drop it).
    const cut = async () => {
      await flushed;
      res.destroy();
    };
    // Each token is one chunk; the cut comes after cutAfterTokens of them.
    const pieces: Record<string, unknown>[] = [
      ...textTokens.map((token) => ({ content: token })),
      ...toolCalls.flatMap((call) => [
        { tool_calls: [{ index: call.index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] },
        ...argumentPieces(call.arguments).map((piece) => ({ tool_calls: [{ index: call.index, function: { arguments: piece } }] })),
      ]),
    ];
    await wait(firstTokenMs);
    if (closed) return;
    send({ role: 'assistant', content: '', refusal: null });
    for (const [i, piece] of pieces.entries()) {
      if (i > 0) await wait(tokenGapMs);
      if (closed) return;
      if (reply.cutAfterTokens !== undefined && i >= reply.cutAfterTokens) return cut();
      send(piece);
    }
    if (reply.cutAfterTokens !== undefined && pieces.length <= reply.cutAfterTokens) {
      // Cut after the last token: the finish chunk and [DONE] never come.
      return cut();
    }
    send({}, finishReason);
    if (includeUsage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, system_fingerprint: 'fp_fake', choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
    fake.completed++;
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `fake failed: ${String(err)}`);
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fake: FakeChatCompletions = {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    completed: 0,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return fake;
}
