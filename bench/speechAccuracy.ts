// Accuracy of the offline recognisers on a labelled set, wideband and over the telephone
// (issue 24, "Accuracy benchmark"; docs/speech.md, "Accuracy"):
//
//   npx tsx bench/speechAccuracy.ts [--engines a,b] [--voices festival,espeak-ng,piper]
//        [--speeds normal,fast] [--bands wideband,telephone] [--expects yes_no,free] [--limit N]
//        [--paced N] [--calls 5] [--turns 16] [--whisper-workers N] [--report results.json,...]
//
// The set (bench/speechAccuracy/utterances.json: 112 utterances over every ask `expect`, with
// the answers the answer readers must give) is spoken by every offline voice here at two
// speeds (cached under bench/speechAccuracy/.audio/), and each utterance is heard in two
// bands: 16 kHz as spoken, and telephone band (300–3400 Hz, 8 kHz G.711 μ-law and back).
// Each engine configuration (bench/speechAccuracy/engines.ts) hears it through the
// SpeechRecognizer interface with the hint the conversation engine would give.
//
// 1. Matrix: every utterance, one at a time, written whole into a session opened just
//    before, then finish(). Reported: exact answers after the answer readers (constrained
//    expects), word error rate (free speech), finish() → text (p50/p95; written whole, so a
//    streaming engine such as pocketsphinx decodes everything after the end: an upper
//    bound for it), CPU per utterance (this process and its children, from /proc).
// 2. Paced: --paced N utterances per expect, telephone band, streamed at real time (20 ms
//    a frame, as a call delivers them) one call at a time: finish() → text as a call sees it.
// 3. Concurrent: --calls calls at once, each --turns answers (telephone band, paced, a
//    session opened during the prompt as the engine does), for today's defaults and for
//    the recommended engine per expect: finish() → text p50/p95 against the 500 ms target.
//
// Options subset the run (--limit N: the first N utterances of each expect). --report
// prints the tables of saved runs (merged), which lets engines run in separate processes.
// Each run's raw results go to bench/speechAccuracy/.results/ (git-ignored).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { FRAME_MS, type PcmFrame } from '../src/mediaEdge/media/channel.js';
import { sliceFrames } from '../src/mediaEdge/audio/frames.js';
import type { AnswerHint, SpeechRecognizer } from '../src/mediaEdge/speech/interfaces.js';
import { ENGINE_IDS, ENGINES, type EngineId } from './speechAccuracy/engines.js';
import { answerIsExact, EXPECTS, loadUtterances, wordErrorRate, wordErrors, type BenchExpect, type Utterance } from './speechAccuracy/scoring.js';
import { BANDS, inBand, openVoices, SPEEDS, utteranceAudio, VOICE_NAMES, type Band, type BenchVoice, type Speed } from './speechAccuracy/voices.js';
import { treeCpuSeconds } from './support/processCpu.js';
import { runBenchmark } from './support/environment.js';
import { out, quantile } from './support/stats.js';

const RESULTS_DIR = fileURLToPath(new URL('./speechAccuracy/.results/', import.meta.url));
const TARGETS = { wer: 0.08, exact: 0.97, concurrentP50Ms: 500 };
/** Scores closer than this count as a tie, which the lower latency and CPU then decide. */
const TIE = 0.01;

interface Recognition {
  engine: EngineId;
  voice: string;
  speed: Speed;
  band: Band;
  id: string;
  expect: BenchExpect;
  transcript: string;
  busy: boolean;
  /** finish() → text. */
  latencyMs: number;
  exact?: boolean;
  errors?: number;
  words?: number;
}

interface CpuGroup {
  engine: EngineId;
  voice: string;
  speed: Speed;
  band: Band;
  utterances: number;
  cpuSeconds: number;
}

interface PacedLatency {
  engine: EngineId;
  band: Band;
  expect: BenchExpect;
  ms: number;
}

