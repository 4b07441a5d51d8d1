// The speech half of the media edge, offline engines, short utterances (docs/media-edge.md):
//
//   npx tsx bench/speech.ts
//
// 1. TTS time to the first 20 ms frame of a short line: the long-lived Festival process
//    (what the edge uses), a text2wave process per line (for comparison: time to a complete
//    file, which is when its first sample can be read), and espeak-ng.
// 2. STT finalisation: a Festival-spoken answer is streamed into a recognition session at
//    real time (20 ms per frame, as a call delivers it), then the session is finished; the
//    figure is finish() → text, with the session started before the audio (prewarmed, what
//    the engine does) and started only at the end of the audio (cold). The endpointer's
//    hangover comes on top: speech end → text = 500 ms + this.
// 3. Turn latency through the conversation engine on a 20 ms loopback channel: the caller's
//    speech ends → the first frame of the agent's next line (hangover, recognition, synthesis
//    and pacing; no network, no workflow round trip), with each endpointer (energy, silero).
// 4. Voice activity (Silero VAD, ENDPOINTER=silero): model load, CPU and wall time per 32 ms
//    window (on the main thread: onnxruntime-node runs synchronously), and how each
//    endpointer takes the answer set and white noise at speech level.
//
// Knobs: BENCH_ROUNDS (3): rounds over the utterance set; BENCH_TURNS (6);
// BENCH_PARTS (tts,stt,turns,vad): which parts to run.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { FRAME_MS } from '../src/mediaEdge/media/channel.js';
import { Endpointer, type SpeechEndpointer } from '../src/mediaEdge/audio/endpointing.js';
import { sliceFrames } from '../src/mediaEdge/audio/frames.js';
import { SileroVadModel, VAD_WINDOW_SAMPLES } from '../src/mediaEdge/audio/sileroVad.js';
import { VoiceEndpointer } from '../src/mediaEdge/audio/voiceEndpointing.js';
import { ConversationEngine } from '../src/mediaEdge/conversation/engine.js';
import { EspeakSynthesizer } from '../src/mediaEdge/speech/espeak.js';
import { FestivalSynthesizer } from '../src/mediaEdge/speech/festival.js';
import type { AnswerHint, SpeechSynthesizer } from '../src/mediaEdge/speech/interfaces.js';
import { PocketsphinxRecognizer } from '../src/mediaEdge/speech/pocketsphinx.js';
import { LoopbackChannel, whiteNoise } from '../test/support/loopbackChannel.js';
import { onLine, spoken } from '../test/support/spokenAudio.js';
import { runBenchmark } from './support/environment.js';
import { out, quantile } from './support/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TURNS = Number(process.env.BENCH_TURNS ?? 6);
const PARTS = new Set((process.env.BENCH_PARTS ?? 'tts,stt,turns,vad').split(',').map((p) => p.trim()));

const LINES = ['Thank you.', 'What is your date of birth?', 'Can you confirm your full name, please?', 'Please hold while I check.', 'Is that correct?'];

const ANSWERS: { text: string; expected: string; hint: AnswerHint }[] = [
  { text: 'Yes, that is correct.', expected: 'yes that is correct', hint: { expect: 'yes_no' } },
  { text: 'No.', expected: 'no', hint: { expect: 'yes_no' } },
  { text: 'one nine eight five zero four zero three', expected: 'one nine eight five zero four zero three', hint: { expect: 'digits' } },
  { text: 'april third nineteen eighty five', expected: 'april third nineteen eighty five', hint: { expect: 'date' } },
  { text: 'My name is Jane Doe.', expected: 'my name is jane doe', hint: { expect: 'name', phrases: ['Jane Doe', 'John Smith', 'Maria Garcia'] } },
  { text: 'my name is john smith', expected: 'my name is john smith', hint: { expect: 'name' } },
  { text: 'I would like to reschedule my appointment', expected: 'i would like to reschedule my appointment', hint: { expect: 'free' } },
];

const now = () => performance.now();
const summary = (label: string, values: number[]) =>
  out(`  ${label.padEnd(52)} p50 ${quantile(values, 0.5).toFixed(1).padStart(7)} ms   p95 ${quantile(values, 0.95).toFixed(1).padStart(7)} ms   (n=${values.length})`);

