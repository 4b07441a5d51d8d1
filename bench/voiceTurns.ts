// Turn latency and CPU of browser calls by voice, on the real stack: Postgres, a Temporal dev
// server, the API, the worker with every real activity and the media edge (startVoiceEdge
// with Festival and pocketsphinx) in this process, as `npm start` runs them. The callers
// are werift peers (test/support/webrtcPeer.ts, Opus like Chrome) in a child process: each
// dials the edge with a session minted through the API, waits for the agent's prompt to end
// (the edge sends no packets while it is silent), answers with festival-made speech encoded
// ahead, and times its turns.
//
// Per concurrency level it prints:
//   - turn latency at the edge: the caller's speech end → the first frame of the agent's next
//     audio (ConversationEngine.turnLatencies), p50 and p95;
//   - the same seen by the caller: the end of its sent speech → the first packet of the
//     agent's next audio;
//   - where the time goes, per turn (medians): endpointing hangover + recognition, the
//     askCaller completion reaching Temporal, the workflow between two voice activities
//     (its tasks and the transcript write), the edge picking the next activity up, and
//     synthesis to the first frame (from the engine's clock and the workflow history);
//   - the delay of this process's event loop, which the edge's 20 ms clock shares with the
//     API and the activities, and of the callers' process; what the edge's jitter buffer
//     did with the callers' packets (from its per-call statistics);
//   - CPU of the service (this process and its descendants: Temporal, Postgres, Festival,
//     pocketsphinx; the callers' process excluded) from /proc, by part, and per call: the
//     level's CPU above the idle baseline divided by the calls' summed duration; and the
//     load average while the level ran.
// After the listed levels it goes on in steps of 5 while p95 stays within 1.5 s (up to
// BENCH_MAX_CALLS), then prints the highest level that met it.
//
//   npx tsx bench/voiceTurns.ts
//   npx tsx bench/voiceTurns.ts --band telephone
//
// `--band telephone`: the callers are on a phone line. Their answers are band-limited to
// 300–3400 Hz and round-tripped through 8 kHz G.711 μ-law (test/support/telephoneBand.ts)
// before the browser-like peer encodes them, and the edge hears each call as a telephone-band
// call (speech.forCall's band), so STT_TELEPHONE_ENGINES chooses its recognisers (by default
// Whisper for every expect). The script gets a free-text question too, and the turns are
// reported per kind of answer (constrained: yes/no and digits; free), against issue 24's
// targets: constrained p50 ≤ 450 ms at 10 calls, free speech with Whisper p50 ≤ 900 ms.
//
// Beside a campaign: bench/campaignScale.ts starts this bench (bench/support/voiceBeside.ts)
// with its service's settings, so these calls' workflows run on the campaign's worker. It
// then runs BENCH_CALLS' first level on each order of the campaign bench: with no burst,
// rounds until it has BENCH_MIN_TURNS turns; during a burst, rounds until the campaign
// bench says the burst has started. It reports each.
//
// Knobs (environment): BENCH_CALLS (default "1,5,10,15,20"), BENCH_MAX_CALLS (default 40),
// BENCH_MIN_TURNS (turns per level at least, default 20; a level runs rounds of calls until
// it has them), DATABASE_URL / TEMPORAL_ADDRESS (use those instead of starting them).
import { fork } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import pino from 'pino';
import { insertScript } from '../src/db/repositories/scripts.js';
import { freePort } from '../src/localPorts.js';
import type { ConversationEngine, TurnLatency } from '../src/mediaEdge/conversation/engine.js';
import { loadMediaEdgeConfig } from '../src/mediaEdge/server.js';
import type { AudioBand } from '../src/mediaEdge/media/channel.js';
import { createSpeechEngines, type SpeechEngines } from '../src/mediaEdge/speech/speechEngines.js';
import { startVoiceEdge } from '../src/mediaEdge/voiceEdge.js';
import { callWorkflowId } from '../workflows/contracts.js';
import { opusSilence, spokenOpus } from '../test/support/spokenOpus.js';
import { overTelephone } from '../test/support/telephoneBand.js';
import { ACCOUNT_LINE_ANSWERS, ACCOUNT_LINE_SCRIPT } from './support/accountLineScript.js';
import { insertTeamWithKey, jsonRequester } from './support/api.js';
import { askChild, BrowserCallers, loadAverage, sleep, type CallerResult, type CallOrder } from './support/browserCallers.js';
import { startBenchCallStack } from './support/callStack.js';
import { connectBenchTemporal, runBenchmark } from './support/environment.js';
import { BESIDE_CAMPAIGN_ENV, type BesideOrder, type BesideReport, type VoiceLevelSummary } from './support/voiceBeside.js';
import { serviceTicksByPart, TICKS_PER_SECOND } from './support/processCpu.js';
import { median, out, quantile } from './support/stats.js';