interface ConcurrentRun {
  plan: string;
  calls: number;
  whisperWorkers: number;
  engines: Partial<Record<BenchExpect, EngineId>>;
  latencies: { expect: BenchExpect; engine: EngineId; ms: number; exact?: boolean; errors?: number; words?: number }[];
}

interface Results {
  startedAt: string;
  machine: { cpus: number; loadAverageAtStart: number[]; loadAverageAtEnd?: number[] };
  voices: Record<string, Record<Speed, string>>;
  missing: Record<string, string>;
  recognitions: Recognition[];
  cpu: CpuGroup[];
  paced: PacedLatency[];
  concurrent: ConcurrentRun[];
}

// ---------- options ----------

function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

function listOption<T extends string>(name: string, all: readonly T[]): T[] {
  const given = option(name);
  if (!given) return [...all];
  const chosen = given.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = chosen.filter((c) => !(all as readonly string[]).includes(c));
  if (unknown.length) throw new Error(`--${name}: unknown ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return chosen as T[];
}

function numberOption(name: string, fallback: number): number {
  const given = option(name);
  if (given === undefined) return fallback;
  const value = Number(given);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number, got "${given}"`);
  return value;
}

// ---------- measuring ----------

const now = () => performance.now();
const log = (line: string) => process.stderr.write(`${line}\n`);
const cpuNow = () => treeCpuSeconds({ self: process.pid }).self;

function score(utterance: Utterance, transcript: string): Pick<Recognition, 'exact' | 'errors' | 'words'> {
  if (utterance.expect === 'free') return wordErrors(utterance.text, transcript);
  return { exact: answerIsExact(transcript, utterance) };
}

/** One utterance written whole into a session opened just before, then finish(). */
async function recogniseWhole(recognizer: SpeechRecognizer, hint: AnswerHint, frames: PcmFrame[]): Promise<{ text: string; busy: boolean; ms: number }> {
  const session = recognizer.start({ hint });
  for (const frame of frames) session.write(frame);
  const started = now();
  const result = await session.finish();
  return { text: result.text, busy: result.busy === true, ms: now() - started };
}

/** One utterance streamed at real time into a session opened `openedBeforeMs` earlier (the prompt), then finish(). */
async function recognisePaced(recognizer: SpeechRecognizer, hint: AnswerHint, frames: PcmFrame[], openedBeforeMs = 0): Promise<{ text: string; busy: boolean; ms: number }> {
  const session = recognizer.start({ hint });
  if (openedBeforeMs > 0) await sleep(openedBeforeMs);
  const began = now();
  let written = 0;
  while (written < frames.length) {
    // Frames due by now (a schedule, so timer lateness does not stretch the utterance).
    const due = Math.min(frames.length, Math.floor((now() - began) / FRAME_MS) + 1);
    for (; written < due; written++) session.write(frames[written]);
    if (written < frames.length) await sleep(FRAME_MS);
  }
  const started = now();
  const result = await session.finish();
  return { text: result.text, busy: result.busy === true, ms: now() - started };
}

interface AudioItem {
  utterance: Utterance;
  voice: string;
  speed: Speed;
  frames: Record<Band, PcmFrame[]>;
}

async function renderAll(voices: BenchVoice[], speeds: Speed[], bands: Band[], utterances: Utterance[]): Promise<AudioItem[]> {
  const items: AudioItem[] = [];
  for (const voice of voices) {
    for (const speed of speeds) {
      const started = now();
      for (const utterance of utterances) {
        const samples = await utteranceAudio(voice, speed, utterance.text);
        const frames = Object.fromEntries(bands.map((band) => [band, sliceFrames(inBand(samples, band))])) as Record<Band, PcmFrame[]>;
        items.push({ utterance, voice: voice.name, speed, frames });
      }
      log(`audio: ${voice.name} ${speed}: ${utterances.length} utterances ready in ${((now() - started) / 1000).toFixed(1)} s`);
    }
  }
  return items;
}

