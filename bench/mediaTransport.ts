// CPU of the media edge's transport per established call: SIP over WebSocket, werift ICE,
// DTLS-SRTP and RTP, the jitter buffer, Opus decoding and encoding, 20 ms pacing.
//
// The edge runs in this process; the browsers (werift peers offering Opus, as Chrome does)
// run in a child process, so only the edge's work is counted. For each number of concurrent
// calls, three phases of BENCH_SECONDS each:
//   idle       calls up, no audio either way (the edge still plays 50 silent frames a second);
//   listening  the browsers send a tone (what the edge does while a caller speaks);
//   both ways  the browsers send and the edge sends a tone back (a barge-in, or a worst case).
// Prints the edge process's CPU time (user + system, all threads) per call per second, with
// the process's own baseline (edge up, no call: GC, timers) subtracted first, and the p99 delay
// of the event loop (the pacing's enemy). Per-call figures at one or two calls carry the
// fixed cost of the 20 ms clock and the odd major GC; the slope between the larger levels is
// the cost of one more call.
//
//   npx tsx bench/mediaTransport.ts
//
// Knobs (environment): BENCH_CALLS (default "1,5,10,20"), BENCH_SECONDS (default 8).
import { fork, type ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../src/logging/logger.js';
import type { CallAdmission } from '../src/mediaEdge/admission.js';
import { getHeader } from '../src/mediaEdge/sip/message.js';
import { startMediaEdge, type EstablishedCall } from '../src/mediaEdge/server.js';
import { SipTestClient } from '../test/support/sipClient.js';
import { BrowserPeer, toneFrames } from '../test/support/webrtcPeer.js';

type ToChild = { cmd: 'dial'; url: string; calls: number } | { cmd: 'talk' } | { cmd: 'stop' };
type ToParent = { event: 'dialled' } | { event: 'stopped' } | { event: 'error'; message: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ the browsers (child)

async function browsers(): Promise<void> {
  const open: { sip: SipTestClient; peer: BrowserPeer }[] = [];
  const send = (m: ToParent) => process.send?.(m);
  process.on('message', (m: ToChild) => {
    void (async () => {
      if (m.cmd === 'dial') {
        for (let i = 0; i < m.calls; i++) {
          const sip = await SipTestClient.connect(m.url);
          const peer = new BrowserPeer('opus');
          const dialog = sip.invite({ headers: { 'X-Session-Token': `bench-${process.pid}-${i}` }, sdp: await peer.offer() });
          const ok = await sip.answered(dialog);
          if (ok.status !== 200) throw new Error(`INVITE answered ${ok.status}`);
          await peer.accept(ok.body);
          await peer.connected();
          open.push({ sip, peer });
        }
        send({ event: 'dialled' });
      } else if (m.cmd === 'talk') {
        for (const { peer } of open) peer.startTone(440, 6000);
      } else {
        for (const { sip, peer } of open) {
          await peer.close();
          await sip.close();
        }
        send({ event: 'stopped' });
        process.exit(0);
      }
    })().catch((err: unknown) => {
      send({ event: 'error', message: String(err) });
      process.exit(1);
    });
  });
}

// ------------------------------------------------------------------ the edge (parent)

function ask(child: ChildProcess, message: ToChild, answer: ToParent['event']): Promise<void> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: ToParent) => {
      if (m.event === 'error') reject(new Error(m.message));
      else if (m.event === answer) resolve();
      else return;
      child.off('message', onMessage);
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

interface PhaseResult {
  /** CPU ms per second of the whole edge process. */
  cpuMsPerSecond: number;
  loopDelayP99Ms: number;
}

async function measure(seconds: number): Promise<PhaseResult> {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const before = process.cpuUsage();
  const started = performance.now();
  await sleep(seconds * 1000);
  const used = process.cpuUsage(before);
  const elapsed = (performance.now() - started) / 1000;
  delay.disable();
  return { cpuMsPerSecond: (used.user + used.system) / 1000 / elapsed, loopDelayP99Ms: delay.percentile(99) / 1e6 };
}

async function runLevel(calls: number, seconds: number): Promise<Record<string, PhaseResult>> {
  const established: EstablishedCall[] = [];
  const admission: CallAdmission = { admit: async (invite) => ({ callId: getHeader(invite, 'X-Session-Token')!, credential: 'session_token' }) };
  let inboundFrames = 0;
  const edge = await startMediaEdge({
    wsUrl: 'ws://127.0.0.1:0/ws',
    admission,
    logger: createLogger('warn'),
    onCall: (call) => {
      established.push(call);
      // A consumer of the inbound audio, as cheap as can be.
      call.channel.onInbound(() => inboundFrames++);
    },
    maxCallsPerSocket: 1,
  });
  // spawns: node
  const child = fork(fileURLToPath(import.meta.url), ['browsers'], { stdio: 'inherit' });
  try {
    await ask(child, { cmd: 'dial', url: edge.url, calls }, 'dialled');
    while (established.length < calls) await sleep(20);
    await sleep(1000);
    const results: Record<string, PhaseResult> = {};
    results.idle = await measure(seconds);
    child.send({ cmd: 'talk' } satisfies ToChild);
    await sleep(500);
    results.listening = await measure(seconds);
    let talking = true;
    const tone = toneFrames(1000, 6000, 50);
    const speakers = established.map(async (call) => {
      while (talking) {
        for (const frame of tone) call.channel.enqueue(frame);
        await call.channel.drained();
      }
    });
    await sleep(500);
    results['both ways'] = await measure(seconds);
    talking = false;
    for (const call of established) call.channel.clear();
    await Promise.all(speakers);
    if (inboundFrames === 0) throw new Error('no inbound audio reached the edge');
    return results;
  } finally {
    await ask(child, { cmd: 'stop' }, 'stopped').catch(() => child.kill());
    await edge.close();
  }
}

async function main(): Promise<void> {
  const levels = (process.env.BENCH_CALLS ?? '1,5,10,20').split(',').map(Number);
  const seconds = Number(process.env.BENCH_SECONDS ?? 8);
  // Warm-up, not counted: JIT, the WebAssembly Opus build, werift's first handshakes.
  await runLevel(2, 2);
  const idleEdge = await startMediaEdge({ wsUrl: 'ws://127.0.0.1:0/ws', admission: { admit: async () => ({ reject: 403, reason: 'no' }) }, logger: createLogger('warn') });
  const baseline = await measure(seconds);
  await idleEdge.close();
  process.stdout.write(`media transport: edge CPU, ${seconds} s per phase, Opus; baseline (edge up, no call) ${baseline.cpuMsPerSecond.toFixed(1)} ms/s\n`);
  process.stdout.write('calls  phase       edge CPU ms/s   per call ms/s   per call % of a core   loop delay p99\n');
  for (const calls of levels) {
    const results = await runLevel(calls, seconds);
    for (const [phase, r] of Object.entries(results)) {
      const perCall = Math.max(0, r.cpuMsPerSecond - baseline.cpuMsPerSecond) / calls;
      process.stdout.write(
        `${String(calls).padStart(5)}  ${phase.padEnd(10)}  ${r.cpuMsPerSecond.toFixed(1).padStart(13)}   ${perCall.toFixed(1).padStart(13)}   ${(perCall / 10).toFixed(2).padStart(20)}%   ${r.loopDelayP99Ms.toFixed(1).padStart(11)} ms\n`,
      );
    }
  }
}

if (process.argv[2] === 'browsers') {
  void browsers();
} else {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
