// Concurrent phone calls (SIP trunk, RTP with G.711) on one media-edge process: issue 25's
// benchmark, in two halves that run one after the other (or alone, with a switch).
//
//   npx tsx bench/sipCalls.ts                 # both halves (the speech half needs 10+ minutes)
//   npx tsx bench/sipCalls.ts --media-only    # or BENCH_PART=media; --streams 200 for one level
//   npx tsx bench/sipCalls.ts --speech-only   # or BENCH_PART=speech
//
// MEDIA ONLY: the most RTP streams one process sustains with speech stubbed out. The edge side
// runs in this process: N RtpSessions (openRtpSession, the real RtpMediaChannel on the shared
// 20 ms FrameClock), each decoding μ-law, resampling 8 → 16 kHz, jitter-buffering, and sending
// every inbound frame straight back as agent audio (16 → 8 kHz, μ-law, RTP), so both
// directions carry audio all the time. The far end runs in a child process (so its work is not
// counted): N UDP sockets sending a 20 ms μ-law frame each every 20 ms on loopback, and
// counting what comes back. For each level of concurrent streams it prints:
//   - frame-pacing lateness: for every 20 ms tick, how long after the tick was due the LAST
//     stream's frame left (the worst stream of the tick), p50/p95/p99/max; a tick the clock
//     skipped after a stall counts as 100 ms late;
//   - the edge process's CPU (user + system) per stream-second, the process's idle baseline
//     (the clock and one session) subtracted, and the event loop's p99 delay;
//   - the same CPU, none subtracted, over the stream-seconds actually served (the packets the
//     edge sent / 50): a figure the machine's load changes little, since a starved process
//     that skips ticks also sends fewer packets;
//   - packets the far end got back per stream-second (50 when nothing is lost).
// A level passes when lateness p95 ≤ 20 ms and the far end gets ≥ 49 packets per stream-second.
// Knobs: --streams 200 (or 50,100) or BENCH_STREAMS (default "50,100,200,300"), BENCH_SECONDS (default 10).
//
// SPEECH: phone calls that talk, on the real stack as `npm start` runs it with
// VOICE_PROVIDER=sip: Postgres, a Temporal dev server, the API, the call worker and the media
// edge (startVoiceEdge with its SIP trunk agent, RTP, Festival and the telephone band's
// default recognisers: Whisper when the speech venv holds it, else STT_PROVIDER's engine) in
// this process. Calls are created with create-phone-call; the edge dials them through its
// trunk, which is a child process of phones (not counted): a SipTrunkAgent that answers every
// INVITE (200 with SDP) and, per call, an RtpPeer (test/support/rtpPeer.ts) that sends μ-law
// in real time, silence between answers. Each phone waits for the agent's prompt to end (its
// packets quiet for 500 ms), answers with festival-made speech (8 kHz, as a phone line carries
// it), and times its turns. The script and the answers are bench/voiceTurns.ts's
// (bench/support/accountLineScript.ts): four asks, an Auth Check, goodbye.
//
// Why not SIPp as the far end: a SIPp scenario plays its audio (`rtp_stream`, pcap) on a
// timeline fixed when it is written (<pause> then play); it cannot hear when the agent's prompt
// ends, so its answers would fall into the prompt (a barge-in) or after a guessed pause, and it
// cannot time when the agent's next line starts. The turn is the thing measured, so the phones
// are the project's own RTP peers behind its own SIP UA (the edge's trunk agent is tested
// against SIPp and baresip in test/mediaEdge/sipTrunk.test.ts and test/e2e/phoneCalls.test.ts).
//
// Per level of concurrent calls (default 1, 5, 10, then +5 while the target holds) it prints:
//   - turn latency at the edge (the caller's speech end → the agent's first frame,
//     ConversationEngine.turnLatencies: answers it made out) and at the phone (end of its sent
//     speech → the first voiced packet of the agent's next line, a reprompt included), p50/p95,
//     and the phone's "Hello?" → the agent's first line (the voicemail screening, then speech);
//   - frame-pacing lateness of the calls' RTP clock: per tick, how long after it was due the
//     tick's work (every call's frame) had finished, p50/p95/p99 (a skipped tick counts 100 ms);
//   - the event loop's delay, the calls that did not complete, answers not made out;
//   - CPU of the service (this process and its descendants: Temporal, Postgres, Festival,
//     Whisper/pocketsphinx; the phones excluded) from /proc, per second of call above the idle
//     baseline, and the load average while the level ran.
// A level meets the target when both turn p95s are ≤ 1.5 s, lateness p95 ≤ 20 ms and every
// call completed. Knobs: BENCH_CALLS (default "1,5,10"), BENCH_MAX_CALLS (default 30),
// BENCH_MIN_TURNS (turns the phones time per level at least, default 20), DATABASE_URL / TEMPORAL_ADDRESS.
// The browser path's figures for the same script: bench/voiceTurns.ts (docs/benchmarks.md).
//
// Both halves: BENCH_RTP_PORTS (default "48000-49999").
import { fork, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { addPhoneNumber } from '../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../src/db/repositories/scripts.js';
import { sipCallIdOf } from '../src/domain/sipOutcomes.js';
import { freePort } from '../src/localPorts.js';
import { createLogger } from '../src/logging/logger.js';
import { decodeMulaw, encodeMulaw } from '../src/mediaEdge/audio/mulaw.js';
import { resample } from '../src/mediaEdge/audio/resample.js';
import type { ConversationEngine } from '../src/mediaEdge/conversation/engine.js';
import { g711Answer } from '../src/mediaEdge/rtp/g711Sdp.js';
import { buildRtpPacket } from '../src/mediaEdge/rtp/rtpPacket.js';
import { openRtpSession, type RtpSession } from '../src/mediaEdge/rtp/rtpSession.js';
import { loadMediaEdgeConfig } from '../src/mediaEdge/server.js';
import { SipTrunkAgent, type IncomingInvite, type SipDialog } from '../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import { parseTrunkSettings } from '../src/mediaEdge/sip/trunk/trunkSettings.js';
import { createSpeechEngines } from '../src/mediaEdge/speech/speechEngines.js';
import { startVoiceEdge } from '../src/mediaEdge/voiceEdge.js';
import { FrameClock } from '../src/mediaEdge/webrtc/frameClock.js';
import { callWorkflowId } from '../workflows/contracts.js';
import { RtpPeer } from '../test/support/rtpPeer.js';
import { spoken } from '../test/support/spokenAudio.js';
import { ACCOUNT_LINE_ANSWERS, ACCOUNT_LINE_SCRIPT } from './support/accountLineScript.js';
import { insertTeamWithKey, jsonRequester } from './support/api.js';
import { startBenchCallStack } from './support/callStack.js';
import { runBenchmark } from './support/environment.js';
import { treeCpuSeconds } from './support/processCpu.js';
import { out, quantile } from './support/stats.js';

type MediaToChild = { cmd: 'open'; edgePorts: number[] } | { cmd: 'send' } | { cmd: 'step' } | { cmd: 'stop' };
type MediaToParent = { event: 'opened'; ports: number[] } | { event: 'stopped'; received: number; seconds: number } | { event: 'error'; message: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FRAME = 160;

// ------------------------------------------------------------------ the far end (child)

function mediaFarEnd(): void {
  const sockets: Socket[] = [];
  let targets: number[] = [];
  let received = 0;
  let countingSince = 0;
  let timer: NodeJS.Timeout | undefined;
  let stepped = 0;
  const send = (m: MediaToParent) => process.send?.(m);
  // One 20 ms frame of a 440 Hz tone, μ-law: the payload every packet carries.
  const payload = encodeMulaw(Int16Array.from({ length: FRAME }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 440 * i) / 8000))));
  process.on('message', (m: MediaToChild) => {
    void (async () => {
      if (m.cmd === 'open') {
        targets = m.edgePorts;
        for (let i = 0; i < targets.length; i++) {
          const socket = createSocket('udp4');
          await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
          socket.on('message', () => received++);
          sockets.push(socket);
        }
        send({ event: 'opened', ports: sockets.map((s) => s.address().port) });
      } else if (m.cmd === 'send') {
        const start = performance.now();
        let sent = 0;
        countingSince = performance.now() + 1000;
        const step = () => {
          const due = Math.floor((performance.now() - start) / 20) + 1;
          // Behind by more than a few frames (this process starved): skip, as a real phone's clock would not wait.
          if (due - sent > 5) sent = due - 1;
          for (; sent < due; sent++) {
            if (sent === Math.ceil(1000 / 20)) received = 0;
            for (let i = 0; i < sockets.length; i++) {
              const datagram = buildRtpPacket({ marker: false, payloadType: 0, sequenceNumber: sent & 0xffff, timestamp: (sent * FRAME) >>> 0, ssrc: 1000 + i, payload });
              sockets[i].send(datagram, targets[i], '127.0.0.1');
            }
          }
          timer = setTimeout(step, start + sent * 20 - performance.now());
        };
        step();
      } else if (m.cmd === 'step') {
        // Lock-step (the cost measure): one packet per stream, when the edge asks.
        for (let i = 0; i < sockets.length; i++) {
          sockets[i].send(buildRtpPacket({ marker: false, payloadType: 0, sequenceNumber: stepped & 0xffff, timestamp: (stepped * FRAME) >>> 0, ssrc: 1000 + i, payload }), targets[i], '127.0.0.1');
        }
        stepped++;
      } else {
        clearTimeout(timer);
        const seconds = (performance.now() - countingSince) / 1000;
        for (const s of sockets) s.close();
        send({ event: 'stopped', received, seconds });
        process.exit(0);
      }
    })().catch((err: unknown) => {
      send({ event: 'error', message: String(err) });
      process.exit(1);
    });
  });
}

