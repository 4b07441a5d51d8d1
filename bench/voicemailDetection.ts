// Accuracy of the answering-machine detector (src/mediaEdge/conversation/answeringMachineDetector.ts)
// on the labelled set of bench/voicemailSet.ts: 48 voicemail greetings and 48 people picking
// up, by Festival and espeak-ng at three speeds, over the telephone band.
//
//   npx tsx bench/voicemailDetection.ts [--half tune|held-out|all] [--show-errors]
//
// Prints the confusion matrix (rows: the truth; columns: the verdict), the accuracy, and the
// human → machine rate (a person hung up on: the worse mistake) for the tuning half (the even
// texts of each list), the held-out half (the odd ones) and the whole set; `unknown` counts as
// human, as the edge treats it. Also: how soon the verdict came, and for greetings with a beep,
// how many beeps were found and how far from where the beep was put.
// Targets (issue 25): ≥ 90 % correct, human → machine ≤ 5 %.
import { sliceFrames } from '../src/mediaEdge/audio/frames.js';
import { detectAnsweringMachine, type AnsweringMachineResult } from '../src/mediaEdge/conversation/answeringMachineDetector.js';
import { beepStartMs, labelledLines, lineAudio, type LabelledLine } from './voicemailSet.js';

const args = process.argv.slice(2);
const showErrors = args.includes('--show-errors');
const halfArg = args.includes('--half') ? args[args.indexOf('--half') + 1] : 'all';

interface Scored {
  line: LabelledLine;
  result: AnsweringMachineResult;
  /** The detector's beep start against where the beep was put, ms. */
  beepErrorMs?: number;
}

const lines = labelledLines();
const scored: Scored[] = [];
for (const line of lines) {
  const audio = await lineAudio(line);
  const result = detectAnsweringMachine(sliceFrames(audio));
  const put = await beepStartMs(line);
  // The beep may come after the verdict: keep listening for it to measure the beep detector too.
  let beepAt = result.beepAt;
  if (put !== undefined && beepAt === undefined) {
    const { AnsweringMachineDetector } = await import('../src/mediaEdge/conversation/answeringMachineDetector.js');
    const detector = new AnsweringMachineDetector();
    for (const frame of sliceFrames(audio)) {
      detector.push(frame);
      if (detector.beepAt !== undefined) break;
    }
    beepAt = detector.beepAt;
  }
  scored.push({ line, result, ...(put !== undefined && beepAt !== undefined ? { beepErrorMs: beepAt - put } : {}) });
}

const verdictOf = (s: Scored) => (s.result.verdict === 'machine' ? 'machine' : 'human');
const pct = (n: number, d: number) => (d === 0 ? '–' : `${((100 * n) / d).toFixed(1)} %`);

function report(title: string, set: Scored[]): void {
  const cell = (truth: string, verdict: string) => set.filter((s) => s.line.label === truth && s.result.verdict === verdict).length;
  const humans = set.filter((s) => s.line.label === 'human');
  const machines = set.filter((s) => s.line.label === 'machine');
  const correct = set.filter((s) => verdictOf(s) === s.line.label).length;
  const humanAsMachine = humans.filter((s) => verdictOf(s) === 'machine').length;
  console.log(`\n### ${title} (${set.length} lines: ${machines.length} machine, ${humans.length} human)\n`);
  console.log('| truth \\ verdict | machine | human | unknown (→ human) |');
  console.log('|---|---|---|---|');
  for (const truth of ['machine', 'human']) console.log(`| ${truth} | ${cell(truth, 'machine')} | ${cell(truth, 'human')} | ${cell(truth, 'unknown')} |`);
  console.log(`\naccuracy ${pct(correct, set.length)} (${correct}/${set.length}); human → machine ${pct(humanAsMachine, humans.length)} (${humanAsMachine}/${humans.length}); machine → human ${pct(machines.length - machines.filter((s) => verdictOf(s) === 'machine').length, machines.length)}`);
  const decided = (group: Scored[]) => group.map((s) => s.result.decidedAtMs).sort((a, b) => a - b);
  const median = (xs: number[]) => (xs.length ? xs[Math.floor(xs.length / 2)] : NaN);
  console.log(`verdict after (median): machine ${median(decided(machines))} ms, human ${median(decided(humans))} ms`);
  const reasons = new Map<string, number>();
  for (const s of set) reasons.set(`${s.line.label}→${s.result.verdict}:${s.result.reason}`, (reasons.get(`${s.line.label}→${s.result.verdict}:${s.result.reason}`) ?? 0) + 1);
  console.log(`reasons: ${[...reasons].sort().map(([k, n]) => `${k} ${n}`).join(', ')}`);
  const withBeep = set.filter((s) => s.line.beepHz !== undefined);
  const found = withBeep.filter((s) => s.beepErrorMs !== undefined);
  const maxError = Math.max(0, ...found.map((s) => Math.abs(s.beepErrorMs!)));
  const falseBeeps = set.filter((s) => s.line.beepHz === undefined && s.result.reason === 'beep').length;
  console.log(`beeps found ${found.length}/${withBeep.length} (start within ${maxError.toFixed(0)} ms of where it was put); beeps heard where there was none: ${falseBeeps}`);
}

const halves: Record<string, Scored[]> = {
  'tuning half (even texts)': scored.filter((s) => s.line.textIndex % 2 === 0),
  'held-out half (odd texts)': scored.filter((s) => s.line.textIndex % 2 === 1),
  'whole set': scored,
};
for (const [title, set] of Object.entries(halves)) {
  if (halfArg === 'tune' && !title.startsWith('tuning')) continue;
  if (halfArg === 'held-out' && !title.startsWith('held-out')) continue;
  report(title, set);
}
// The detector's cost: every line's whole audio through a detector that never stops listening (the drop's case).
{
  const { AnsweringMachineDetector } = await import('../src/mediaEdge/conversation/answeringMachineDetector.js');
  const all = await Promise.all(lines.map(async (line) => sliceFrames(await lineAudio(line))));
  const frames = all.reduce((n, f) => n + f.length, 0);
  const started = performance.now();
  for (const lineFrames of all) {
    const detector = new AnsweringMachineDetector();
    for (const frame of lineFrames) detector.push(frame);
  }
  const perFrameUs = ((performance.now() - started) * 1000) / frames;
  console.log(`\ncost: ${perFrameUs.toFixed(1)} µs of CPU per 20 ms frame (${frames} frames), ${((perFrameUs / 20_000) * 100).toFixed(2)} % of one core per call while it listens`);
}
if (showErrors) {
  console.log('\nerrors:');
  for (const s of scored.filter((x) => verdictOf(x) !== x.line.label)) {
    console.log(`  ${s.line.id} (${s.line.speed}, lead ${s.line.leadMs} ms${s.line.beepHz ? `, beep ${s.line.beepHz} Hz` : ''}): ${s.result.verdict} ${s.result.reason} greeting ${s.result.greetingMs} ms, ${s.result.words} words, at ${s.result.decidedAtMs} ms — "${s.line.text}"`);
  }
}