async function runMatrix(results: Results, engines: EngineId[], bands: Band[], items: AudioItem[], whisperWorkers: number | undefined): Promise<void> {
  for (const engineId of engines) {
    const config = ENGINES[engineId];
    const recognizer = await config.open({ whisperWorkers });
    if (typeof recognizer === 'string') {
      results.missing[engineId] = recognizer;
      log(`engine ${engineId}: not run: ${recognizer}`);
      continue;
    }
    try {
      for (const band of bands) {
        const groups = new Map<string, AudioItem[]>();
        for (const item of items.filter((i) => config.applies(i.utterance))) {
          const key = `${item.voice}\u0000${item.speed}`;
          groups.set(key, [...(groups.get(key) ?? []), item]);
        }
        for (const group of groups.values()) {
          const cpuBefore = cpuNow();
          const started = now();
          for (const item of group) {
            const heard = await recogniseWhole(recognizer, config.hint(item.utterance), item.frames[band]);
            results.recognitions.push({
              engine: engineId,
              voice: item.voice,
              speed: item.speed,
              band,
              id: item.utterance.id,
              expect: item.utterance.expect,
              transcript: heard.text,
              busy: heard.busy,
              latencyMs: heard.ms,
              ...score(item.utterance, heard.text),
            });
          }
          const cpuSeconds = cpuNow() - cpuBefore;
          results.cpu.push({ engine: engineId, voice: group[0].voice, speed: group[0].speed, band, utterances: group.length, cpuSeconds });
          log(`matrix: ${engineId} ${band} ${group[0].voice} ${group[0].speed}: ${group.length} utterances in ${((now() - started) / 1000).toFixed(1)} s`);
          saveResults(results);
        }
      }
      await runPaced(results, engineId, recognizer, items);
    } finally {
      await recognizer.close();
    }
  }
}

/** The first `perExpect` utterances of each expect, telephone band, voices and speeds taking turns. */
function pacedSelection(items: AudioItem[], perExpect: number, applies: (u: Utterance) => boolean): AudioItem[] {
  const chosen: AudioItem[] = [];
  const combos = [...new Set(items.map((i) => `${i.voice}\u0000${i.speed}`))];
  for (const expect of EXPECTS) {
    const ids = [...new Set(items.filter((i) => i.utterance.expect === expect && applies(i.utterance)).map((i) => i.utterance.id))].slice(0, perExpect);
    ids.forEach((id, n) => {
      const combo = combos[n % combos.length];
      const item = items.find((i) => i.utterance.id === id && `${i.voice}\u0000${i.speed}` === combo);
      if (item) chosen.push(item);
    });
  }
  return chosen;
}

let pacedPerExpect = 4;

async function runPaced(results: Results, engineId: EngineId, recognizer: SpeechRecognizer, items: AudioItem[]): Promise<void> {
  if (pacedPerExpect === 0 || !items.some((i) => 'telephone' in i.frames)) return;
  const config = ENGINES[engineId];
  const selection = pacedSelection(items, pacedPerExpect, config.applies);
  const started = now();
  for (const item of selection) {
    const heard = await recognisePaced(recognizer, config.hint(item.utterance), item.frames.telephone);
    results.paced.push({ engine: engineId, band: 'telephone', expect: item.utterance.expect, ms: heard.ms });
  }
  log(`paced: ${engineId}: ${selection.length} utterances in ${((now() - started) / 1000).toFixed(1)} s`);
}

/** Today's defaults: a grammar for constrained answers (and names with phrases), the general model for free speech. */
const TODAYS_DEFAULTS: Record<BenchExpect, EngineId> = {
  yes_no: 'pocketsphinx-grammar',
  digits: 'pocketsphinx-grammar',
  number: 'pocketsphinx-grammar',
  date: 'pocketsphinx-grammar',
  name: 'pocketsphinx-grammar',
  free: 'pocketsphinx-general',
};

