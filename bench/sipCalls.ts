// Concurrent phone calls (SIP trunk, RTP with G.711) on one media-edge process.
//
// MEDIA ONLY (this part runs today): the most RTP streams one process sustains with speech
// stubbed out. The edge side runs in this process: N RtpSessions (openRtpSession, the real
// RtpMediaChannel on the shared 20 ms FrameClock), each decoding μ-law, resampling 8 → 16 kHz,
// jitter-buffering, and sending every inbound frame straight back as agent audio (16 → 8 kHz,
// μ-law, RTP), so both directions carry audio all the time. The far end runs in a child process
// (so its work is not counted): N UDP sockets sending a 20 ms μ-law frame each every 20 ms on
// loopback, and counting what comes back.
//
// For each level of concurrent streams it prints:
//   - frame-pacing lateness: for every 20 ms tick, how long after the tick was due the LAST
//     stream's frame left (the worst stream of the tick), p50/p95/p99/max; a tick the clock
//     skipped after a stall counts as 100 ms late;
//   - the edge process's CPU (user + system) per stream-second, the process's idle baseline
//     (the clock and one session) subtracted, and the event loop's p99 delay;
//   - packets the far end got back per stream-second (50 when nothing is lost).
// A level passes when lateness p95 ≤ 20 ms and the far end gets ≥ 49 packets per stream-second.
//
//   npx tsx bench/sipCalls.ts
//
// Knobs (environment): BENCH_STREAMS (default "50,100,200,300"), BENCH_SECONDS (default 10),
// BENCH_RTP_PORTS (default "48000-49999").
//
// TODO (for O/S, the speech half of issue 25's benchmark): with SIPp as the far end (its
// `rtp_stream` playing festival-made μ-law WAVs, see /work/shared/recipes/sip-test-phones.md)
// dialling through the SipTrunkAgent into calls that run the offline speech engines: the most
// calls at which voice-turn p95 ≤ 1.5 s and frame-pacing lateness p95 ≤ 20 ms, turn latency at
// 10 calls, and CPU per call-second next to bench/voiceTurns.ts's browser-path figures.
import { fork, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../src/logging/logger.js';
import { encodeMulaw } from '../src/mediaEdge/audio/mulaw.js';
import { buildRtpPacket } from '../src/mediaEdge/rtp/rtpPacket.js';
import { openRtpSession, type RtpSession } from '../src/mediaEdge/rtp/rtpSession.js';
import { FrameClock } from '../src/mediaEdge/webrtc/frameClock.js';

type ToChild = { cmd: 'open'; edgePorts: number[] } | { cmd: 'send' } | { cmd: 'stop' };
type ToParent = { event: 'opened'; ports: number[] } | { event: 'stopped'; received: number; seconds: number } | { event: 'error'; message: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FRAME = 160;

// ------------------------------------------------------------------ the far end (child)

function farEnd(): void {
  const sockets: Socket[] = [];
  let targets: number[] = [];
  let received = 0;
  let countingSince = 0;
  let timer: NodeJS.Timeout | undefined;
  const send = (m: ToParent) => process.send?.(m);
  // One 20 ms frame of a 440 Hz tone, μ-law: the payload every packet carries.
  const payload = encodeMulaw(Int16Array.from({ length: FRAME }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 440 * i) / 8000))));
  process.on('message', (m: ToChild) => {
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

function ask<E extends ToParent['event']>(child: ChildProcess, message: ToChild, answer: E): Promise<Extract<ToParent, { event: E }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: ToParent) => {
      if (m.event === 'error') reject(new Error(m.message));
      else if (m.event === answer) resolve(m as Extract<ToParent, { event: E }>);
      else return;
      child.off('message', onMessage);
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

const quantile = (sorted: number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);

interface LevelResult {
  streams: number;
  lateness: { p50: number; p95: number; p99: number; max: number };
  cpuMsPerSecond: number;
  loopDelayP99Ms: number;
  packetsBackPerStreamSecond: number;
}

async function runLevel(streams: number, seconds: number, portRange: { min: number; max: number }): Promise<LevelResult> {
  const logger = createLogger('warn', 2);
  const clock = new FrameClock((err) => logger.error({ err }, 'tick failed'));
  const sessions: RtpSession[] = [];
  // spawns: node
  const child = fork(fileURLToPath(import.meta.url), ['far-end'], { stdio: 'inherit' });
  try {
    for (let i = 0; i < streams; i++) sessions.push(await openRtpSession({ portRange, bindAddress: '127.0.0.1', clock, logger, inactivityMs: 60_000 }));
    const { ports } = await ask(child, { cmd: 'open', edgePorts: sessions.map((s) => s.localPort) }, 'opened');
    sessions.forEach((session, i) => {
      // Speech stubbed out: the caller's audio is sent straight back as the agent's.
      session.channel.onInbound((frame) => session.channel.enqueue(frame));
      session.setRemote({ address: '127.0.0.1', port: ports[i], payloadType: 0 });
    });
    // Subscribed after every session: each tick, called once the last stream's frame has left.
    const lateness: number[] = [];
    const unsubscribe = clock.subscribe(() => lateness.push(performance.now() - clock.scheduledAt));
    child.send({ cmd: 'send' } satisfies ToChild);
    await sleep(1500);
    lateness.length = 0;
    const droppedBefore = clock.droppedTicks;
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await sleep(seconds * 1000);
    const cpu = process.cpuUsage(cpuBefore);
    const elapsed = (performance.now() - started) / 1000;
    delay.disable();
    unsubscribe();
    const back = await ask(child, { cmd: 'stop' }, 'stopped');
    // A skipped tick's frames never left: counted as late by the stall that skipped them (at least 100 ms).
    for (let i = clock.droppedTicks - droppedBefore; i > 0; i--) lateness.push(100);
    lateness.sort((a, b) => a - b);
    return {
      streams,
      lateness: { p50: quantile(lateness, 0.5), p95: quantile(lateness, 0.95), p99: quantile(lateness, 0.99), max: lateness.at(-1) ?? NaN },
      cpuMsPerSecond: (cpu.user + cpu.system) / 1000 / elapsed,
      loopDelayP99Ms: delay.percentile(99) / 1e6,
      packetsBackPerStreamSecond: back.received / streams / back.seconds,
    };
  } finally {
    for (const s of sessions) s.close();
    if (child.exitCode === null) child.kill();
  }
}

async function main(): Promise<void> {
  const levels = (process.env.BENCH_STREAMS ?? '50,100,200,300').split(',').map(Number);
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const [min, max] = (process.env.BENCH_RTP_PORTS ?? '48000-49999').split('-').map(Number);
  const portRange = { min, max };
  // Warm-up, not counted (JIT), and the baseline: one stream, whose cost is mostly the clock's.
  await runLevel(5, 2, portRange);
  const baseline = await runLevel(1, Math.min(seconds, 5), portRange);
  process.stdout.write(`RTP media only (speech stubbed out): G.711 μ-law both ways, ${seconds} s per level; baseline (1 stream) ${baseline.cpuMsPerSecond.toFixed(1)} ms CPU/s\n`);
  process.stdout.write('streams   lateness p50 / p95 / p99 / max (ms)   edge CPU ms/s   CPU ms per stream-second   loop delay p99   packets back /stream/s   target\n');
  for (const streams of levels) {
    const r = await runLevel(streams, seconds, portRange);
    const perStream = Math.max(0, r.cpuMsPerSecond - baseline.cpuMsPerSecond) / (streams - 1 || 1);
    const pass = r.lateness.p95 <= 20 && r.packetsBackPerStreamSecond >= 49;
    const l = r.lateness;
    process.stdout.write(
      `${String(streams).padStart(7)}   ${[l.p50, l.p95, l.p99, l.max].map((v) => v.toFixed(1)).join(' / ').padStart(34)}   ${r.cpuMsPerSecond.toFixed(0).padStart(13)}   ${perStream.toFixed(2).padStart(24)}   ${r.loopDelayP99Ms.toFixed(1).padStart(11)} ms   ${r.packetsBackPerStreamSecond.toFixed(1).padStart(22)}   ${pass ? 'met' : 'MISSED'}\n`,
    );
  }
}

if (process.argv[2] === 'far-end') {
  farEnd();
} else {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
