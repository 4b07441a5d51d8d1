// The labelled set of voicemail detection (bench/voicemailDetection.ts, and a small slice in
// test/mediaEdge/answeringMachine.test.ts): what a callee's line sounds like in the first
// seconds after the answer, for voicemail greetings (personal, carrier defaults, short and
// long; with and without a beep) and for people picking up ("Hello?", "Yes, this is Jane",
// a silent pause then "hello").
//
// Each text is spoken by Festival (text2wave, kal_diphone) and espeak-ng at three speeds,
// put on a line (the silence before the callee speaks, the beep, the silence after, faint
// line noise on some), and sent through the telephone band (300–3400 Hz, 8 kHz G.711 μ-law
// and back to 16 kHz, test/support/telephoneBand.ts) as a phone call arrives at the edge.
// The speech and the beeps (sox) are cached as WAV files in the temporary folder, made
// again when missing; nothing is committed.
//
//   npx tsx bench/voicemailSet.ts    renders the whole set into the cache and prints its size
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SAMPLE_RATE } from '../src/mediaEdge/media/channel.js';
import { joinFrames } from '../src/mediaEdge/audio/frames.js';
import { readWav, toMono, writeWav } from '../src/mediaEdge/audio/wav.js';
import { EspeakSynthesizer } from '../src/mediaEdge/speech/espeak.js';
import { trimEdgeSilence } from '../src/mediaEdge/speech/speakableText.js';
import { whiteNoise } from '../test/support/loopbackChannel.js';
import { festivalLine, synthesizeAll } from './speechAccuracy/voices.js';
import { overTelephone } from '../test/support/telephoneBand.js';

const run = promisify(execFile);

export const CACHE_DIR = path.join(os.tmpdir(), 'voicemail-set-cache');

export type Label = 'human' | 'machine';
export type Voice = 'festival' | 'espeak-ng';
export type Speed = 'slow' | 'normal' | 'fast';

/** Voicemail greetings: personal ones, carriers' defaults, short and long. */
export const GREETINGS: readonly string[] = [
  "Hi, you've reached Sam's phone. I can't take your call right now, please leave a message after the tone.",
  'The person you are trying to reach is not available. At the tone, please record your message. When you have finished recording, you may hang up.',
  'Hey, this is Mike. Leave a message.',
  "You have reached the voicemail of Jennifer Lopez. I'm away from my desk. Please leave your name and number and I will return your call.",
  'The number you have dialed is not available. Please leave a message after the beep.',
  "Hi, it's Anna. Sorry I missed you. Leave a message and I'll call you back.",
  'Please leave a message.',
  'Your call has been forwarded to an automatic voice message system. 5 5 5 0 1 2 3 is not available. At the tone, please record your message.',
  "Hello, you've reached the Johnson family. We can't come to the phone right now. Please leave a message after the beep and we'll get back to you as soon as we can.",
  "This is Dr. Patel's office. Our office hours are Monday through Friday, nine to five. If this is an emergency, please hang up and dial 9 1 1.",
  "Hi, this is Chris. I'm not available. Leave a message.",
  'The Vodafone customer you are calling is not available. Please try later, or leave a message after the tone.',
  "Hey! You know what to do.",
  "Hello. I'm not here right now. Please leave a message.",
  "Thank you for calling. Nobody is available to take your call. Please leave your name, number and a brief message, and we'll return your call.",
  "Hi, you've reached David Miller at Acme Corporation. I'm either on the phone or away from my desk. Please leave a message.",
  'The mailbox of 4 1 5 5 5 5 0 1 9 9 is full and cannot accept any messages at this time. Goodbye.',
  "It's Lisa, leave a message after the beep.",
  'Welcome to the voice mail service. The subscriber you have called is not available. Please leave a message after the tone.',
  "Hi there, this is Tom's phone. I'm probably out walking the dog. Leave me a message and I'll get back to you.",
  "Hello, you have reached Grace. I'm on vacation until Monday the fourteenth. For urgent matters, please call my office.",
  'Sorry, the person you are calling cannot take your call. Record your message after the tone.',
  "Hi. Leave a message.",
  "Good morning, this is Robert Chen. I am currently in meetings all day. Please leave a detailed message and I'll respond by tomorrow.",
  "You've reached Maria. Text me instead, I don't check voicemail.",
  'The subscriber cannot be reached. Please try again later.',
  "Hi, this is Kevin from Blue Sky Plumbing. We're out on a job. Leave your address and the problem and we'll call you back today.",
  'Please leave your message for 2 0 2 5 5 5 0 1 4 7 after the tone.',
  "Yo, it's Danny. Do your thing at the beep.",
  "Thank you for calling Riverside Dental. Our office is currently closed. Please leave a message and we'll call you on the next business day.",
  "Hi, you've reached Emily and Jack. We're not home. Leave a message!",
  'The customer you are calling is unavailable. To leave a callback number, press 1. Otherwise, please leave a message after the tone.',
  "This is Karen. I'm in a meeting. Leave a message.",
  "Hello, you have reached the voicemail box of extension 2 1 4. Please leave a message after the tone and I'll return your call.",
  "Hi, Ben here. Can't talk right now. Leave your name and number.",
  'At the tone, please record your message. When you are finished, hang up or press pound for more options.',
  "You've reached the after hours line of Greenfield Property Management. For maintenance emergencies, please call 5 5 5 0 1 9 8. Otherwise leave a message.",
  "Hello, it's Olivia. I'm driving right now. I'll call you back.",
  'Sorry I missed your call. Please leave a message.',
  "Hi, this is Professor Wright. I'm away from the office this week with limited access to voicemail. Please send me an email instead.",
];

