// Turn latency and CPU of calls whose script hands the conversation to a language model (a
// converse step, docs/agents.md), on the real stack: Postgres, a Temporal dev server, the API,
// the worker with every real activity and the media edge (Festival and pocketsphinx) in this
// process. The model is the local fake chat-completions service at a model's pace (the first
// token after 300 ms, then 40 tokens a second), streamed through the real client; the callers
// are werift peers (Opus like Chrome). The fake and the callers run in a child process, so
// neither counts as the service's CPU. Each call: the step's first line, then four answers
// from the caller, three model answers spoken sentence by sentence, and a tool call that ends
// the step (the script says goodbye and hangs up).
//
// Per concurrency level it prints the turn latency at the edge (the caller's speech end → the
// agent's first audio, ConversationEngine.turnLatencies) of the model's turns, p50 and p95,
// and its parts (medians): endpointing (speech end → end detected), recognition (→ text), the
// hand-off (text → the next converseTurn activity running on the edge: the activity's
// completion, the workflow, the pickup), the model's first token (after the turn's activity
// began: near 0 when the edge asked the model early, at the caller's pause or at recognition, docs/agents.md "Latency"),
// the first whole sentence, and synthesis to the first audio frame; how many turns were asked
// early; the CPU of the service per second of call; the load average. Target (issue 29): p50 ≤
// 900 ms at 10 concurrent calls.
//
//   npx tsx bench/converse.ts
//
// Knobs (environment): BENCH_CALLS (default "1,5,10"), BENCH_MIN_TURNS (model turns per level
// at least, default 20), DATABASE_URL / TEMPORAL_ADDRESS (use those instead of starting them).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import { insertScript } from '../src/db/repositories/scripts.js';
import { ChatCompletionsClient } from '../src/llm/chatCompletions.js';
import { freePort } from '../src/localPorts.js';
import { createLogger } from '../src/logging/logger.js';
import type { ConversationEngine, TurnLatency } from '../src/mediaEdge/conversation/engine.js';
import { loadMediaEdgeConfig } from '../src/mediaEdge/server.js';
import { createSpeechEngines } from '../src/mediaEdge/speech/speechEngines.js';
import { startVoiceEdge } from '../src/mediaEdge/voiceEdge.js';
import { callWorkflowId } from '../workflows/contracts.js';
import type { ConverseTurnResult } from '../workflows/converseContracts.js';
import { opusSilence, spokenOpus } from '../test/support/spokenOpus.js';
import { startFakeChatCompletions } from '../test/support/fakeChatCompletions.js';
import { insertTeamWithKey, jsonRequester } from './support/api.js';
import { askChild, BrowserCallers, loadAverage, sleep, type CallerResult, type CallOrder } from './support/browserCallers.js';
import { startBenchCallStack } from './support/callStack.js';
import { connectBenchTemporal, runBenchmark } from './support/environment.js';
import { serviceTicksByPart, TICKS_PER_SECOND } from './support/processCpu.js';
import { median, out, quantile } from './support/stats.js';

const FIRST_TOKEN_MS = 300;
const TOKENS_PER_SECOND = 40;
const TARGET_P50_MS = 900;
/** The agent is done speaking when no packet came for this long (the edge sends nothing while silent). */
const QUIET_MS = 400;

const SCRIPT = {
  name: 'Converse bench',
  steps: [
    {
      id: 'talk',
      type: 'converse',
      instructions: 'You book appointments at the clinic for {{contact.first_name}}. Keep each answer to one or two short sentences.',
      first_line: 'Hello, this is the clinic. When would you like to come in?',
      tools: [
        {
          name: 'book_appointment',
          description: 'Books the appointment once the caller agreed on a day and a time.',
          parameters: { type: 'object', properties: { day: { type: 'string' }, time: { type: 'string' } }, required: ['day', 'time'] },
          next: 'booked',
        },
      ],
    },
    { id: 'booked', type: 'end', text: 'You are booked. Goodbye.' },
  ],
};
/** The model's answers, by the number of its earlier turns in the conversation; then the tool call. */
const MODEL_ANSWERS = ['Monday works well. What time would suit you?', 'We have ten or eleven in the morning. Which do you prefer?', 'Ten it is. Shall I book it for you?'];
const CALLER_ANSWERS = ['I would like to come on Monday.', 'In the morning please.', 'Ten would be good.', 'Yes please.'];