/** A seeded generator (mulberry32), so every run pauses the same way. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function runConcurrent(
  results: Results,
  label: string,
  plan: Record<BenchExpect, EngineId>,
  items: AudioItem[],
  options: { calls: number; turns: number; whisperWorkers: number },
): Promise<void> {
  const usesPocketsphinx = Object.values(plan).some((e) => e.startsWith('pocketsphinx'));
  const usesWhisper = Object.values(plan).some((e) => e.startsWith('whisper'));
  // One recogniser per kind, as an edge has: Whisper in prompt mode grammar, where plain
  // Whisper is a hint without the expect (which gives no prompt).
  const pocketsphinx = usesPocketsphinx ? await ENGINES['pocketsphinx-grammar'].open({}) : undefined;
  const whisper = usesWhisper ? await ENGINES['whisper-prompt'].open({ whisperWorkers: options.whisperWorkers }) : undefined;
  try {
    for (const [name, r] of [['pocketsphinx', pocketsphinx], ['whisper', whisper]] as const) {
      if (typeof r === 'string') {
        results.missing[`concurrent ${label}`] = `${name}: ${r}`;
        log(`concurrent ${label}: not run: ${r}`);
        return;
      }
    }
    const hintFor = (engine: EngineId, u: Utterance): AnswerHint => (engine === 'whisper' ? { expect: 'free' } : ENGINES[engine].hint(u));
    const recognizerFor = (engine: EngineId) => (engine.startsWith('whisper') ? (whisper as SpeechRecognizer) : (pocketsphinx as SpeechRecognizer));
    const pool = items.filter((i) => 'telephone' in i.frames);
    const random = seeded(24);
    const run: ConcurrentRun = { plan: label, calls: options.calls, whisperWorkers: options.whisperWorkers, engines: { ...plan }, latencies: [] };
    const started = now();
    await Promise.all(
      Array.from({ length: options.calls }, async (_, call) => {
        await sleep(random() * 2000);
        for (let turn = 0; turn < options.turns; turn++) {
          const item = pool[Math.floor(random() * pool.length)];
          const engine = plan[item.utterance.expect];
          const prompt = 400 + random() * 1200;
          const heard = await recognisePaced(recognizerFor(engine), hintFor(engine, item.utterance), item.frames.telephone, prompt);
          run.latencies.push({ expect: item.utterance.expect, engine, ms: heard.ms, ...score(item.utterance, heard.text) });
          void call;
        }
      }),
    );
    results.concurrent.push(run);
    log(`concurrent ${label}: ${run.latencies.length} answers in ${((now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await Promise.all([pocketsphinx, whisper].map((r) => (r && typeof r !== 'string' ? r.close() : undefined)));
  }
}

// ---------- reporting ----------

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const ms = (x: number) => `${Math.round(x)}`;

interface Cell {
  n: number;
  exact?: number;
  wer?: number;
  busy: number;
}

function cell(rows: Recognition[]): Cell | undefined {
  if (rows.length === 0) return undefined;
  const busy = rows.filter((r) => r.busy).length;
  if (rows[0].expect === 'free') return { n: rows.length, wer: wordErrorRate(rows as { errors: number; words: number }[]), busy };
  return { n: rows.length, exact: rows.filter((r) => r.exact).length / rows.length, busy };
}

const showCell = (c: Cell | undefined) => (c ? `${c.wer !== undefined ? `WER ${pct(c.wer)}` : pct(c.exact!)}${c.busy ? ` (${c.busy} busy)` : ''}` : '–');

function table(header: string[], rows: string[][]): void {
  out(`| ${header.join(' | ')} |`);
  out(`|${header.map(() => '---').join('|')}|`);
  for (const row of rows) out(`| ${row.join(' | ')} |`);
}

function cpuPerUtterance(results: Results, match: (g: CpuGroup) => boolean): number | undefined {
  const groups = results.cpu.filter(match);
  const n = groups.reduce((s, g) => s + g.utterances, 0);
  return n === 0 ? undefined : groups.reduce((s, g) => s + g.cpuSeconds, 0) / n;
}

interface Recommendation {
  expect: BenchExpect;
  band: Band;
  engine: EngineId;
  score: number;
  others: { engine: EngineId; score: number }[];
}

function recommend(results: Results, band: Band): Recommendation[] {
  const recommendations: Recommendation[] = [];
  for (const expect of EXPECTS) {
    const candidates = ENGINE_IDS.flatMap((engine) => {
      const rows = results.recognitions.filter((r) => r.band === band && r.expect === expect && r.engine === engine);
      const c = cell(rows);
      if (!c) return [];
      const paced = results.paced.filter((p) => p.engine === engine && p.expect === expect).map((p) => p.ms);
      const latency = paced.length ? quantile(paced, 0.5) : quantile(rows.map((r) => r.latencyMs), 0.5);
      const cpu = cpuPerUtterance(results, (g) => g.engine === engine && g.band === band) ?? 0;
      return [{ engine, score: c.wer !== undefined ? 1 - c.wer : c.exact!, latency, cpu }];
    });
    if (candidates.length === 0) continue;
    const best = Math.max(...candidates.map((c) => c.score));
    const tied = candidates.filter((c) => c.score >= best - TIE).sort((a, b) => a.latency - b.latency || a.cpu - b.cpu);
    const chosen = tied[0];
    recommendations.push({ expect, band, engine: chosen.engine, score: chosen.score, others: candidates.filter((c) => c !== chosen).map(({ engine, score }) => ({ engine, score })) });
  }
  return recommendations;
}

/**
 * Only the utterances every engine heard (per expect): runs made with different --limit
 * values are compared on the same words.
 */
