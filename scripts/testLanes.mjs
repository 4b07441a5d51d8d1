#!/usr/bin/env node
// The scheduler behind `npm test` (started by scripts/run-tests.mjs, never by hand): runs test
// files in parallel lanes, each file in its own `node --test` process.
//
// Input (environment, set by run-tests.mjs):
//   TEST_LANES_PLAN  JSON { files: string[], nodeFlags: string[], lanes: Record<string, string>[],
//                    alone: string[], durationsFile?: string, seedDurationsFile?: string, foreground?: string[],
//                    foregroundLane?: Record<string, string>, laneNice?: number,
//                    realTime?: string[] }
//   `lanes[i]` is lane i's environment overlay (its own DATABASE_URL and REDIS_URL), so files
//   running at the same time never share a database or a Redis. A lane runs one file at a time.
//
// Files marked to run alone (`// test-runner: alone` in their first lines, see run-tests.mjs)
// run first, one at a time, with nothing else running; then the others, longest first (by
// the durations of the previous run, else of seedDurationsFile, else by file size), one per
// free lane. The `foreground` files (with `foregroundLane`, an environment of their own) run
// one at a time in that lane beside the others, which then run `laneNice` nice levels below
// this process (`nice -n`): the foreground file has first claim on the CPU and the lanes take
// what it leaves.
//
// `realTime` files (those marked foreground: they assert on things timed in real time) that
// fail are run once more at the end, alone at full priority; a second pass counts, and the
// first failure is listed under "failed, then passed when run again alone". Any other file
// fails the run at its first failure.
//
// Each file's output is printed in one piece when it ends, between `# file:` comment lines;
// at the end, each failure's `not ok` lines (the cause first) and stderr tail again (a CI log is read from its
// end), the totals in node's format and a plain "N passed, N failed" line. Exit code 0
// when every file passed, else 1 (128+n after a signal).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const plan = JSON.parse(process.env.TEST_LANES_PLAN ?? 'null');
if (!plan) {
  process.stderr.write('testLanes: TEST_LANES_PLAN is not set (run the tests with `npm test`)\n');
  process.exit(2);
}
delete process.env.TEST_LANES_PLAN;
// Set when this scheduler itself runs inside a test file (its own test): the files it starts
// would take it to mean they are a `node --test` child and skip running their tests.
delete process.env.NODE_TEST_CONTEXT;

const ROOT = process.cwd();
const rel = (f) => path.relative(ROOT, f);
const COUNTERS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];

const readDurations = (file) => {
  try {
    return file ? JSON.parse(readFileSync(file, 'utf8')) : {};
  } catch {
    return {}; // first run on this machine
  }
};
// A fresh clone (CI) has no durations of its own: those of a whole run, committed with the
// runner (seedDurationsFile), order it; this machine's own, once it has them, win.
const previous = { ...readDurations(plan.seedDurationsFile), ...readDurations(plan.durationsFile) };
/**
 * Expected cost of a file: its last duration, else its size (bigger files hold more tests)
 * times the median milliseconds per byte of the files that have both, so a new file is not
 * put behind every known one.
 */
const sizes = new Map(plan.files.map((f) => [f, statSync(f).size]));
const ratios = plan.files.filter((f) => previous[rel(f)] !== undefined).map((f) => previous[rel(f)] / Math.max(1, sizes.get(f))).sort((a, b) => a - b);
const msPerByte = ratios.length ? ratios[Math.floor(ratios.length / 2)] : 1;
const cost = (file) => previous[rel(file)] ?? sizes.get(file) * msPerByte;
const byCost = (a, b) => cost(b) - cost(a);

const aloneSet = new Set(plan.alone);
const foregroundSet = new Set(plan.foregroundLane ? plan.foreground ?? [] : []);
const realTimeSet = new Set(plan.realTime ?? []);
const aloneQueue = plan.files.filter((f) => aloneSet.has(f)).sort(byCost);
const foregroundQueue = plan.files.filter((f) => foregroundSet.has(f) && !aloneSet.has(f)).sort(byCost);
const sharedQueue = plan.files.filter((f) => !aloneSet.has(f) && !foregroundSet.has(f)).sort(byCost);