const SCRIPT = ACCOUNT_LINE_SCRIPT;
const ANSWERS = ACCOUNT_LINE_ANSWERS;

/** `--band telephone`: callers on a phone line (above). */
const BAND: AudioBand = process.argv.includes('--band') && process.argv[process.argv.indexOf('--band') + 1] === 'telephone' ? 'telephone' : 'wideband';
/** On the phone a free-text question comes last but one, so Whisper's free-speech turn is measured too. */
const FREE_ASK = { id: 'ask_reason', type: 'ask', question: 'What is the reason for your call?', variable: 'answers.reason', expect: 'text' };
const FREE_ANSWER = 'I would like to book an appointment for next week.';
const BAND_SCRIPT = BAND === 'telephone' ? { ...SCRIPT, steps: [...SCRIPT.steps.slice(0, 4), FREE_ASK, ...SCRIPT.steps.slice(4)] } : SCRIPT;
const BAND_ANSWERS = BAND === 'telephone' ? [...ANSWERS, FREE_ANSWER] : ANSWERS;
/** The kind of each answer, in order: a constrained one (yes/no, digits) or free speech. */
const ANSWER_KINDS = BAND_SCRIPT.steps.filter((s) => s.type === 'ask').map((s) => ((s as { expect?: string }).expect === 'text' ? 'free' : 'constrained'));
/** The agent's audio has ended when no packet came for this long (the edge sends nothing while silent). */
const PROMPT_END_QUIET_MS = 400;
/** Caller turns longer than this are counted too: an answer the agent did not make out (its reprompt comes 8 s later), or an overload. */
const LONG_TURN_MS = 5_000;
const TARGET_P95_MS = 1_500;

type ToChild = { cmd: 'prepare'; answers: string[]; band: AudioBand } | { cmd: 'calls'; calls: CallOrder[] } | { cmd: 'stop' };
type ToParent = { event: 'prepared' } | { event: 'done'; results: CallerResult[]; loopDelayP99Ms: number } | { event: 'error'; message: string };

// ------------------------------------------------------------------ the callers (child)

async function callers(): Promise<void> {
  const send = (m: ToParent) => process.send?.(m);
  let callersOfRun: BrowserCallers | undefined;

  process.on('message', (m: ToChild) => {
    void (async () => {
      if (m.cmd === 'prepare') {
        // Encoded once, sent by every caller: the callers' process spends no CPU encoding.
        const answers: Buffer[][] = [];
        // A phone caller's voice reaches the peer as a phone line carries it.
        for (const text of m.answers) answers.push(await spokenOpus(text, m.band === 'telephone' ? overTelephone : undefined));
        callersOfRun = new BrowserCallers(answers, opusSilence(), PROMPT_END_QUIET_MS);
        send({ event: 'prepared' });
      } else if (m.cmd === 'calls') {
        const run = callersOfRun!;
        // The callers' own event loop: when it stalls, their packets leave in bursts.
        const loop = monitorEventLoopDelay({ resolution: 5 });
        loop.enable();
        const results = await Promise.all(m.calls.map((order) => run.call(order)));
        loop.disable();
        send({ event: 'done', results, loopDelayP99Ms: loop.percentile(99) / 1e6 });
      } else {
        callersOfRun?.stop();
        process.exit(0);
      }
    })().catch((err: unknown) => send({ event: 'error', message: (err as Error).stack ?? String(err) }));
  });
}