function onCommonUtterances(results: Results): Results {
  const common = new Map<BenchExpect, Set<string>>();
  for (const expect of EXPECTS) {
    const rows = results.recognitions.filter((r) => r.expect === expect);
    const perEngine = ENGINE_IDS.map((e) => new Set(rows.filter((r) => r.engine === e).map((r) => r.id))).filter((ids) => ids.size > 0);
    common.set(expect, new Set(perEngine.length ? [...perEngine[0]].filter((id) => perEngine.every((ids) => ids.has(id))) : []));
  }
  return { ...results, recognitions: results.recognitions.filter((r) => common.get(r.expect)!.has(r.id)) };
}

function report(all: Results): void {
  const results = onCommonUtterances(all);
  const dropped = all.recognitions.length - results.recognitions.length;
  const engines = ENGINE_IDS.filter((e) => results.recognitions.some((r) => r.engine === e));
  const bands = BANDS.filter((b) => results.recognitions.some((r) => r.band === b));
  const combos = [...new Set(results.recognitions.map((r) => `${r.voice}\u0000${r.speed}`))].map((k) => k.split('\u0000') as [string, Speed]);
  const utteranceCount = new Set(results.recognitions.map((r) => r.id)).size;

  out(`Speech accuracy (${results.startedAt}; ${results.machine.cpus} CPUs, load average ${results.machine.loadAverageAtStart.map((l) => l.toFixed(1)).join(' ')} at the start${results.machine.loadAverageAtEnd ? `, ${results.machine.loadAverageAtEnd.map((l) => l.toFixed(1)).join(' ')} at the end` : ''})`);
  out(`${utteranceCount} utterances; voices: ${Object.entries(results.voices).map(([v, s]) => `${v} (${s.normal}; fast: ${s.fast})`).join(', ')}`);
  for (const [what, why] of Object.entries(results.missing)) out(`not run: ${what}: ${why}`);
  if (dropped > 0) out(`${dropped} recognitions of utterances not every engine heard are left out, so engines are compared on the same utterances.`);
  out('');
  out('Constrained answers: exact after the answer readers (extractAnswer, compared as Auth Check compares). Free speech: word error rate.');
  out('finish() → text: the utterance written whole, then finish() (p50 / p95 ms). CPU: this process and its children per utterance.');

  for (const band of bands) {
    out(`\n### ${band === 'telephone' ? 'Telephone band (300–3400 Hz, 8 kHz μ-law)' : 'Wideband (16 kHz)'}: engine × voice × speed\n`);
    const rows: string[][] = [];
    for (const engine of engines) {
      for (const [voice, speed] of combos) {
        const mine = results.recognitions.filter((r) => r.engine === engine && r.band === band && r.voice === voice && r.speed === speed);
        if (mine.length === 0) continue;
        const latencies = mine.map((r) => r.latencyMs);
        const cpu = cpuPerUtterance(results, (g) => g.engine === engine && g.band === band && g.voice === voice && g.speed === speed);
        rows.push([engine, voice, speed, ...EXPECTS.map((e) => showCell(cell(mine.filter((r) => r.expect === e)))), `${ms(quantile(latencies, 0.5))} / ${ms(quantile(latencies, 0.95))}`, cpu === undefined ? '–' : `${Math.round(cpu * 1000)}`]);
      }
    }
    table(['engine', 'voice', 'speed', ...EXPECTS, 'finish→text ms', 'CPU ms/utt'], rows);
  }

  out('\n### All voices and speeds together: engine × band\n');
  const summary: string[][] = [];
  for (const band of bands) {
    for (const engine of engines) {
      const mine = results.recognitions.filter((r) => r.engine === engine && r.band === band);
      if (mine.length === 0) continue;
      const constrained = mine.filter((r) => r.expect !== 'free');
      const latencies = mine.map((r) => r.latencyMs);
      const cpu = cpuPerUtterance(results, (g) => g.engine === engine && g.band === band);
      summary.push([
        band,
        engine,
        ...EXPECTS.map((e) => showCell(cell(mine.filter((r) => r.expect === e)))),
        constrained.length ? pct(constrained.filter((r) => r.exact).length / constrained.length) : '–',
        `${ms(quantile(latencies, 0.5))} / ${ms(quantile(latencies, 0.95))}`,
        cpu === undefined ? '–' : `${Math.round(cpu * 1000)}`,
      ]);
    }
  }
  table(['band', 'engine', ...EXPECTS, 'all constrained', 'finish→text ms', 'CPU ms/utt'], summary);

  if (results.paced.length) {
    out('\n### Streamed at real time, one call at a time, telephone band: finish() → text (ms)\n');
    const rows = ENGINE_IDS.flatMap((engine) => {
      const mine = results.paced.filter((p) => p.engine === engine);
      if (mine.length === 0) return [];
      const all = mine.map((p) => p.ms);
      const constrained = mine.filter((p) => p.expect !== 'free').map((p) => p.ms);
      const free = mine.filter((p) => p.expect === 'free').map((p) => p.ms);
      const show = (v: number[]) => (v.length ? `${ms(quantile(v, 0.5))} / ${ms(quantile(v, 0.95))} (n=${v.length})` : '–');
      return [[engine, show(all), show(constrained), show(free)]];
    });
    table(['engine', 'all p50 / p95', 'constrained', 'free'], rows);
  }

  const recommendations = bands.flatMap((band) => recommend(results, band));
  if (recommendations.length) {
    out('\n### Recommendation per expect and band (best score; within 1 point, the faster, then the cheaper)\n');
    const show = (engine: EngineId, s: number, expect: BenchExpect) => `${engine} ${expect === 'free' ? `WER ${pct(1 - s)}` : pct(s)}`;
    table(
      ['band', 'expect', 'recommended', 'the others'],
      recommendations.map((r) => [r.band, r.expect, show(r.engine, r.score, r.expect), r.others.map((o) => show(o.engine, o.score, r.expect)).join('; ') || '–']),
    );
  }

  if (results.concurrent.length) {
    out('\n### Concurrent calls, telephone band, streamed at real time: finish() → text\n');
    table(
      ['plan', 'calls', 'Whisper workers', 'answers', 'p50 ms', 'p95 ms', 'constrained exact', 'free WER'],
      results.concurrent.map((run) => {
        const all = run.latencies.map((l) => l.ms);
        const constrained = run.latencies.filter((l) => l.expect !== 'free');
        const free = run.latencies.filter((l) => l.expect === 'free') as { errors: number; words: number }[];
        return [
          run.plan,
          String(run.calls),
          Object.values(run.engines).some((e) => e.startsWith('whisper')) ? String(run.whisperWorkers) : '–',
          String(all.length),
          ms(quantile(all, 0.5)),
          ms(quantile(all, 0.95)),
          constrained.length ? pct(constrained.filter((l) => l.exact).length / constrained.length) : '–',
          free.length ? pct(wordErrorRate(free)) : '–',
        ];
      }),
    );
  }

  out('\n### Targets on telephone-band audio\n');
  const phone = results.recognitions.filter((r) => r.band === 'telephone');
  const planScores = (plan: Partial<Record<BenchExpect, EngineId>>) => {
    const rows = phone.filter((r) => plan[r.expect] === r.engine);
    const free = rows.filter((r) => r.expect === 'free') as { errors: number; words: number }[];
    const constrained = rows.filter((r) => r.expect !== 'free');
    return { wer: free.length ? wordErrorRate(free) : undefined, exact: constrained.length ? constrained.filter((r) => r.exact).length / constrained.length : undefined };
  };
  const recommendedPlan = Object.fromEntries(recommendations.filter((r) => r.band === 'telephone').map((r) => [r.expect, r.engine])) as Partial<Record<BenchExpect, EngineId>>;
  const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : 'NOT met');
  const targetRows: string[][] = [];
  for (const [label, plan] of [
    ["today's defaults (pocketsphinx grammar / general model)", TODAYS_DEFAULTS],
    ['recommended per expect', recommendedPlan],
  ] as const) {
    const s = planScores(plan);
    const run = results.concurrent.find((c) => c.plan === label || (label.startsWith('today') && c.plan === 'defaults') || (label.startsWith('recommended') && c.plan === 'recommended'));
    const p50 = run ? quantile(run.latencies.map((l) => l.ms), 0.5) : undefined;
    targetRows.push([
      label,
      s.wer === undefined ? '–' : `${pct(s.wer)}: ${verdict(s.wer <= TARGETS.wer)}`,
      s.exact === undefined ? '–' : `${pct(s.exact)}: ${verdict(s.exact >= TARGETS.exact)}`,
      p50 === undefined ? 'not measured' : `${ms(p50)} ms: ${verdict(p50 <= TARGETS.concurrentP50Ms)}`,
    ]);
  }
  table(['plan', `free WER ≤ ${pct(TARGETS.wer)}`, `constrained ≥ ${pct(TARGETS.exact)}`, `p50 ≤ ${TARGETS.concurrentP50Ms} ms at 5 calls`], targetRows);

  out('\n### Misheard on the telephone band (up to 3 per engine and expect)\n');
  for (const engine of engines) {
    for (const expect of EXPECTS) {
      const wrong = phone.filter((r) => r.engine === engine && r.expect === expect && (r.exact === false || (r.errors ?? 0) > 0)).slice(0, 3);
      if (wrong.length) out(`- ${engine}, ${expect}: ${wrong.map((r) => `${r.id} (${r.voice} ${r.speed}) "${r.transcript}"`).join('; ')}`);
    }
  }
}

