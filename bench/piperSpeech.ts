// Piper as the agent voice (TTS_PROVIDER=piper; docs/speech.md, "Piper"), against Festival:
//
//   npx tsx bench/piperSpeech.ts
//
// With the worker warm, for lines of ten words never said before (nothing kept):
// - first audio: synthesize() called → its first 20 ms frame (for a one-sentence line the
//   whole sentence is rendered first, then resampled to 16 kHz);
// - real-time factor: the time to the last frame over the audio's duration (frames taken as
//   fast as they come, not paced);
// - the worker's start (voice load) and the CPU time of the worker process per line.
// Festival on the same lines for comparison. Knob: BENCH_ROUNDS (3): rounds over the lines.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../src/mediaEdge/media/channel.js';
import { FestivalSynthesizer } from '../src/mediaEdge/speech/festival.js';
import type { SpeechSynthesizer } from '../src/mediaEdge/speech/interfaces.js';
import { PiperSynthesizer } from '../src/mediaEdge/speech/piper.js';
import { speechVenvPython } from '../src/mediaEdge/speech/speechVenv.js';
import { runBenchmark } from './support/environment.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

// Ten words each, one sentence.
const LINES = [
  'Can you please confirm the date of your next appointment?',
  'I am calling from the clinic about your recent visit.',
  'Please tell me your full name as it appears there.',
  'Thank you, I have noted that and will call back.',
  'Is this still a good time to talk with you?',
  'Your delivery is scheduled for Tuesday between nine and noon.',
];

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Clock ticks of user + system CPU of a process so far (Linux). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function measure(synthesizer: SpeechSynthesizer, text: string): Promise<{ firstMs: number; totalMs: number; audioS: number }> {
  const started = performance.now();
  let firstMs = Number.NaN;
  let frames = 0;
  for await (const frame of synthesizer.synthesize(text)) {
    void frame;
    if (frames++ === 0) firstMs = performance.now() - started;
  }
  return { firstMs, totalMs: performance.now() - started, audioS: (frames * FRAME_SAMPLES) / SAMPLE_RATE };
}

async function run(name: string, synthesizer: SpeechSynthesizer, pid?: () => number | undefined): Promise<void> {
  const loadStarted = performance.now();
  await synthesizer.warmUp();
  const loadMs = performance.now() - loadStarted;
  const first: number[] = [];
  const rtf: number[] = [];
  const cpuMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const line of LINES) {
      // A word that differs per round keeps every line new to what the engine kept.
      const text = `${line.slice(0, -1)}, ${['friend', 'madam', 'sir', 'again', 'today', 'now'][round % 6]}${line.slice(-1)}`;
      const worker = pid?.();
      const ticks = worker ? cpuTicks(worker) : 0;
      const { firstMs, totalMs, audioS } = await measure(synthesizer, text);
      if (worker) cpuMs.push(((cpuTicks(worker) - ticks) * 1000) / 100);
      first.push(firstMs);
      rtf.push(totalMs / 1000 / audioS);
    }
  }
  const cpu = cpuMs.length ? `, worker CPU per line p50 ${percentile(cpuMs, 50).toFixed(0)} ms` : '';
  console.log(
    `${name.padEnd(9)} warm-up ${loadMs.toFixed(0).padStart(5)} ms; first audio of a 10-word line p50 ${percentile(first, 50).toFixed(0)} ms, p90 ${percentile(first, 90).toFixed(0)} ms; RTF p50 ${percentile(rtf, 50).toFixed(3)}${cpu} (${first.length} lines)`,
  );
  await synthesizer.close();
}

runBenchmark(async () => {
  // Other work on the machine slows every figure here: the load says how much there was.
  console.log(`${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const piper = new PiperSynthesizer({ python: speechVenvPython() });
  await run('piper', piper, () => piper.pid);
  await run('festival', new FestivalSynthesizer());
});