const totals = Object.fromEntries(COUNTERS.map((c) => [c, 0]));
/** Final failures, with their digests. */
const failures = [];
/** Real-time files that failed once, to be run again at the end; and those that then passed. */
const runAgain = [];
const flaky = [];
const durations = { ...previous };
const running = new Map(); // child -> file
let stopping; // signal number once interrupted
const started = Date.now();

/** The counters of node's summary at the end of one file's output (`# pass 12`, ...). */
function summaryOf(output) {
  const found = {};
  for (const c of COUNTERS) {
    const all = [...output.matchAll(new RegExp(`^# ${c} (\\d+)$`, 'gm'))];
    if (all.length) found[c] = Number(all[all.length - 1][1]);
  }
  return found;
}

/**
 * What a failed file said about its failures, for the end of the run (a CI log is often read
 * from its tail): each `not ok` with its YAML block, at most `maxLines` lines in all, then the
 * last lines of its stderr. The failures that say why come first (a failed hook, an
 * assertion); tests cancelled only because their suite ended (`cancelledByParent`, what a
 * failed `before` leaves) are named on one line after them, so they never crowd out the cause.
 */
function failureDigest(stdout, stderr, maxLines = 80) {
  const lines = stdout.split('\n');
  const causes = [];
  const cancelled = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    if (!m) continue;
    const block = [lines[i]];
    const end = `${m[1]}  ...`;
    for (let j = i + 1; j < lines.length && /^\s/.test(lines[j]); j++) {
      block.push(lines[j]);
      if (lines[j] === end) break;
    }
    if (block.some((l) => l.trim() === "failureType: 'cancelledByParent'")) cancelled.push(m[2]);
    else causes.push(block);
  }
  const picked = causes.flat().slice(0, maxLines);
  if (cancelled.length) picked.push(`${cancelled.length} test(s) cancelled when their suite ended: ${cancelled.join('; ')}`.slice(0, 2000));
  const errTail = stderr.trimEnd().split('\n').filter(Boolean).slice(-15);
  return [...picked, ...(errTail.length ? ['stderr (last lines):', ...errTail] : [])].map((l) => `#   | ${l}`).join('\n');
}

function runFile(file, laneEnv, laneLabel, nice = 0, attempt = '') {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const args = [
      '--import', 'tsx',
      '--test', '--test-concurrency=1', '--test-timeout=600000',
      ...plan.nodeFlags,
      file,
    ];
    // `nice` execs node in the same process, so the file and everything it starts run lower.
    const [command, argv] = nice > 0 ? ['nice', ['-n', String(nice), process.execPath, ...args]] : [process.execPath, args];
    const child = spawn(command, argv, { cwd: ROOT, env: { ...process.env, ...laneEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    running.set(child, file);
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    const done = (code, signal) => {
      running.delete(child);
      const ms = Date.now() - t0;
      const stdout = Buffer.concat(out).toString();
      const stderr = Buffer.concat(err).toString();
      const counts = summaryOf(stdout);
      const ok = code === 0 && counts.tests !== undefined;
      durations[rel(file)] = ms;
      const again = !ok && !attempt && !stopping && realTimeSet.has(file);
      const status = ok ? 'ok' : `FAILED (exit ${code ?? signal})${again ? '; a real-time file: run again, alone, at the end' : ''}`;
      process.stdout.write(`# file: ${rel(file)} [${laneLabel}${attempt}]\n${stdout}${stdout.endsWith('\n') || !stdout ? '' : '\n'}`);
      if (stderr) process.stderr.write(stderr);
      process.stdout.write(`# file: ${rel(file)} ${status} in ${(ms / 1000).toFixed(1)} s\n`);
      const result = { file, ok, counts, digest: ok ? '' : failureDigest(stdout, stderr) };
      if (again) runAgain.push(result);
      else record(result);
      resolve(result);
    };
    child.once('error', (e) => {
      err.push(Buffer.from(`testLanes: could not start ${rel(file)}: ${e.message}\n`));
      done(null, 'spawn error');
    });
    child.once('close', done);
  });
}

/** Adds a file's final result to the totals. */
function record({ file, ok, counts, digest }) {
  for (const c of COUNTERS) totals[c] += counts[c] ?? 0;
  if (ok) return;
  failures.push({ file, digest });
  // A file that died before its summary still counts as a failure.
  if (!counts.fail && !counts.cancelled) totals.fail += 1;
}

async function lane(laneEnv, queue, label, nice = 0) {
  for (;;) {
    if (stopping) return;
    const file = queue.shift();
    if (!file) return;
    await runFile(file, laneEnv, label, nice);
  }
}

for (const [sig, num] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]]) {
  process.on(sig, () => {
    // run-tests.mjs signalled the whole group: the running files got it too. Start nothing new.
    stopping ??= num;
  });
}

