// What the cloud speech adapters and their fallback cost, against the local fakes of
// Deepgram and ElevenLabs (test/support/): the adapters' own overhead (a WebSocket to
// 127.0.0.1, no vendor time), and what a failing vendor adds to a call's turn before the
// offline engine answers (docs/speech.md, "When a cloud engine fails during a call").
//
//   npx tsx bench/cloudSpeechFallback.ts
//
// 1. Recognition, a Festival-spoken answer written into a prewarmed session, then finish()
//    → text: Deepgram (the fake) answering; Deepgram closing every stream mid-way (one
//    retry, then pocketsphinx); Deepgram never answering (two answer timeouts, then
//    pocketsphinx); pocketsphinx alone for comparison.
// 2. Synthesis, a short line to its first frame and to its last: ElevenLabs (the fake)
//    answering; closing every stream mid-line (one retry, then Festival: the first frames
//    are the two cut-off starts, the whole line ends with Festival's); Festival alone.
//
// Knobs: BENCH_ROUNDS (5); SPEECH_CLOUD_ANSWER_TIMEOUT_MS for the silent case (1000 here).
import { sliceFrames } from '../src/mediaEdge/audio/frames.js';
import type { AnswerHint, SpeechRecognizer, SpeechSynthesizer } from '../src/mediaEdge/speech/interfaces.js';
import { createSpeechEngines } from '../src/mediaEdge/speech/speechEngines.js';
import { FakeDeepgram } from '../test/support/fakeDeepgram.js';
import { FakeElevenLabs } from '../test/support/fakeElevenLabs.js';
import { onLine, spoken } from '../test/support/spokenAudio.js';
import { runBenchmark } from './support/environment.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ANSWER_TIMEOUT_MS = process.env.SPEECH_CLOUD_ANSWER_TIMEOUT_MS ?? '1000';
const out = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function finishMs(recognizer: SpeechRecognizer, audio: Int16Array, hint: AnswerHint): Promise<{ ms: number; text: string }> {
  const session = recognizer.start({ hint });
  await new Promise((resolve) => setTimeout(resolve, 300)); // opened while the prompt plays
  for (const frame of sliceFrames(onLine(audio, 200, 300))) session.write(frame);
  const started = performance.now();
  const { text } = await session.finish();
  return { ms: performance.now() - started, text };
}

/** Time to the first frame, and to the whole line (every frame out of the engine, not paced). */
async function lineMs(synthesizer: SpeechSynthesizer, text: string): Promise<{ first: number; whole: number }> {
  const started = performance.now();
  let first = Number.NaN;
  for await (const frame of synthesizer.synthesize(text, { call: {} })) {
    if (Number.isNaN(first)) first = performance.now() - started;
    void frame;
  }
  return { first, whole: performance.now() - started };
}

runBenchmark(async () => {
  const deepgram = await FakeDeepgram.start('bench');
  const elevenLabs = await FakeElevenLabs.start('bench');
  deepgram.transcripts = ['yes that is correct'];
  const engines = createSpeechEngines({
    STT_PROVIDER: 'deepgram',
    DEEPGRAM_API_KEY: 'bench',
    DEEPGRAM_BASE_URL: deepgram.baseUrl,
    TTS_PROVIDER: 'elevenlabs',
    ELEVENLABS_API_KEY: 'bench',
    ELEVENLABS_BASE_URL: elevenLabs.baseUrl,
    SPEECH_CLOUD_ANSWER_TIMEOUT_MS: ANSWER_TIMEOUT_MS,
  });
  await engines.warmUp();
  try {
    out(`Cloud speech adapters and fallback, against local fakes (${ROUNDS} rounds; answer timeout ${ANSWER_TIMEOUT_MS} ms)\n`);
    const answer = await spoken('Yes, that is correct.');
    const hint: AnswerHint = { expect: 'yes_no' };
    const offline = createSpeechEngines({});
    await offline.warmUp();
    const cases: [string, () => SpeechRecognizer, FakeDeepgram['behaviour']][] = [
      ['deepgram (fake) answering', () => engines.forCall(() => undefined).recognizer, 'normal'],
      ['deepgram closing mid-stream → retry → pocketsphinx', () => engines.forCall(() => undefined).recognizer, 'close_mid_stream'],
      ['deepgram silent → 2 answer timeouts → pocketsphinx', () => engines.forCall(() => undefined).recognizer, 'silent'],
      ['pocketsphinx alone', () => offline.recognizer, 'normal'],
    ];
    out('Recognition: finish() → text (a fresh call each round, so every failover is a first one)');
    for (const [label, recognizer, behaviour] of cases) {
      deepgram.behaviour = behaviour;
      const runs = [];
      for (let i = 0; i < ROUNDS; i++) runs.push(await finishMs(recognizer(), answer, hint));
      out(`  ${label.padEnd(52)} p50 ${median(runs.map((r) => r.ms)).toFixed(0).padStart(5)} ms   heard "${runs[0].text}"`);
    }

    out('Synthesis: a line (a new one each round: Festival keeps rendered lines) → its first 20 ms frame, and all of it');
    const lines = ['Thank you, I have noted that.', 'Your appointment is on Monday.', 'Please hold the line.', 'We will call you back tomorrow.', 'Goodbye, and have a nice day.'];
    const synthesisCases: [string, () => SpeechSynthesizer, FakeElevenLabs['behaviour']][] = [
      ['elevenlabs (fake) answering', () => engines.forCall(() => undefined).synthesizer, 'normal'],
      ['elevenlabs closing mid-line → retry → festival', () => engines.forCall(() => undefined).synthesizer, 'close_mid_stream'],
      ['festival alone', () => offline.synthesizer, 'normal'],
    ];
    for (const [label, synthesizer, behaviour] of synthesisCases) {
      elevenLabs.behaviour = behaviour;
      const runs = [];
      for (let i = 0; i < ROUNDS; i++) runs.push(await lineMs(synthesizer(), `${lines[i % lines.length]}${' '.repeat(Math.floor(i / lines.length))}`));
      out(`  ${label.padEnd(52)} first frame p50 ${median(runs.map((r) => r.first)).toFixed(0).padStart(5)} ms   whole line p50 ${median(runs.map((r) => r.whole)).toFixed(0).padStart(5)} ms`);
    }
    await offline.close();
  } finally {
    await engines.close();
    await Promise.all([deepgram.close(), elevenLabs.close()]);
  }
});