/** How people pick up: the opening, and how long they wait before speaking (a silent pause then "hello"). */
export const OPENINGS: readonly { text: string; leadMs?: number }[] = [
  { text: 'Hello?' },
  { text: 'Yes, this is Jane.' },
  { text: "Hello, who's calling?" },
  { text: 'Hello?', leadMs: 1800 },
  { text: 'Hi.' },
  { text: 'Speaking.' },
  { text: 'Yeah?' },
  { text: 'Hello, this is Mark.' },
  { text: 'Hi, who is this?' },
  { text: 'Hello.', leadMs: 1500 },
  { text: 'Yes?' },
  { text: 'Good afternoon.' },
  { text: 'Jane speaking.' },
  { text: 'Hello, Smith residence.' },
  { text: 'Hi there.' },
  { text: 'Yes, hello?', leadMs: 1200 },
  { text: 'Hey.' },
  { text: 'This is Tom.' },
  { text: 'Hello, Sarah here.' },
  { text: 'Who is it?' },
  { text: 'Hi, can I help you?' },
  { text: 'Hello.', leadMs: 2000 },
  { text: 'Yes, speaking.' },
  { text: 'Morning.' },
  { text: 'Hello, this is Anna.' },
  { text: 'Yeah, hello?' },
  { text: 'Hi, who am I speaking to?' },
  { text: 'Hello?', leadMs: 2500 },
  { text: 'Uh, hello?' },
  { text: 'Good morning, Dave speaking.' },
  { text: 'Yes, can I help you?' },
  { text: "Hello, what's up?" },
  { text: 'Hi, yes?', leadMs: 1000 },
  { text: 'Hello, Peter here.' },
  { text: 'Hey, who is this?' },
  { text: 'Evening.' },
  { text: 'Hello, yes.' },
  { text: 'This is Maria.' },
  { text: 'Hi, hello?' },
  { text: 'Yes, go ahead.' },
];

export interface LabelledLine {
  id: string;
  label: Label;
  text: string;
  voice: Voice;
  speed: Speed;
  /** Silence on the line before the callee speaks, ms. */
  leadMs: number;
  /** The beep's frequency after a greeting, when it has one. */
  beepHz?: number;
  /** Line noise, dBFS (none when undefined). */
  noiseDbfs?: number;
  /** Index of the text in its list: the tuning half is the even ones, the held-out half the odd ones. */
  textIndex: number;
}

const VOICES: readonly Voice[] = ['festival', 'espeak-ng'];
const SPEEDS: readonly Speed[] = ['slow', 'normal', 'fast'];
const BEEPS = [1000, 850, 1400, 440] as const;
const NOISES = [undefined, -62, -55] as const;
/** The greeting's last word → the beep. */
const BEEP_GAP_MS = 500;
const BEEP_MS = 400;
/** Silence after it all: a machine records, a person waits for an answer. */
const TRAIL_MS = 4000;

/**
 * The set: every greeting and every opening by both voices (2 × 40 of each), the speed
 * turning with the text, a beep after every other greeting, the lead silence and the
 * line noise varied.
 */