// ------------------------------------------------------------------ CPU from /proc

const total = (parts: Record<string, number>) => Object.values(parts).reduce((a, b) => a + b, 0);


// ------------------------------------------------------------------ the service (parent)

/** The jitter buffers' statistics of the calls that ended, summed (the edge logs them per call). */
const inbound = { received: 0, skipped: 0, underruns: 0 };

/** The edge's logger: warnings to stderr; each call's closing statistics added to `inbound`. */
const edgeLogger = pino(
  { level: 'info', base: undefined },
  {
    write(line: string) {
      const entry = JSON.parse(line) as { level: number; msg?: string; jitter?: { received: number; skipped: number; underruns: number } };
      if (entry.msg === 'media closed' && entry.jitter) {
        inbound.received += entry.jitter.received;
        inbound.skipped += entry.jitter.skipped;
        inbound.underruns += entry.jitter.underruns;
      } else if (entry.level >= 40) process.stderr.write(line);
    },
  },
);


/** Where one turn's time went, ms (from the engine's clock and the workflow history). */
interface TurnProfile {
  total: number;
  recognition: number;
  completion: number;
  workflow: number;
  pickup: number;
  firstFrame: number;
}

const eventMs = (e: { eventTime?: { seconds?: unknown; nanos?: number | null } | null }) => Number(e.eventTime!.seconds) * 1000 + (e.eventTime!.nanos ?? 0) / 1e6;

/**
 * Each turn of a call split in five: speech end → text (hangover + recognition), text → the
 * askCaller's completion in the history, completion → the next voice activity scheduled
 * (workflow tasks, the transcript write), scheduled → started on the edge, started → first frame.
 */
async function profileCall(
  client: Awaited<ReturnType<typeof connectBenchTemporal>>['client'],
  callId: string,
  turns: readonly TurnLatency[],
): Promise<{ profiles: TurnProfile[]; unheard: number }> {
  const events = (await client.workflow.getHandle(callWorkflowId(callId)).fetchHistory()).events ?? [];
  const voice = new Map<string, { name: string; scheduled: number; started?: number; completed?: number; utterance?: boolean }>();
  const order: string[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s && (s.activityType?.name === 'askCaller' || s.activityType?.name === 'speakToCaller')) {
      voice.set(String(e.eventId), { name: s.activityType.name, scheduled: eventMs(e) });
      order.push(String(e.eventId));
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started && voice.has(String(started.scheduledEventId))) voice.get(String(started.scheduledEventId))!.started = eventMs(e);
    const done = e.activityTaskCompletedEventAttributes;
    if (done && voice.has(String(done.scheduledEventId))) {
      const activity = voice.get(String(done.scheduledEventId))!;
      activity.completed = eventMs(e);
      const result = done.result?.payloads?.[0] ? defaultPayloadConverter.fromPayload<{ kind?: string }>(done.result.payloads[0]) : undefined;
      activity.utterance = result?.kind === 'utterance';
    }
  }
  const activities = order.map((id) => voice.get(id)!);
  const unheard = activities.filter((a) => a.name === 'askCaller' && a.completed !== undefined && !a.utterance).length;
  const profiles: TurnProfile[] = [];
  let turn = 0;
  for (let i = 0; i + 1 < activities.length && turn < turns.length; i++) {
    const answered = activities[i];
    const next = activities[i + 1];
    if (!answered.utterance || answered.completed === undefined || next.started === undefined) continue;
    const t = turns[turn++];
    profiles.push({
      total: t.turnMs,
      recognition: t.recognisedAt - t.speechEndedAt,
      completion: answered.completed - t.recognisedAt,
      workflow: next.scheduled - answered.completed,
      pickup: next.started - next.scheduled,
      firstFrame: t.firstFrameAt - next.started,
    });
  }
  return { profiles, unheard };
}