if (aloneQueue.length) {
  process.stdout.write(`# ${aloneQueue.length} file(s) marked to run alone, one at a time\n`);
  await lane(plan.lanes[0], aloneQueue, 'alone');
}
const laneCount = Math.min(plan.lanes.length, sharedQueue.length);
const nice = foregroundQueue.length ? Math.max(0, Math.trunc(plan.laneNice ?? 0)) : 0;
if (foregroundQueue.length) process.stdout.write(`# ${foregroundQueue.length} file(s) in the foreground, one at a time, beside the lanes\n`);
if (laneCount) process.stdout.write(`# ${sharedQueue.length} file(s) in ${laneCount} lane(s)${nice ? `, at nice +${nice}` : ''}\n`);
await Promise.all([
  lane(plan.foregroundLane, foregroundQueue, 'foreground'),
  ...Array.from({ length: laneCount }, (_, i) => lane(plan.lanes[i], sharedQueue, `lane ${i + 1}`, nice)),
]);

// A real-time file that failed runs once more, by itself, with the machine to itself: its first
// failure is still printed above and listed below, so a flaky file is seen, not hidden.
for (const first of runAgain.splice(0)) {
  if (stopping) {
    record(first);
    continue;
  }
  const second = await runFile(first.file, plan.lanes[0], 'alone', 0, ', run again');
  if (second.ok) flaky.push(first);
}

if (plan.durationsFile && !stopping) {
  // Entries of test files renamed or deleted since are dropped, so the hints do not go stale.
  const kept = Object.fromEntries(Object.entries(durations).filter(([file]) => existsSync(path.resolve(ROOT, file))));
  try {
    writeFileSync(plan.durationsFile, `${JSON.stringify(kept, null, 1)}\n`);
  } catch {
    /* only a scheduling hint */
  }
}

const notRun = aloneQueue.length + foregroundQueue.length + sharedQueue.length;
process.stdout.write(COUNTERS.map((c) => `# ${c} ${totals[c]}\n`).join(''));
process.stdout.write(`# duration_ms ${Date.now() - started}\n`);
if (flaky.length) {
  process.stdout.write(`# failed, then passed when run again alone (real-time files; the first failure):${os.EOL}`);
  for (const { file, digest } of flaky) process.stdout.write(`#   ${rel(file)}${os.EOL}${digest}${os.EOL}`);
}
if (failures.length) {
  process.stdout.write(`# failures:${os.EOL}`);
  for (const { file, digest } of failures) process.stdout.write(`#   ${rel(file)}${os.EOL}${digest}${os.EOL}`);
  process.stdout.write(`# failed files:${os.EOL}${failures.map(({ file }) => `#   ${rel(file)}`).join(os.EOL)}\n`);
}
if (notRun) process.stdout.write(`# not run (interrupted): ${notRun} file(s)\n`);
process.stdout.write(`${totals.pass} passed, ${totals.fail + totals.cancelled} failed\n`);
process.exit(stopping ? 128 + stopping : failures.length || notRun ? 1 : 0);