async function firstFrameMs(synthesizer: SpeechSynthesizer, text: string): Promise<number> {
  const started = now();
  let first = Number.NaN;
  for await (const frame of synthesizer.synthesize(text)) {
    if (Number.isNaN(first)) first = now() - started;
    void frame;
  }
  return first;
}

async function text2waveMs(text: string, dir: string): Promise<number> {
  const input = path.join(dir, 'line.txt');
  writeFileSync(input, text);
  const started = now();
  await promisify(execFile)('text2wave', ['-o', path.join(dir, 'line.wav'), input]);
  return now() - started;
}

async function measureSynthesis(): Promise<void> {
  out('TTS: time to the first 20 ms frame of a short line');
  const festival = new FestivalSynthesizer();
  const warmStart = now();
  await festival.warmUp();
  out(`  festival process start with the voice loaded: ${(now() - warmStart).toFixed(0)} ms (once per edge)`);
  const espeak = new EspeakSynthesizer();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-speech-'));
  const figures = { festival: [] as number[], text2wave: [] as number[], espeak: [] as number[] };
  try {
    for (let round = 0; round < ROUNDS * 2; round++) {
      for (const line of LINES) {
        figures.festival.push(await firstFrameMs(festival, line));
        figures.text2wave.push(await text2waveMs(line, dir));
        figures.espeak.push(await firstFrameMs(espeak, line));
      }
    }
  } finally {
    await festival.close();
    rmSync(dir, { recursive: true, force: true });
  }
  summary('festival, long-lived process (the default)', figures.festival);
  summary('text2wave, one process per line', figures.text2wave);
  summary('espeak-ng, one process per line', figures.espeak);
}

async function measureRecognition(): Promise<void> {
  out('\nSTT: finish() → text after a short answer streamed at real time');
  const recognizer = new PocketsphinxRecognizer();
  await recognizer.warmUp();
  const audio = await Promise.all(ANSWERS.map(async (a) => sliceFrames(onLine(await spoken(a.text), 150, 300))));
  const figures = { grammarWarm: [] as number[], grammarCold: [] as number[], lmWarm: [] as number[], lmCold: [] as number[] };
  let correct = 0;
  let total = 0;
  const misheard: string[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, answer] of ANSWERS.entries()) {
        const general = answer.hint.expect === 'free' || (answer.hint.expect === 'name' && !answer.hint.phrases);
        // Prewarmed: the session opens before the audio, as during a prompt.
        const session = recognizer.start({ hint: answer.hint });
        for (const frame of audio[i]) {
          session.write(frame);
          await sleep(FRAME_MS);
        }
        let started = now();
        const { text } = await session.finish();
        (general ? figures.lmWarm : figures.grammarWarm).push(now() - started);
        total++;
        if (text === answer.expected) correct++;
        else misheard.push(`"${answer.text}" (${answer.hint.expect}) → "${text}"`);
        // Cold: the process only starts once the utterance is over.
        started = now();
        const cold = recognizer.start({ hint: answer.hint });
        for (const frame of audio[i]) cold.write(frame);
        await cold.finish();
        (general ? figures.lmCold : figures.grammarCold).push(now() - started);
      }
    }
  } finally {
    await recognizer.close();
  }
  summary('grammar (yes/no, digits, date, name list), prewarmed', figures.grammarWarm);
  summary('grammar, started at the end of speech', figures.grammarCold);
  summary('general language model, prewarmed', figures.lmWarm);
  summary('general language model, started at the end', figures.lmCold);
  out(`  exact transcripts: ${correct}/${total}${misheard.length ? `; misheard: ${[...new Set(misheard)].join('; ')}` : ''}`);
}