type ToChild = { cmd: 'prepare' } | { cmd: 'calls'; calls: CallOrder[] } | { cmd: 'stop' };
type ToParent = { event: 'prepared'; baseUrl: string } | { event: 'done'; results: CallerResult[] } | { event: 'error'; message: string };

// ------------------------------------------------------------------ the fake model and the callers (child)

async function child(): Promise<void> {
  const send = (m: ToParent) => process.send?.(m);
  let callers: BrowserCallers | undefined;

  process.on('message', (m: ToChild) => {
    void (async () => {
      if (m.cmd === 'prepare') {
        const fake = await startFakeChatCompletions({
          firstTokenMs: FIRST_TOKEN_MS,
          tokensPerSecond: TOKENS_PER_SECOND,
          reply: ({ body }) => {
            const earlier = (body.messages as Array<{ role: string }>).filter((x) => x.role === 'assistant').length - 1;
            const text = MODEL_ANSWERS[earlier];
            return text ? { text } : { toolCalls: [{ name: 'book_appointment', arguments: '{"day":"Monday","time":"10:00"}' }] };
          },
        });
        // Encoded once, sent by every caller: the callers spend no CPU encoding.
        const answers: Buffer[][] = [];
        for (const text of CALLER_ANSWERS) answers.push(await spokenOpus(text));
        callers = new BrowserCallers(answers, opusSilence(), QUIET_MS);
        send({ event: 'prepared', baseUrl: fake.baseUrl });
      } else if (m.cmd === 'calls') {
        const run = callers!;
        send({ event: 'done', results: await Promise.all(m.calls.map((order) => run.call(order))) });
      } else {
        callers?.stop();
        process.exit(0);
      }
    })().catch((err: unknown) => send({ event: 'error', message: (err as Error).stack ?? String(err) }));
  });
}

// ------------------------------------------------------------------ the service (parent)


interface TurnParts {
  total: number;
  endpointing: number;
  recognition: number;
  handoff: number;
  firstToken: number;
  firstSentence: number;
  synthesis: number;
  /** The model was asked this long before the turn's activity began (when the caller's answer was recognised); undefined: asked by the activity. */
  askedEarly: number | undefined;
}

/** The model turns of a call: each engine turn whose first frame a converseTurn's timings name, split in its parts. */
async function modelTurns(client: Awaited<ReturnType<typeof connectBenchTemporal>>['client'], callId: string, turns: readonly TurnLatency[]): Promise<TurnParts[]> {
  const events = (await client.workflow.getHandle(callWorkflowId(callId)).fetchHistory()).events ?? [];
  const converse = new Set<string>();
  const parts: TurnParts[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'converseTurn') converse.add(String(e.eventId));
    const done = e.activityTaskCompletedEventAttributes;
    if (!done || !converse.has(String(done.scheduledEventId)) || !done.result?.payloads?.[0]) continue;
    const result = defaultPayloadConverter.fromPayload<ConverseTurnResult>(done.result.payloads[0]);
    const t = result.timings;
    if (t?.firstAudioMs === undefined || t.firstTokenMs === undefined || t.firstSentenceMs === undefined) continue;
    // The turn whose first frame this activity played (the activity's clock is the engine's).
    if (t.startedAt === undefined) continue;
    const firstFrameAt = t.startedAt + t.firstAudioMs;
    const turn = turns.find((x) => Math.abs(x.firstFrameAt - firstFrameAt) <= 2);
    if (!turn) continue;
    const startedAt = turn.firstFrameAt - t.firstAudioMs;
    parts.push({
      total: turn.turnMs,
      endpointing: turn.endDetectedAt - turn.speechEndedAt,
      recognition: turn.recognisedAt - turn.endDetectedAt,
      handoff: startedAt - turn.recognisedAt,
      firstToken: t.firstTokenMs,
      firstSentence: t.firstSentenceMs - t.firstTokenMs,
      synthesis: t.firstAudioMs - t.firstSentenceMs,
      askedEarly: t.askedEarlyMs,
    });
  }
  return parts;
}