// ---------- main ----------

/** Writes the run's raw results so far (after each group too, so a run cut short keeps what it measured); returns the file. */
function saveResults(results: Results): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `${RESULTS_DIR}${results.startedAt.replace(/[:.]/g, '-')}.json`;
  writeFileSync(file, JSON.stringify({ ...results, machine: { ...results.machine, loadAverageAtEnd: results.machine.loadAverageAtEnd ?? os.loadavg() } }));
  return file;
}

/** Saved runs (comma-separated files), merged into one. */
function loadResults(files: string): Results {
  const merged = files.split(',').map((f) => JSON.parse(readFileSync(f.trim(), 'utf8')) as Results);
  return {
    ...merged[0],
    voices: Object.assign({}, ...merged.map((m) => m.voices)) as Results['voices'],
    missing: Object.assign({}, ...merged.map((m) => m.missing)) as Results['missing'],
    recognitions: merged.flatMap((m) => m.recognitions),
    cpu: merged.flatMap((m) => m.cpu),
    paced: merged.flatMap((m) => m.paced),
    concurrent: merged.flatMap((m) => m.concurrent),
    machine: { ...merged[0].machine, loadAverageAtEnd: merged[merged.length - 1].machine.loadAverageAtEnd },
  };
}

async function main(): Promise<void> {
  const reportFiles = option('report');
  if (reportFiles) {
    report(loadResults(reportFiles));
    return;
  }

  const engines = listOption('engines', ENGINE_IDS);
  const voiceNames = listOption('voices', VOICE_NAMES);
  const speeds = listOption('speeds', SPEEDS);
  const bands = listOption('bands', BANDS);
  const expects = listOption('expects', EXPECTS);
  const limit = numberOption('limit', Number.MAX_SAFE_INTEGER);
  pacedPerExpect = numberOption('paced', 4);
  const calls = numberOption('calls', 5);
  const turns = numberOption('turns', 16);
  const whisperWorkersOption = option('whisper-workers');
  const whisperWorkers = whisperWorkersOption === undefined ? undefined : numberOption('whisper-workers', 1);

  const utterances = expects.flatMap((e) => loadUtterances().filter((u) => u.expect === e).slice(0, limit));
  const results: Results = {
    startedAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, loadAverageAtStart: os.loadavg() },
    voices: {},
    missing: {},
    recognitions: [],
    cpu: [],
    paced: [],
    concurrent: [],
  };
  const { voices, missing } = await openVoices(voiceNames);
  Object.assign(results.missing, missing);
  for (const voice of voices) results.voices[voice.name] = voice.speeds;
  for (const [voice, why] of Object.entries(missing)) log(`voice ${voice}: not used: ${why}`);
  let items: AudioItem[];
  try {
    items = await renderAll(voices, speeds, bands, utterances);
  } finally {
    await Promise.all(voices.map((v) => v.close()));
  }

  // --matrix-from: the matrix of earlier runs (engines run in processes of their own) decides the recommended plan; only the concurrent calls run.
  const matrixFrom = option('matrix-from');
  const earlier = matrixFrom ? loadResults(matrixFrom) : undefined;
  if (!earlier) await runMatrix(results, engines, bands, items, whisperWorkers);

  if (calls > 0 && turns > 0 && bands.includes('telephone')) {
    const concurrency = { calls, turns, whisperWorkers: whisperWorkers ?? 1 };
    await runConcurrent(results, 'defaults', TODAYS_DEFAULTS, items, concurrency);
    const recommended = Object.fromEntries(recommend(onCommonUtterances(earlier ?? results), 'telephone').map((r) => [r.expect, r.engine])) as Record<BenchExpect, EngineId>;
    const covers = expects.every((e) => recommended[e]);
    if (covers && JSON.stringify(recommended) !== JSON.stringify(Object.fromEntries(expects.map((e) => [e, TODAYS_DEFAULTS[e]])))) {
      await runConcurrent(results, 'recommended', recommended, items, concurrency);
    }
  }

  results.machine.loadAverageAtEnd = os.loadavg();
  log(`raw results: ${saveResults(results)}`);
  report(results);
}

runBenchmark(main);