// ------------------------------------------------------------------ the edge (parent)

/** Sends `message` to a child and resolves with its answer `answer` (rejects on its `error`). */
function ask<M extends { event: string }>(child: ChildProcess, message: MediaToChild | PhonesToChild, answer: M['event']): Promise<M> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { event: string; message?: string }) => {
      if (m.event === 'error') reject(new Error(m.message));
      else if (m.event === answer) resolve(m as M);
      else return;
      child.off('message', onMessage);
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

const sortedQuantile = (sorted: number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);

interface MediaLevelResult {
  streams: number;
  lateness: { p50: number; p95: number; p99: number; max: number };
  cpuMsPerSecond: number;
  /** All the process's CPU over the packets its streams sent, per 50 of them (a second of a stream served). */
  cpuMsPerServedStreamSecond: number;
  loopDelayP99Ms: number;
  packetsBackPerStreamSecond: number;
}

async function runMediaLevel(streams: number, seconds: number, portRange: { min: number; max: number }): Promise<MediaLevelResult> {
  const logger = createLogger('warn', 2);
  const clock = new FrameClock((err) => logger.error({ err }, 'tick failed'));
  const sessions: RtpSession[] = [];
  // spawns: node
  const child = fork(fileURLToPath(import.meta.url), ['far-end'], { stdio: 'inherit' });
  try {
    for (let i = 0; i < streams; i++) sessions.push(await openRtpSession({ portRange, bindAddress: '127.0.0.1', clock, logger, inactivityMs: 60_000 }));
    const { ports } = await ask<Extract<MediaToParent, { event: 'opened' }>>(child, { cmd: 'open', edgePorts: sessions.map((s) => s.localPort) }, 'opened');
    sessions.forEach((session, i) => {
      // Speech stubbed out: the caller's audio is sent straight back as the agent's.
      session.channel.onInbound((frame) => session.channel.enqueue(frame));
      session.setRemote({ address: '127.0.0.1', port: ports[i], payloadType: 0 });
    });
    // Subscribed after every session: each tick, called once the last stream's frame has left (the
    // clock runs every send before any play).
    const lateness: number[] = [];
    const unsubscribe = clock.subscribe(() => lateness.push(performance.now() - clock.scheduledAt));
    child.send({ cmd: 'send' } satisfies MediaToChild);
    await sleep(1500);
    lateness.length = 0;
    const droppedBefore = clock.droppedTicks;
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const sentBefore = sentPackets(sessions);
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await sleep(seconds * 1000);
    const cpu = process.cpuUsage(cpuBefore);
    const elapsed = (performance.now() - started) / 1000;
    const sent = sentPackets(sessions) - sentBefore;
    delay.disable();
    unsubscribe();
    const back = await ask<Extract<MediaToParent, { event: 'stopped' }>>(child, { cmd: 'stop' }, 'stopped');
    // A skipped tick's frames never left: counted as late by the stall that skipped them (at least 100 ms).
    for (let i = clock.droppedTicks - droppedBefore; i > 0; i--) lateness.push(100);
    lateness.sort((a, b) => a - b);
    return {
      streams,
      lateness: { p50: sortedQuantile(lateness, 0.5), p95: sortedQuantile(lateness, 0.95), p99: sortedQuantile(lateness, 0.99), max: lateness.at(-1) ?? NaN },
      cpuMsPerSecond: (cpu.user + cpu.system) / 1000 / elapsed,
      cpuMsPerServedStreamSecond: (cpu.user + cpu.system) / 1000 / Math.max(1, sent / 50),
      loopDelayP99Ms: delay.percentile(99) / 1e6,
      packetsBackPerStreamSecond: back.received / streams / back.seconds,
    };
  } finally {
    for (const s of sessions) s.close();
    if (child.exitCode === null) child.kill();
  }
}

/**
 * The edge's CPU per stream-second with time taken out: N sessions on a clock of the bench's own,
 * in lock-step with the far end (it sends one packet per stream, the edge takes them all, then
 * ticks every session once: a frame decoded, converted, jitter-buffered, handed back, converted,
 * encoded and sent). `rounds` such steps are `rounds` / 50 stream-seconds per stream. Only this
 * process's CPU is counted, and no tick is ever late or skipped, so a busy machine changes the
 * figure far less than it changes the real-time levels'.
 */
async function mediaCost(streams: number, rounds: number, portRange: { min: number; max: number }): Promise<number> {
  const logger = createLogger('warn', 2);
  const listeners = new Set<() => void>();
  const clock = {
    subscribe(listener: () => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  } as unknown as FrameClock;
  const sessions: RtpSession[] = [];
  // spawns: node
  const child = fork(fileURLToPath(import.meta.url), ['far-end'], { stdio: 'inherit' });
  try {
    for (let i = 0; i < streams; i++) sessions.push(await openRtpSession({ portRange, bindAddress: '127.0.0.1', clock, logger, inactivityMs: 600_000 }));
    const { ports } = await ask<Extract<MediaToParent, { event: 'opened' }>>(child, { cmd: 'open', edgePorts: sessions.map((s) => s.localPort) }, 'opened');
    sessions.forEach((session, i) => {
      session.channel.onInbound((frame) => session.channel.enqueue(frame));
      session.setRemote({ address: '127.0.0.1', port: ports[i], payloadType: 0 });
    });
    // The far end sends stream by stream, so the last stream's packet is the last to come; one
    // session's counter is read, not all (reading them all each round would be counted too).
    const last = sessions[streams - 1];
    const step = async () => {
      const expected = last.stats.received + 1;
      child.send({ cmd: 'step' } satisfies MediaToChild);
      // Waiting for the far end costs this process a timer now and then, not a busy loop.
      for (let waited = 0; last.stats.received < expected && waited < 1000; waited++) await sleep(1);
      await new Promise((resolve) => setImmediate(resolve));
      for (const tick of listeners) tick();
    };
    for (let i = 0; i < 50; i++) await step();
    const before = process.cpuUsage();
    for (let i = 0; i < rounds; i++) await step();
    const cpu = process.cpuUsage(before);
    const missed = sessions.reduce((sum, s) => sum + s.stats.jitter.underruns, 0);
    if (missed > streams) process.stdout.write(`(lock-step: ${missed} frames played before their packet came)\n`);
    return (cpu.user + cpu.system) / 1000 / ((rounds / 50) * streams);
  } finally {
    for (const s of sessions) s.close();
    if (child.exitCode === null) child.kill();
  }
}

const sentPackets = (sessions: RtpSession[]) => sessions.reduce((sum, s) => sum + s.stats.sent, 0);

/** `--streams 200` or `--streams 50,100`, else BENCH_STREAMS. */
function streamLevels(): number[] {
  const at = process.argv.indexOf('--streams');
  const levels = (at > 0 ? process.argv[at + 1] : undefined) ?? process.env.BENCH_STREAMS ?? '50,100,200,300';
  const parsed = levels.split(',').map(Number);
  if (parsed.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--streams / BENCH_STREAMS must be whole numbers of streams separated by commas, not ${levels}`);
  return parsed;
}

async function mediaOnly(): Promise<void> {
  const levels = streamLevels();
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const portRange = rtpPorts();
  // Warm-up, not counted (JIT), and the baseline: one stream, whose cost is mostly the clock's.
  await runMediaLevel(5, 2, portRange);
  const baseline = await runMediaLevel(1, Math.min(seconds, 5), portRange);
  const costStreams = 100;
  const cost = await mediaCost(costStreams, 500, portRange);
  process.stdout.write(`edge CPU per stream-second in lock-step (${costStreams} streams, no real-time pacing, nothing subtracted): ${cost.toFixed(2)} ms; load ${loadAverage()}\n`);
  process.stdout.write(`RTP media only (speech stubbed out): G.711 μ-law both ways, ${seconds} s per level; baseline (1 stream) ${baseline.cpuMsPerSecond.toFixed(1)} ms CPU/s; load ${loadAverage()}\n`);
  process.stdout.write('streams   lateness p50 / p95 / p99 / max (ms)   edge CPU ms/s   CPU ms per stream-second   per served stream-second   loop delay p99   packets back /stream/s   target   load average\n');
  for (const streams of levels) {
    const r = await runMediaLevel(streams, seconds, portRange);
    const perStream = Math.max(0, r.cpuMsPerSecond - baseline.cpuMsPerSecond) / (streams - 1 || 1);
    const pass = r.lateness.p95 <= 20 && r.packetsBackPerStreamSecond >= 49;
    const l = r.lateness;
    process.stdout.write(
      `${String(streams).padStart(7)}   ${[l.p50, l.p95, l.p99, l.max].map((v) => v.toFixed(1)).join(' / ').padStart(34)}   ${r.cpuMsPerSecond.toFixed(0).padStart(13)}   ${perStream.toFixed(2).padStart(24)}   ${r.cpuMsPerServedStreamSecond.toFixed(2).padStart(24)}   ${r.loopDelayP99Ms.toFixed(1).padStart(11)} ms   ${r.packetsBackPerStreamSecond.toFixed(1).padStart(22)}   ${pass ? 'met   ' : 'MISSED'}   ${loadAverage()}\n`,
    );
  }
}

// ------------------------------------------------------------------ speech: the phones (child)

type PhonesToChild = { cmd: 'listen'; sipPort: number; edgeSipPort: number; answers: string[] } | { cmd: 'stop' };
type PhonesToParent = { event: 'listening' } | { event: 'call-ended'; result: PhoneResult } | { event: 'error'; message: string };

interface PhoneResult {
  sipCallId: string;
  /** End of the phone's sent answer → the first voiced packet of the agent's next line, per answer. */
  turnsMs: number[];
  answersGiven: number;
  /** End of the phone's "Hello?" → the agent's first line (the voicemail screening's verdict, then synthesis). */
  firstLineMs?: number;
  /** From the 200 to the agent's BYE. */
  seconds: number;
}

/** A packet louder than this (RMS of its samples, about -40 dBFS) is the agent speaking; the edge sends μ-law silence between lines. */
const VOICED_RMS = 328;
/** The agent's prompt has ended when its packets have been quiet this long. */
const PROMPT_END_QUIET_MS = 500;

/** What a person says on picking up: the edge screens the first seconds for a machine, and silence is one. */
const GREETING = 'Hello?';

function phones(): void {
  const send = (m: PhonesToParent) => process.send?.(m);
  let agent: SipTrunkAgent | undefined;
  let answers: Int16Array[] = [];
  let greeting: Int16Array = new Int16Array(0);
  let sessionId = 0;

  // One phone per INVITE: answered at once, silence until the prompt ends, then the next answer.
  const onInvite = async (invite: IncomingInvite) => {
    const peer = await RtpPeer.open({ address: '127.0.0.1', port: 9 }, { keepAudio: false });
    const answer = g711Answer(invite.sdp, { address: '127.0.0.1', port: peer.port, sessionId: ++sessionId });
    if ('error' in answer || answer.remote.payloadType !== 0) {
      peer.close();
      invite.reject(488, 'Not Acceptable Here');
      return;
    }
    peer.retarget({ address: answer.remote.address, port: answer.remote.port });
    const turnsMs: number[] = [];
    let lastVoicedAt = 0;
    let heardSinceAnswer = false;
    let speaking = false;
    let speechEndAt: number | undefined;
    let firstLineMs: number | undefined;
    let next = 0;
    peer.onPacket((payloadType, payload) => {
      if (payloadType !== 0) return;
      const pcm = decodeMulaw(payload);
      let sum = 0;
      for (const v of pcm) sum += v * v;
      if (Math.sqrt(sum / pcm.length) < VOICED_RMS) return;
      const now = performance.now();
      if (speechEndAt !== undefined) {
        if (firstLineMs === undefined) firstLineMs = now - speechEndAt;
        else turnsMs.push(now - speechEndAt);
        speechEndAt = undefined;
      }
      lastVoicedAt = now;
      heardSinceAnswer = true;
    });
    let dialog: SipDialog;
    try {
      dialog = await invite.answer(answer.sdp);
    } catch {
      peer.close();
      return;
    }
    const answeredAt = performance.now();
    speaking = true;
    void peer.play(greeting, { thenSilence: true }).then(() => {
      speaking = false;
      speechEndAt = performance.now();
    });
    const watch = setInterval(() => {
      if (!heardSinceAnswer || speaking || speechEndAt !== undefined || next >= answers.length || performance.now() - lastVoicedAt < PROMPT_END_QUIET_MS) return;
      heardSinceAnswer = false;
      speaking = true;
      void peer.play(answers[next++], { thenSilence: true }).then(() => {
        speaking = false;
        speechEndAt = performance.now();
      });
    }, 20);
    dialog.onEnded(() => {
      clearInterval(watch);
      peer.close();
      send({ event: 'call-ended', result: { sipCallId: dialog.callId, turnsMs, answersGiven: next, firstLineMs, seconds: (performance.now() - answeredAt) / 1000 } });
    });
  };

  process.on('message', (m: PhonesToChild) => {
    void (async () => {
      if (m.cmd === 'listen') {
        // Festival's voice at 8 kHz, as a phone line carries it (the peer encodes μ-law).
        for (const text of m.answers) answers.push(resample(await spoken(text), 16_000, 8000));
        greeting = resample(await spoken(GREETING), 16_000, 8000);
        const settings = parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${m.edgeSipPort};transport=udp`, SIP_LISTEN: `127.0.0.1:${m.sipPort}`, RTP_PORT_RANGE: '40000-40999' })!;
        agent = await SipTrunkAgent.start({ settings, logger: createLogger('warn', 2) });
        agent.onIncomingInvite(onInvite);
        send({ event: 'listening' });
      } else {
        await agent?.close();
        process.exit(0);
      }
    })().catch((err: unknown) => send({ event: 'error', message: (err as Error).stack ?? String(err) }));
  });
}