interface LevelResult {
  calls: number;
  /** Calls made, over the level's rounds. */
  callsRun: number;
  edgeTurns: number[];
  clientTurns: number[];
  /** The same turns by the kind of answer that ended them. */
  edgeByKind: Record<string, number[]>;
  clientByKind: Record<string, number[]>;
  /** askCaller results that were silence: answers the edge did not make out. */
  unheard: number;
  failed: string[];
  profiles: TurnProfile[];
  cpuMsPerSecond: Record<string, number>;
  /** CPU ms above the idle baseline per second of call. */
  cpuPerCallSecond: number;
  seconds: number;
  load: string;
  /** This process's event loop (the edge's 20 ms clock shares it with the API and the activities): p99 and max delay, ms. */
  loopDelay: { p99: number; max: number };
  /** The callers' process's event loop delay p99 (worst round), ms. */
  callersLoopP99: number;
  /** The callers' packets the edge's jitter buffers received, skipped (over their depth after a stall) and ran dry on. */
  inbound: { received: number; skipped: number; underruns: number };
}

async function main(): Promise<void> {
  const levels = (process.env.BENCH_CALLS ?? '1,5,10,15,20').split(',').map(Number);
  const maxCalls = Number(process.env.BENCH_MAX_CALLS ?? 40);
  const minTurns = Number(process.env.BENCH_MIN_TURNS ?? 20);
  const wsUrl = `ws://127.0.0.1:${await freePort()}/ws`;
  // Beside a campaign, its worker runs the calls' workflows and its analysis reads the recordings.
  const beside = process.env[BESIDE_CAMPAIGN_ENV] === '1';
  const joined: Record<string, string> = beside ? { TEMPORAL_TASK_QUEUE: process.env.TEMPORAL_TASK_QUEUE!, RECORDINGS_DIR: process.env.RECORDINGS_DIR! } : {};
  const stack = await startBenchCallStack('voice-turns', { MEDIA_EDGE_WS_URL: wsUrl, MEDIA_EDGE_SIP_DOMAIN: 'edge.bench', ...joined }, { workers: !beside });
  const { pool, config, temporal, address, api, recordings } = stack;
  const engines0 = createSpeechEngines(process.env);
  // The bench's callers are WebRTC peers; on the phone band the edge is told so, as a phone channel would.
  const speech: SpeechEngines = {
    synthesizer: engines0.synthesizer,
    recognizer: engines0.recognizer,
    recognizers: engines0.recognizers,
    forCall: (onFailover) => engines0.forCall(onFailover, { band: BAND }),
    warmUp: () => engines0.warmUp(),
    close: () => engines0.close(),
  };
  const edge = await startVoiceEdge({
    config: loadMediaEdgeConfig({ MEDIA_EDGE_WS_URL: wsUrl, MEDIA_EDGE_SECRET: config.MEDIA_EDGE_SECRET, API_URL: api.base, MEDIA_EDGE_SIP_DOMAIN: 'edge.bench', LOG_LEVEL: 'silent' }),
    logger: edgeLogger,
    speech,
    recordings,
    temporalAddress: address,
    temporalNamespace: config.TEMPORAL_NAMESPACE,
    instanceId: `bench-${process.pid}`,
  });
  // Engines leave edge.engines when their call ends: keep each one seen to read its turns.
  const engines = new Map<string, ConversationEngine>();
  const watchEngines = setInterval(() => {
    for (const [callId, engine] of edge.engines) engines.set(callId, engine);
  }, 100);

  const team = await insertTeamWithKey(pool, 'voice turns bench');
  await pool.query('UPDATE teams SET max_concurrent = 1000 WHERE id = $1', [team.id]);
  const { id: scriptId } = await insertScript(pool, { teamId: team.id, name: BAND_SCRIPT.name, definition: BAND_SCRIPT });
  const request = jsonRequester(api.base);
  // spawns: node
  const child = fork(fileURLToPath(import.meta.url), ['callers'], { stdio: 'inherit' });

  try {
    await askChild<ToChild, ToParent>(child, { cmd: 'prepare', answers: BAND_ANSWERS, band: BAND }, 'prepared');

    const callersLoopP99: number[] = [];
    /** N calls at once, their starts spread over one turn so their turns do not fall in step. */
    const runCalls = async (n: number): Promise<{ results: CallerResult[]; callIds: string[] }> => {
      const orders: CallOrder[] = [];
      for (let i = 0; i < n; i++) {
        const s = await request(team.key, 'POST', '/api/v1/create-web-session', { script_id: scriptId });
        orders.push({ sessionId: s.session_id, startDelayMs: Math.round((i * 4000) / n), bootstrap: { ws_url: s.ws_url, target: s.target, headers: s.headers } });
      }
      const answer = (await askChild<ToChild, ToParent>(child, { cmd: 'calls', calls: orders }, 'done')) as Extract<ToParent, { event: 'done' }>;
      const { rows } = await pool.query<{ call_id: string }>('SELECT call_id FROM web_sessions WHERE id = ANY($1) AND call_id IS NOT NULL', [orders.map((o) => o.sessionId)]);
      callersLoopP99.push(answer.loopDelayP99Ms);
      return { results: answer.results, callIds: rows.map((r) => r.call_id) };
    };

    // Warm-up, not counted: the JIT, werift's first handshakes, the recogniser's first runs.
    await runCalls(2);
    const idleBefore = serviceTicksByPart(child.pid);
    const idleStart = performance.now();
    await sleep(5_000);
    const idleSeconds = (performance.now() - idleStart) / 1000;
    const idle = serviceTicksByPart(child.pid);
    const idleMsPerSecond = ((total(idle) - total(idleBefore)) * (1000 / TICKS_PER_SECOND)) / idleSeconds;

    const heardBy = [...new Set(Object.values(speech.recognizers[BAND]))].join(', ');
    out(`voice turns: ${ANSWER_KINDS.length} answered asks per call, Opus, ${BAND} band, Festival + ${heardBy} (per expect: ${Object.entries(speech.recognizers[BAND]).map(([e, r]) => `${e} ${r}`).join(', ')}); service idle ${idleMsPerSecond.toFixed(0)} ms/s; load ${loadAverage()}`);
    /** N calls at once, in rounds while `more` says so (at least one). */
    const measureLevel = async (calls: number, more: (level: LevelResult) => boolean): Promise<LevelResult> => {
      const level: LevelResult = { calls, callsRun: 0, edgeTurns: [], clientTurns: [], edgeByKind: {}, clientByKind: {}, unheard: 0, failed: [], profiles: [], cpuMsPerSecond: {}, cpuPerCallSecond: 0, seconds: 0, load: '', loopDelay: { p99: 0, max: 0 }, callersLoopP99: 0, inbound: { ...inbound } };
      callersLoopP99.length = 0;
      const loop = monitorEventLoopDelay({ resolution: 5 });
      loop.enable();
      const before = serviceTicksByPart(child.pid);
      const start = performance.now();
      const loads: number[] = [];
      const loadWatch = setInterval(() => loads.push(Number(loadAverage().split(' ')[0])), 2_000);
      let callSeconds = 0;
      do {
        const { results: callers, callIds } = await runCalls(calls);
        level.callsRun += calls;
        const byKind = (into: Record<string, number[]>, turns: number[]) => turns.forEach((t, i) => (into[ANSWER_KINDS[i] ?? 'other'] ??= []).push(t));
        for (const r of callers) {
          level.clientTurns.push(...r.turnsMs);
          byKind(level.clientByKind, r.turnsMs);
          callSeconds += r.seconds;
          if (r.error) level.failed.push(r.error);
        }
        for (const callId of callIds) {
          const turns = engines.get(callId)?.turnLatencies ?? [];
          level.edgeTurns.push(...turns.map((t) => t.turnMs));
          byKind(level.edgeByKind, turns.map((t) => t.turnMs));
          const { profiles, unheard } = await profileCall(temporal.client, callId, turns);
          level.profiles.push(...profiles);
          level.unheard += unheard;
        }
      } while (more(level));
      clearInterval(loadWatch);
      loop.disable();
      level.loopDelay = { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 };
      level.callersLoopP99 = Math.max(...callersLoopP99);
      level.inbound = { received: inbound.received - level.inbound.received, skipped: inbound.skipped - level.inbound.skipped, underruns: inbound.underruns - level.inbound.underruns };
      level.seconds = (performance.now() - start) / 1000;
      const after = serviceTicksByPart(child.pid);
      for (const part of Object.keys(after)) level.cpuMsPerSecond[part] = ((after[part] - (before[part] ?? 0)) * (1000 / TICKS_PER_SECOND)) / level.seconds;
      const cpuMs = Object.values(level.cpuMsPerSecond).reduce((a, b) => a + b, 0) * level.seconds;
      level.cpuPerCallSecond = Math.max(0, cpuMs - idleMsPerSecond * level.seconds) / Math.max(1, callSeconds);
      level.load = `${loadAverage()} (1-min average while it ran: ${(loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length)).toFixed(1)})`;
      return level;
    };
    const needsTurns = (level: LevelResult) => level.edgeTurns.length < minTurns;

    if (beside) {
      await besideCampaign(levels[0], measureLevel);
      return;
    }
    const results: LevelResult[] = [];
    const meets = (r: LevelResult) => r.edgeTurns.length > 0 && r.clientTurns.length > 0 && quantile(r.edgeTurns, 0.95) <= TARGET_P95_MS && quantile(r.clientTurns, 0.95) <= TARGET_P95_MS && r.failed.length === 0;
    for (let i = 0; i < levels.length; i++) {
      const level = await measureLevel(levels[i], needsTurns);
      results.push(level);
      report(level);
      // Past the listed levels, go on while the target holds.
      if (i === levels.length - 1 && meets(level) && levels[i] + 5 <= maxCalls) levels.push(levels[i] + 5);
    }

    const meeting = results.filter(meets);
    out('');
    out(`highest level with p95 turn latency ≤ ${TARGET_P95_MS} ms (edge and caller): ${meeting.length ? Math.max(...meeting.map((r) => r.calls)) : 'none'} concurrent calls`);
  } finally {
    clearInterval(watchEngines);
    child.send({ cmd: 'stop' } satisfies ToChild);
    await edge.close();
    await speech.close();
    await stack.stop();
  }
}