export function labelledLines(): LabelledLine[] {
  const lines: LabelledLine[] = [];
  GREETINGS.forEach((text, i) => {
    VOICES.forEach((voice, v) => {
      const n = i * 2 + v;
      lines.push({
        id: `machine-${i}-${voice}`,
        label: 'machine',
        text,
        voice,
        speed: SPEEDS[(i + v) % 3],
        leadMs: [300, 600, 900, 1200][n % 4],
        ...(n % 2 === 0 ? { beepHz: BEEPS[(n / 2) % BEEPS.length] } : {}),
        ...(NOISES[n % 3] !== undefined ? { noiseDbfs: NOISES[n % 3] } : {}),
        textIndex: i,
      });
    });
  });
  OPENINGS.forEach(({ text, leadMs }, i) => {
    VOICES.forEach((voice, v) => {
      const n = i * 2 + v;
      lines.push({
        id: `human-${i}-${voice}`,
        label: 'human',
        text,
        voice,
        speed: SPEEDS[(i + v) % 3],
        leadMs: leadMs ?? [200, 400, 600, 800][n % 4],
        ...(NOISES[n % 3] !== undefined ? { noiseDbfs: NOISES[n % 3] } : {}),
        textIndex: i,
      });
    });
  });
  return lines;
}

/** What each speed means per voice. */
const FESTIVAL_STRETCH: Record<Speed, number> = { slow: 1.2, normal: 1, fast: 0.8 };
const ESPEAK_WPM: Record<Speed, number> = { slow: 140, normal: 175, fast: 210 };

const renderFestival = (text: string, speed: Speed) => festivalLine(text, FESTIVAL_STRETCH[speed], 60_000);
const renderEspeak = (text: string, speed: Speed) => synthesizeAll(new EspeakSynthesizer({ wordsPerMinute: ESPEAK_WPM[speed] }), text);

/** Reads a cached WAV, or makes it and caches it (written aside and renamed: a parallel run never reads half a file). */
async function cached(name: string, make: () => Promise<Int16Array>): Promise<Int16Array> {
  const file = path.join(CACHE_DIR, name);
  if (existsSync(file)) return toMono(readWav(readFileSync(file)));
  const samples = await make();
  mkdirSync(CACHE_DIR, { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  writeFileSync(partial, writeWav({ sampleRate: SAMPLE_RATE, channels: 1, samples }));
  renameSync(partial, file);
  return samples;
}

/** The words alone (no silence around them). */
function speech(voice: Voice, speed: Speed, text: string): Promise<Int16Array> {
  const key = createHash('sha256').update(JSON.stringify([voice, speed, text])).digest('hex').slice(0, 16);
  return cached(`${voice}-${speed}-${key}.wav`, async () => {
    const samples = voice === 'festival' ? await renderFestival(text, speed) : await renderEspeak(text, speed);
    const trimmed = trimEdgeSilence(samples, 0, 0).slice();
    if (trimmed.length === 0) throw new Error(`${voice} (${speed}) made no audio for "${text}"`);
    return trimmed;
  });
}

/** A voicemail beep made by sox: a sine at `hz`, BEEP_MS long, at half scale. */
function beep(hz: number): Promise<Int16Array> {
  return cached(`beep-${hz}.wav`, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'voicemail-beep-'));
    try {
      const file = path.join(dir, 'beep.wav');
      await run('sox', ['-n', '-r', String(SAMPLE_RATE), '-b', '16', '-c', '1', file, 'synth', String(BEEP_MS / 1000), 'sine', String(hz), 'vol', '0.5'], { timeout: 20_000 });
      return toMono(readWav(readFileSync(file)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

const samplesOf = (ms: number) => Math.round((ms * SAMPLE_RATE) / 1000);

/** The line's audio from the answer on (16 kHz, telephone band). */
export async function lineAudio(line: LabelledLine): Promise<Int16Array> {
  const words = await speech(line.voice, line.speed, line.text);
  const tone = line.beepHz !== undefined ? await beep(line.beepHz) : undefined;
  const parts: Int16Array[] = [new Int16Array(samplesOf(line.leadMs)), words];
  if (tone) parts.push(new Int16Array(samplesOf(BEEP_GAP_MS)), tone);
  parts.push(new Int16Array(samplesOf(TRAIL_MS)));
  const audio = joinFrames(parts);
  if (line.noiseDbfs !== undefined) {
    const noise = whiteNoise(audio.length, line.noiseDbfs, line.textIndex + 1);
    for (let i = 0; i < audio.length; i++) audio[i] = Math.max(-32768, Math.min(32767, audio[i] + noise[i]));
  }
  return overTelephone(audio);
}

/** Where the beep begins in the line's audio (ms from the answer), when it has one. */
export async function beepStartMs(line: LabelledLine): Promise<number | undefined> {
  if (line.beepHz === undefined) return undefined;
  const words = await speech(line.voice, line.speed, line.text);
  return line.leadMs + (words.length * 1000) / SAMPLE_RATE + BEEP_GAP_MS;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const lines = labelledLines();
  const started = performance.now();
  for (const line of lines) await lineAudio(line);
  const count = (label: Label) => lines.filter((l) => l.label === label).length;
  console.log(`${lines.length} lines (${count('machine')} machine, ${count('human')} human) in ${CACHE_DIR}, ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