// ------------------------------------------------------------------ speech: the service (parent)

const TARGET_TURN_P95_MS = 1_500;
const TARGET_LATENESS_P95_MS = 20;
/** The team's caller number. */
const FROM_NUMBER = '+12125550100';

interface SpeechLevelResult {
  calls: number;
  edgeTurns: number[];
  phoneTurns: number[];
  /** The phone's "Hello?" → the agent's first line, per call. */
  firstLines: number[];
  /** Per tick: when every call's work of the tick had finished, minus when it was due (ms). */
  lateness: number[];
  answersGiven: number;
  /** Calls that did not end completed: their status / end reason. */
  notCompleted: string[];
  loopDelay: { p99: number; max: number };
  cpuMsPerSecond: number;
  /** CPU ms above the idle baseline per second of call. */
  cpuPerCallSecond: number;
  /** Seconds of call summed over the level's calls. */
  callSeconds: number;
  seconds: number;
  load: string;
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

async function speechCalls(): Promise<void> {
  const levels = (process.env.BENCH_CALLS ?? '1,5,10').split(',').map(Number);
  const maxCalls = Number(process.env.BENCH_MAX_CALLS ?? 30);
  const minTurns = Number(process.env.BENCH_MIN_TURNS ?? 20);
  const stack = await startBenchCallStack('sip-calls', {
    VOICE_PROVIDER: 'sip',
    // Carrier pacing would spread the starts; the bench spreads them itself.
    DIAL_RATE_PER_NUMBER: '1000',
  });
  const { pool, config, temporal, address, api, recordings } = stack;
  const speech = createSpeechEngines(process.env);
  const phonesSipPort = await freePort();
  const edgeSipPort = await freePort();
  const portRange = rtpPorts();
  // The calls' RTP clock, passed in so its ticks can be timed.
  const clock = new FrameClock((err) => process.stderr.write(`RTP tick failed: ${String(err)}\n`));
  const edge = await startVoiceEdge({
    config: loadMediaEdgeConfig({ MEDIA_EDGE_WS_URL: `ws://127.0.0.1:${await freePort()}/ws`, MEDIA_EDGE_SECRET: config.MEDIA_EDGE_SECRET, API_URL: api.base, LOG_LEVEL: 'silent' }),
    logger: createLogger('warn', 2),
    speech,
    recordings,
    temporalAddress: address,
    temporalNamespace: config.TEMPORAL_NAMESPACE,
    instanceId: `bench-${process.pid}`,
    trunk: parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${phonesSipPort};transport=udp`, SIP_LISTEN: `127.0.0.1:${edgeSipPort}`, RTP_PORT_RANGE: `${portRange.min}-${portRange.max}` }),
    rtpClock: clock,
  });
  // Engines leave edge.engines when their call ends: keep each one seen to read its turns.
  const engines = new Map<string, ConversationEngine>();
  const watchEngines = setInterval(() => {
    for (const [callId, engine] of edge.engines) engines.set(callId, engine);
  }, 100);
  // Ticks timed once the whole tick has run: a microtask runs after the clock's timer callback,
  // so after every call's listener of every tick it caught up (this listener is the first).
  const lateness: number[] = [];
  let dueTicks: number[] = [];
  const stopTiming = clock.subscribe(() => {
    if (dueTicks.length === 0) {
      queueMicrotask(() => {
        const now = performance.now();
        for (const due of dueTicks) lateness.push(now - due);
        dueTicks = [];
      });
    }
    dueTicks.push(clock.scheduledAt);
  });

  const team = await insertTeamWithKey(pool, 'sip calls bench');
  await pool.query('UPDATE teams SET max_concurrent = 1000 WHERE id = $1', [team.id]);
  await addPhoneNumber(pool, team.id, FROM_NUMBER);
  const { id: scriptId } = await insertScript(pool, { teamId: team.id, name: ACCOUNT_LINE_SCRIPT.name, definition: ACCOUNT_LINE_SCRIPT });
  const request = jsonRequester(api.base);
  // spawns: node
  const child = fork(fileURLToPath(import.meta.url), ['phones'], { stdio: 'inherit' });
  const ended = new Map<string, PhoneResult>();
  child.on('message', (m: PhonesToParent) => {
    if (m.event === 'call-ended') ended.set(m.result.sipCallId, m.result);
  });
  const serviceCpuMs = () => {
    const t = treeCpuSeconds({ all: process.pid, phones: child.pid! });
    return (t.all - t.phones) * 1000;
  };

  try {
    await ask<Extract<PhonesToParent, { event: 'listening' }>>(child, { cmd: 'listen', sipPort: phonesSipPort, edgeSipPort, answers: ACCOUNT_LINE_ANSWERS }, 'listening');
    let callee = 0;
    /** N calls at once, their starts spread over 4 s so their turns do not fall in step; each call's phone result and status. */
    const runCalls = async (n: number) => {
      const callIds = await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          await sleep(Math.round((i * 4000) / n));
          const number = `+14155550${String(100 + (callee++ % 900))}`;
          const created = await request(team.key, 'POST', '/api/v1/create-phone-call', { from_number: FROM_NUMBER, script_id: scriptId, contact: { phone_number: number, first_name: 'Ada' } });
          return created.call_id as string;
        }),
      );
      let giveUp: NodeJS.Timeout | undefined;
      const stuck = new Promise<{ status: string; endReason: string | null }>((resolve) => {
        giveUp = setTimeout(() => resolve({ status: 'stuck', endReason: 'the bench waited 10 minutes' }), 600_000);
      });
      const outcomes = await Promise.all(
        callIds.map((callId) => Promise.race([temporal.client.workflow.getHandle<() => Promise<{ status: string; endReason: string | null }>>(callWorkflowId(callId)).result(), stuck])),
      );
      clearTimeout(giveUp);
      // The phone hears the BYE about when the workflow ends.
      for (let i = 0; i < 100 && callIds.some((id, k) => outcomes[k].status === 'completed' && !ended.has(sipCallIdOf(id))); i++) await sleep(50);
      return callIds.map((callId, k) => ({ callId, outcome: outcomes[k], phone: ended.get(sipCallIdOf(callId)) }));
    };

    // Warm-up, not counted: the JIT, the recogniser's worker and first runs, Festival's first lines.
    await runCalls(2);
    // The baseline once the warm-up's trailing work (recordings, workflow completions) is done.
    await sleep(5_000);
    const idleBefore = serviceCpuMs();
    const idleStart = performance.now();
    await sleep(5_000);
    const idleMsPerSecond = (serviceCpuMs() - idleBefore) / ((performance.now() - idleStart) / 1000);
    const heardBy = Object.entries(speech.recognizers.telephone).map(([expect, engine]) => `${expect} ${engine}`).join(', ');
    out('');
    out(`phone calls that talk: G.711 μ-law over RTP through the SIP trunk agent, 4 answered asks per call, Festival + the telephone band's recognisers (${heardBy}); service idle ${idleMsPerSecond.toFixed(0)} ms CPU/s; load ${loadAverage()}`);

    const results: SpeechLevelResult[] = [];
    const meets = (r: SpeechLevelResult) =>
      r.edgeTurns.length > 0 &&
      r.phoneTurns.length > 0 &&
      quantile(r.edgeTurns, 0.95) <= TARGET_TURN_P95_MS &&
      quantile(r.phoneTurns, 0.95) <= TARGET_TURN_P95_MS &&
      quantile(r.lateness, 0.95) <= TARGET_LATENESS_P95_MS &&
      r.notCompleted.length === 0;
    for (let i = 0; i < levels.length; i++) {
      const calls = levels[i];
      const level: SpeechLevelResult = { calls, edgeTurns: [], phoneTurns: [], firstLines: [], lateness: [], answersGiven: 0, notCompleted: [], loopDelay: { p99: 0, max: 0 }, cpuMsPerSecond: 0, cpuPerCallSecond: 0, callSeconds: 0, seconds: 0, load: '' };
      const loop = monitorEventLoopDelay({ resolution: 5 });
      loop.enable();
      const loads: number[] = [];
      const loadWatch = setInterval(() => loads.push(Number(loadAverage().split(' ')[0])), 2_000);
      lateness.length = 0;
      const droppedBefore = clock.droppedTicks;
      const cpuBefore = serviceCpuMs();
      const start = performance.now();
      let callSeconds = 0;
      do {
        for (const { callId, outcome, phone } of await runCalls(calls)) {
          if (outcome.status !== 'completed') level.notCompleted.push(`${outcome.status} / ${outcome.endReason}`);
          level.edgeTurns.push(...(engines.get(callId)?.turnLatencies ?? []).map((t) => t.turnMs));
          level.phoneTurns.push(...(phone?.turnsMs ?? []));
          if (phone?.firstLineMs !== undefined) level.firstLines.push(phone.firstLineMs);
          level.answersGiven += phone?.answersGiven ?? 0;
          callSeconds += phone?.seconds ?? 0;
        }
      } while (level.phoneTurns.length < minTurns && level.notCompleted.length === 0);
      clearInterval(loadWatch);
      loop.disable();
      level.seconds = (performance.now() - start) / 1000;
      level.cpuMsPerSecond = (serviceCpuMs() - cpuBefore) / level.seconds;
      level.cpuPerCallSecond = Math.max(0, (level.cpuMsPerSecond - idleMsPerSecond) * level.seconds) / Math.max(1, callSeconds);
      level.callSeconds = callSeconds;
      level.loopDelay = { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 };
      // A skipped tick's frames never left: counted as late by the stall that skipped it (at least 100 ms).
      level.lateness = [...lateness, ...Array.from({ length: clock.droppedTicks - droppedBefore }, () => 100)];
      level.load = `${loadAverage()} (1-min average while it ran: ${(loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length)).toFixed(1)})`;
      results.push(level);
      reportSpeechLevel(level);
      if (i === levels.length - 1 && meets(level) && calls + 5 <= maxCalls) levels.push(calls + 5);
    }
    const meeting = results.filter(meets);
    out('');
    out(`highest level with turn p95 ≤ ${TARGET_TURN_P95_MS} ms (edge and phone), lateness p95 ≤ ${TARGET_LATENESS_P95_MS} ms and every call completed: ${meeting.length ? Math.max(...meeting.map((r) => r.calls)) : 'none'} concurrent calls`);
    out('browser calls with the same script: bench/voiceTurns.ts (docs/benchmarks.md, "Voice turns")');
  } finally {
    clearInterval(watchEngines);
    stopTiming();
    child.send({ cmd: 'stop' } satisfies PhonesToChild);
    // Waits for the last calls' recordings to be stored (up to its bound).
    await edge.close();
    await speech.close();
    await stack.stop();
  }
}

const ms = (v: number) => (Number.isFinite(v) ? `${Math.round(v)} ms` : '–');

function reportSpeechLevel(r: SpeechLevelResult): void {
  const p = (values: number[], q: number) => (values.length ? quantile(values, q) : NaN);
  out('');
  out(`${r.calls} concurrent call${r.calls === 1 ? '' : 's'} (${r.seconds.toFixed(0)} s, load ${r.load})`);
  out(`  turn latency, edge  (speech end → agent's first frame): p50 ${ms(p(r.edgeTurns, 0.5))}, p95 ${ms(p(r.edgeTurns, 0.95))}, max ${ms(Math.max(...r.edgeTurns))} over ${r.edgeTurns.length} turns`);
  out(`  turn latency, phone (sent speech end → first voiced packet): p50 ${ms(p(r.phoneTurns, 0.5))}, p95 ${ms(p(r.phoneTurns, 0.95))}, max ${ms(Math.max(...r.phoneTurns))} over ${r.phoneTurns.length} turns`);
  out(`  answers the phones gave: ${r.answersGiven}; made out by the edge (a timed turn each; the rest were reprompted): ${r.edgeTurns.length}`);
  out(`  the phone's "Hello?" → the agent's first line (screening verdict + synthesis): p50 ${ms(p(r.firstLines, 0.5))}, p95 ${ms(p(r.firstLines, 0.95))} over ${r.firstLines.length} calls`);
  out(`  RTP frame pacing lateness: p50 ${p(r.lateness, 0.5).toFixed(1)} ms, p95 ${p(r.lateness, 0.95).toFixed(1)} ms, p99 ${p(r.lateness, 0.99).toFixed(1)} ms over ${r.lateness.length} ticks; event loop delay p99 ${ms(r.loopDelay.p99)}, max ${ms(r.loopDelay.max)}`);
  if (r.notCompleted.length) out(`  calls not completed: ${r.notCompleted.length} (${[...new Set(r.notCompleted)].join('; ')})`);
  // Both: above the idle baseline (what a call adds), and everything over the calls' seconds (an upper bound when the baseline is noisy).
  const allPerCallSecond = (r.cpuMsPerSecond * r.seconds) / Math.max(1, r.callSeconds);
  out(`  CPU: service ${r.cpuMsPerSecond.toFixed(0)} ms/s; per call ${r.cpuPerCallSecond.toFixed(0)} ms per second of call above idle = ${(r.cpuPerCallSecond / 10).toFixed(1)}% of a core (all of the service's CPU over the calls' seconds: ${allPerCallSecond.toFixed(0)} ms)`);
}

// ------------------------------------------------------------------ which half

function rtpPorts(): { min: number; max: number } {
  const [min, max] = (process.env.BENCH_RTP_PORTS ?? '48000-49999').split('-').map(Number);
  return { min, max };
}

/** `--media-only` / `--speech-only`, or BENCH_PART=media|speech; both by default. */
function parts(): { media: boolean; speech: boolean } {
  const part = process.argv.includes('--media-only') ? 'media' : process.argv.includes('--speech-only') ? 'speech' : (process.env.BENCH_PART ?? 'both');
  if (!['media', 'speech', 'both'].includes(part)) throw new Error(`BENCH_PART must be media, speech or both, not ${part}`);
  return { media: part !== 'speech', speech: part !== 'media' };
}

async function main(): Promise<void> {
  const which = parts();
  if (which.media) await mediaOnly();
  if (which.speech) await speechCalls();
}

if (process.argv[2] === 'far-end') mediaFarEnd();
else if (process.argv[2] === 'phones') phones();
else runBenchmark(main);