/**
 * Driven by bench/campaignScale.ts (bench/support/voiceBeside.ts): ready once warmed up; then,
 * per `level` order, rounds of calls until it has `minTurns` turns, or until `stop`.
 */
async function besideCampaign(calls: number, measureLevel: (calls: number, more: (level: LevelResult) => boolean) => Promise<LevelResult>): Promise<void> {
  const send = (m: BesideReport) => process.send!(m);
  const orders: BesideOrder[] = [];
  let wake: (() => void) | undefined;
  let stopped = false;
  process.on('message', (m: BesideOrder) => {
    if (m.cmd === 'stop') stopped = true;
    else orders.push(m);
    wake?.();
  });
  const nextOrder = async (): Promise<BesideOrder> => {
    while (orders.length === 0) await new Promise<void>((r) => (wake = r));
    return orders.shift()!;
  };
  try {
    send({ event: 'ready' });
    for (let order = await nextOrder(); order.cmd === 'level'; order = await nextOrder()) {
      stopped = false;
      const minTurns = order.minTurns;
      const level = await measureLevel(calls, minTurns === undefined ? () => !stopped : (l) => l.edgeTurns.length < minTurns);
      report(level, `beside the campaign, ${minTurns === undefined ? 'during the burst' : 'no burst'}`);
      send({ event: 'level', summary: summarize(level) });
    }
  } catch (err) {
    send({ event: 'error', message: (err as Error).stack ?? String(err) });
    throw err;
  } finally {
    process.removeAllListeners('message');
    process.disconnect?.();
  }
}