async function main(): Promise<void> {
  const levels = (process.env.BENCH_CALLS ?? '1,5,10').split(',').map(Number);
  const minTurns = Number(process.env.BENCH_MIN_TURNS ?? 20);
  // spawns: node
  const worker = fork(fileURLToPath(import.meta.url), ['child'], { stdio: 'inherit' });
  const { baseUrl } = (await askChild<ToChild, ToParent>(worker, { cmd: 'prepare' }, 'prepared')) as Extract<ToParent, { event: 'prepared' }>;
  const wsUrl = `ws://127.0.0.1:${await freePort()}/ws`;
  const stack = await startBenchCallStack('converse', { MEDIA_EDGE_WS_URL: wsUrl, MEDIA_EDGE_SIP_DOMAIN: 'edge.bench' });
  const { pool, config, temporal, address, api, recordings } = stack;
  const speech = createSpeechEngines(process.env);
  const edge = await startVoiceEdge({
    config: loadMediaEdgeConfig({ MEDIA_EDGE_WS_URL: wsUrl, MEDIA_EDGE_SECRET: config.MEDIA_EDGE_SECRET, API_URL: api.base, MEDIA_EDGE_SIP_DOMAIN: 'edge.bench', LOG_LEVEL: 'silent' }),
    logger: createLogger('warn'),
    speech,
    recordings,
    temporalAddress: address,
    temporalNamespace: config.TEMPORAL_NAMESPACE,
    instanceId: `bench-converse-${process.pid}`,
    llm: new ChatCompletionsClient({ baseUrl, model: 'fake-model', timeoutMs: 30_000 }),
  });
  // Engines leave edge.engines when their call ends: keep each one seen to read its turns.
  const engines = new Map<string, ConversationEngine>();
  const watchEngines = setInterval(() => {
    for (const [callId, engine] of edge.engines) engines.set(callId, engine);
  }, 100);
  const team = await insertTeamWithKey(pool, 'converse bench');
  await pool.query('UPDATE teams SET max_concurrent = 1000 WHERE id = $1', [team.id]);
  const { id: scriptId } = await insertScript(pool, { teamId: team.id, name: SCRIPT.name, definition: SCRIPT });
  const request = jsonRequester(api.base);
  /** The service's CPU seconds by part (the callers' process left out). */
  const serviceCpu = () => Object.fromEntries(Object.entries(serviceTicksByPart(worker.pid)).map(([part, ticks]) => [part, ticks / TICKS_PER_SECOND]));
  const sum = (parts: Record<string, number>) => Object.values(parts).reduce((a, b) => a + b, 0);
  const runCalls = async (n: number) => {
    const orders: CallOrder[] = [];
    for (let i = 0; i < n; i++) {
      const s = await request(team.key, 'POST', '/api/v1/create-web-session', { script_id: scriptId });
      orders.push({ sessionId: s.session_id, startDelayMs: Math.round((i * 3000) / n), bootstrap: { ws_url: s.ws_url, target: s.target, headers: s.headers } });
    }
    const done = (await askChild<ToChild, ToParent>(worker, { cmd: 'calls', calls: orders }, 'done')) as Extract<ToParent, { event: 'done' }>;
    const { rows } = await pool.query<{ call_id: string }>('SELECT call_id FROM web_sessions WHERE id = ANY($1) AND call_id IS NOT NULL', [orders.map((o) => o.sessionId)]);
    return { results: done.results, callIds: rows.map((r) => r.call_id) };
  };

  try {
    await runCalls(1); // warm-up: the JIT, the first handshakes, the engines' first runs
    const idleBefore = sum(serviceCpu());
    await sleep(5_000);
    const idlePerSecond = (sum(serviceCpu()) - idleBefore) / 5;
    out(`converse turns: the fake model at first token ${FIRST_TOKEN_MS} ms, ${TOKENS_PER_SECOND} tokens/s; Festival + pocketsphinx, Opus; ${MODEL_ANSWERS.length} spoken model turns per call; service idle ${(idlePerSecond * 1000).toFixed(0)} ms/s; load ${loadAverage()} (a shared machine: other work ran beside it)`);
    const ms = (v: number) => `${Math.round(v)} ms`;
    for (const calls of levels) {
      const turns: TurnParts[] = [];
      const failed: string[] = [];
      let callSeconds = 0;
      const cpuBefore = serviceCpu();
      const start = performance.now();
      const loads: number[] = [];
      const loadWatch = setInterval(() => loads.push(Number(loadAverage().split(' ')[0])), 2_000);
      do {
        const { results, callIds } = await runCalls(calls);
        for (const r of results) {
          callSeconds += r.seconds;
          if (r.error) failed.push(r.error);
        }
        for (const callId of callIds) turns.push(...(await modelTurns(temporal.client, callId, engines.get(callId)?.turnLatencies ?? [])));
      } while (turns.length < minTurns && failed.length === 0);
      clearInterval(loadWatch);
      const seconds = (performance.now() - start) / 1000;
      const cpuAfter = serviceCpu();
      const cpuPerCallSecond = Math.max(0, sum(cpuAfter) - sum(cpuBefore) - idlePerSecond * seconds) / Math.max(1, callSeconds);
      // By part, idle included (the idle service's CPU is nearly all Temporal's and Postgres's polling).
      const byPart = Object.entries(cpuAfter)
        .map(([part, after]) => [part, ((after - (cpuBefore[part] ?? 0)) * 1000) / Math.max(1, callSeconds)] as const)
        .filter(([, ms]) => ms >= 0.5)
        .sort((a, b) => b[1] - a[1]);
      const totals = turns.map((t) => t.total);
      const part = (key: Exclude<keyof TurnParts, 'askedEarly'>) => `${ms(median(turns.map((t) => t[key])))} (p95 ${ms(quantile(turns.map((t) => t[key]), 0.95))})`;
      const early = turns.flatMap((t) => (t.askedEarly === undefined ? [] : [t.askedEarly]));
      out('');
      out(`${calls} concurrent call${calls === 1 ? '' : 's'} (${seconds.toFixed(0)} s, load ${loadAverage()}, 1-min average while it ran ${(loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length)).toFixed(1)})`);
      if (turns.length) {
        out(`  turn latency (caller's speech end → agent's first audio): p50 ${ms(median(totals))}, p95 ${ms(quantile(totals, 0.95))}, max ${ms(Math.max(...totals))} over ${turns.length} model turns; target p50 ≤ ${TARGET_P50_MS} ms: ${median(totals) <= TARGET_P50_MS ? 'met' : 'missed'}`);
        out(`  parts, median (p95): endpointing ${part('endpointing')}; recognition ${part('recognition')}; hand-off to the next turn ${part('handoff')}; first token ${part('firstToken')} after the turn began; first sentence ${part('firstSentence')}; synthesis to first audio ${part('synthesis')}`);
        out(`  the model asked early (at the caller's pause, or when the answer was recognised) in ${early.length} of ${turns.length} turns${early.length ? `, a median ${ms(median(early))} before the turn began` : ''}`);
      }
      if (failed.length) out(`  failed calls: ${failed.length} (${failed[0]})`);
      out(`  CPU of the service per call: ${(cpuPerCallSecond * 1000).toFixed(0)} ms per second of call = ${(cpuPerCallSecond * 100).toFixed(1)}% of a core (idle subtracted)`);
      out(`  by process, ms per call-second (idle not subtracted): ${byPart.map(([part, ms]) => `${part} ${ms.toFixed(0)}`).join('; ')}`);
    }
  } finally {
    clearInterval(watchEngines);
    worker.send({ cmd: 'stop' } satisfies ToChild);
    await edge.close();
    await speech.close();
    await stack.stop();
  }
}

if (process.argv[2] === 'child') void child();
else runBenchmark(main);