async function measureTurns(kind: 'energy' | 'silero'): Promise<void> {
  out(`\nTurn latency in the engine (loopback channel, ${kind} endpointer): caller speech end → first frame of the next agent line`);
  const synthesizer = new FestivalSynthesizer();
  const recognizer = new PocketsphinxRecognizer();
  await Promise.all([synthesizer.warmUp(), recognizer.warmUp()]);
  const model = kind === 'silero' ? await SileroVadModel.load() : undefined;
  const channel = new LoopbackChannel({ backgroundDbfs: -65 });
  const engine = new ConversationEngine({ channel, synthesizer, recognizer, endpointer: model ? new VoiceEndpointer(model.classifier()) : undefined });
  const recognition: number[] = [];
  try {
    for (let turn = 0; turn < TURNS; turn++) {
      const answer = ANSWERS[turn % ANSWERS.length];
      const asking = engine.ask('Please answer now.', answer.hint, { noSpeechTimeoutMs: 5000 });
      await channel.agentFrames(1);
      await channel.drained();
      await sleep(200);
      await channel.callerSays(await spoken(answer.text));
      const heard = await asking;
      if (heard.kind === 'utterance') recognition.push(heard.recognitionMs);
      await engine.speak('Thank you.');
    }
  } finally {
    engine.close();
    channel.close();
    await Promise.all([synthesizer.close(), recognizer.close(), model?.close()]);
  }
  summary('speech end → text (hangover + finalisation)', recognition);
  summary('speech end → first agent frame', engine.turnLatencies.map((t) => t.turnMs));
}

/** Every event an endpointer decides on `samples`, frame by frame. */
async function endpointEvents(endpointer: SpeechEndpointer, samples: Int16Array): Promise<string[]> {
  const found: string[] = [];
  for (const [i, frame] of sliceFrames(samples).entries()) {
    const event = await endpointer.push(frame, (i + 1) * FRAME_MS);
    if (event) found.push(event.type);
  }
  return found;
}

async function measureVoiceActivity(): Promise<void> {
  out('\nVoice activity (Silero VAD, one 32 ms window of 16 kHz per run)');
  const loadStart = now();
  const model = await SileroVadModel.load();
  out(`  model load: ${(now() - loadStart).toFixed(0)} ms (once per edge)`);
  try {
    // Cost per window over speech and noise alike, one call's classifier.
    const answers = await Promise.all(ANSWERS.map((a) => spoken(a.text)));
    const audio = new Int16Array([...answers.flatMap((a) => [...onLine(a, 300, 300, -50)]), ...whiteNoise(10 * 16_000, -30, 9)]);
    const classifier = model.classifier();
    const wall: number[] = [];
    const cpuStart = process.cpuUsage();
    let windows = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (let at = 0; at + VAD_WINDOW_SAMPLES <= audio.length; at += VAD_WINDOW_SAMPLES) {
        const started = now();
        await classifier.speechProbability(audio.subarray(at, at + VAD_WINDOW_SAMPLES));
        wall.push(now() - started);
        windows++;
      }
    }
    const cpu = process.cpuUsage(cpuStart);
    const cpuPerWindow = (cpu.user + cpu.system) / 1000 / windows;
    out(`  ${'wall time per window (run and its setImmediate hop)'.padEnd(52)} p50 ${quantile(wall, 0.5).toFixed(3)} ms   p95 ${quantile(wall, 0.95).toFixed(3)} ms   (n=${windows})`);
    out(`  CPU per window: ${cpuPerWindow.toFixed(3)} ms; one call (31.25 windows/s): ${((cpuPerWindow * 31.25) / 10).toFixed(2)} % of a core`);

    // What each endpointer makes of the answers (one utterance each) and of noise at speech level (nothing).
    for (const [label, make] of [
      ['energy', () => new Endpointer()],
      ['silero', () => new VoiceEndpointer(model.classifier())],
    ] as const) {
      let single = 0;
      for (const answer of answers) if ((await endpointEvents(make(), onLine(answer, 500, 800, -60))).join() === 'speech_start,speech_end') single++;
      let falseStarts = 0;
      const levels = [-40, -30, -20, -15];
      for (const level of levels) if ((await endpointEvents(make(), onLine(whiteNoise(3 * 16_000, level, 11), 1000, 0))).length > 0) falseStarts++;
      out(`  ${label.padEnd(7)} answers heard as one utterance: ${single}/${answers.length}; white noise (−40…−15 dBFS) heard as speech: ${falseStarts}/${levels.length}`);
    }
  } finally {
    await model.close();
  }
}

runBenchmark(async () => {
  out(`Speech benchmark (offline engines; ${ROUNDS} rounds, ${TURNS} turns; parts ${[...PARTS].join(', ')})\n`);
  if (PARTS.has('tts')) await measureSynthesis();
  if (PARTS.has('stt')) await measureRecognition();
  if (PARTS.has('turns')) {
    await measureTurns('energy');
    await measureTurns('silero');
  }
  if (PARTS.has('vad')) await measureVoiceActivity();
});