function summarize(r: LevelResult): VoiceLevelSummary {
  const q = (xs: number[], p: number) => (xs.length ? quantile(xs, p) : NaN);
  const workflow = r.profiles.map((p) => p.workflow);
  return {
    calls: r.calls,
    callsRun: r.callsRun,
    turns: r.edgeTurns.length,
    edgeP50: q(r.edgeTurns, 0.5),
    edgeP95: q(r.edgeTurns, 0.95),
    callerP50: q(r.clientTurns, 0.5),
    callerP95: q(r.clientTurns, 0.95),
    workflowP50: q(workflow, 0.5),
    workflowP95: q(workflow, 0.95),
    failed: r.failed.length,
    unheard: r.unheard,
  };
}

const ms = (v: number) => `${Math.round(v)} ms`;

function report(r: LevelResult, context?: string): void {
  const cpu = Object.values(r.cpuMsPerSecond).reduce((a, b) => a + b, 0);
  out('');
  out(`${context ? `voice turns ${context}: ` : ''}${r.calls} concurrent call${r.calls === 1 ? '' : 's'} (${r.seconds.toFixed(0)} s, load ${r.load})`);
  out(`  turn latency, edge   (speech end → agent's first frame): p50 ${ms(median(r.edgeTurns))}, p95 ${ms(quantile(r.edgeTurns, 0.95))}, max ${ms(Math.max(...r.edgeTurns))} over ${r.edgeTurns.length} turns`);
  if (r.clientTurns.length) {
    out(`  turn latency, caller (sent speech end → first packet): p50 ${ms(median(r.clientTurns))}, p95 ${ms(quantile(r.clientTurns, 0.95))}, max ${ms(Math.max(...r.clientTurns))} over ${r.clientTurns.length} turns`);
  }
  for (const kind of Object.keys(r.edgeByKind)) {
    const edge = r.edgeByKind[kind];
    const caller = r.clientByKind[kind] ?? [];
    out(`    ${kind} answers: edge p50 ${ms(median(edge))}, p95 ${ms(quantile(edge, 0.95))} (${edge.length}); caller p50 ${caller.length ? ms(median(caller)) : '–'}, p95 ${caller.length ? ms(quantile(caller, 0.95)) : '–'} (${caller.length})`);
  }
  const long = r.clientTurns.filter((t) => t > LONG_TURN_MS).length;
  if (long || r.unheard || r.failed.length) {
    out(`  caller turns over ${LONG_TURN_MS / 1000} s: ${long}; answers the edge did not make out (reprompted): ${r.unheard}; failed calls: ${r.failed.length}${r.failed.length ? ` (${r.failed[0]})` : ''}`);
  }
  if (r.profiles.length) {
    const part = (key: keyof TurnProfile) => `${ms(median(r.profiles.map((p) => p[key])))} (p95 ${ms(quantile(r.profiles.map((p) => p[key]), 0.95))})`;
    out(`  where a turn goes, median (p95): hangover + recognition ${part('recognition')}; completion to Temporal ${part('completion')}; workflow ${part('workflow')}; edge pickup ${part('pickup')}; synthesis to first frame ${part('firstFrame')}`);
  }
  out(`  callers' audio at the edge: ${r.inbound.received} packets, ${(100 * r.inbound.skipped / Math.max(1, r.inbound.received)).toFixed(1)}% skipped by the jitter buffer, ${r.inbound.underruns} underruns`);
  out(`  event loop delay: service process p99 ${ms(r.loopDelay.p99)}, max ${ms(r.loopDelay.max)}; callers' process p99 ${ms(r.callersLoopP99)}`);
  out(`  CPU: service ${cpu.toFixed(0)} ms/s (${Object.entries(r.cpuMsPerSecond).filter(([, v]) => v >= 1).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}); per call ${r.cpuPerCallSecond.toFixed(0)} ms per second of call = ${(r.cpuPerCallSecond / 10).toFixed(1)}% of a core`);
}

if (process.argv[2] === 'callers') void callers();
else runBenchmark(main);
