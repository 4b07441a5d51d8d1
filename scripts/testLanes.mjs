#!/usr/bin/env node
// The scheduler behind `npm test` (started by scripts/run-tests.mjs, never by hand): runs test
// files in parallel lanes, each file in its own `node --test` process.
//
// Input (environment, set by run-tests.mjs):
//   TEST_LANES_PLAN  JSON { files: string[], nodeFlags: string[], lanes: Record<string, string>[],
//                    alone: string[], durationsFile?: string, seedDurationsFile?: string, foreground?: string[],
//                    foregroundLane?: Record<string, string>, laneNice?: number }
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
// Each file's output is printed in one piece when it ends, between `# file:` comment lines;
// at the end, the totals in node's format and a plain "N passed, N failed" line. Exit code 0
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
const aloneQueue = plan.files.filter((f) => aloneSet.has(f)).sort(byCost);
const foregroundQueue = plan.files.filter((f) => foregroundSet.has(f) && !aloneSet.has(f)).sort(byCost);
const sharedQueue = plan.files.filter((f) => !aloneSet.has(f) && !foregroundSet.has(f)).sort(byCost);

const totals = Object.fromEntries(COUNTERS.map((c) => [c, 0]));
const failedFiles = [];
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

function runFile(file, laneEnv, laneLabel, nice = 0) {
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
      const counts = summaryOf(stdout);
      for (const c of COUNTERS) totals[c] += counts[c] ?? 0;
      const ok = code === 0 && counts.tests !== undefined;
      if (!ok) {
        failedFiles.push(rel(file));
        // A file that died before its summary still counts as a failure.
        if (!counts.fail && !counts.cancelled) totals.fail += 1;
      }
      durations[rel(file)] = ms;
      const status = ok ? 'ok' : `FAILED (exit ${code ?? signal})`;
      process.stdout.write(`# file: ${rel(file)} [${laneLabel}]\n${stdout}${stdout.endsWith('\n') || !stdout ? '' : '\n'}`);
      if (err.length) process.stderr.write(Buffer.concat(err));
      process.stdout.write(`# file: ${rel(file)} ${status} in ${(ms / 1000).toFixed(1)} s\n`);
      resolve();
    };
    child.once('error', (e) => {
      err.push(Buffer.from(`testLanes: could not start ${rel(file)}: ${e.message}\n`));
      done(null, 'spawn error');
    });
    child.once('close', done);
  });
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
if (failedFiles.length) process.stdout.write(`# failed files:${os.EOL}${failedFiles.map((f) => `#   ${f}`).join(os.EOL)}\n`);
if (notRun) process.stdout.write(`# not run (interrupted): ${notRun} file(s)\n`);
process.stdout.write(`${totals.pass} passed, ${totals.fail + totals.cancelled} failed\n`);
process.exit(stopping ? 128 + stopping : failedFiles.length || notRun ? 1 : 0);
