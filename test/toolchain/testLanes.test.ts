// The suite's scheduler (scripts/testLanes.mjs, started by scripts/run-tests.mjs) on planted
// test files: each lane's environment reaches the files it runs, files running at the same
// time are in different lanes, a file marked to run alone runs with nothing else, foreground
// files run in an environment of their own beside the lanes, which then run at a lower
// priority, and a failing or crashing file fails the run by name while the totals add up.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { PROJECT_ROOT } from '../../src/config/index.js';
// @ts-expect-error -- plain-Node module without type declarations
import { foregroundSchedule as untypedForegroundSchedule } from '../../scripts/foregroundSchedule.mjs';

const foregroundSchedule = untypedForegroundSchedule as (plan: { mode?: string; foregroundCount: number; laneFileCount: number; laneCount: number; runnerNice: number }) => { beside: boolean; laneNice: number };

interface Visit {
  file: string;
  lane: string;
  /** The planted file's nice level. */
  nice: number;
  start: number;
  end: number;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'test-lanes-'));
const visits = path.join(dir, 'visits.jsonl');

/**
 * A planted test file that records when it ran and in which lane, then passes or fails.
 * With `waitForPeer` it first waits (up to 15 s) until another planted file has started (by
 * default any other; with `waitFor`, one that marks that name),
 * so two lanes running at once are sure to be seen overlapping.
 */
function plant(name: string, { holdMs = 300, fail = false, waitForPeer = true, mark = 'started', waitFor = undefined as string | undefined } = {}): string {
  const file = path.join(dir, name);
  // Each planted file marks `mark` when it starts; a peer has started once `waitFor` holds a mark not its own.
  const started = path.join(dir, mark);
  const peer = path.join(dir, waitFor ?? mark);
  const peerMarks = (waitFor ?? mark) === mark ? 2 : 1;
  writeFileSync(file, [
    "import { test } from 'node:test';",
    "import { appendFileSync, readFileSync } from 'node:fs';",
    "import { getPriority } from 'node:os';",
    `test(${JSON.stringify(`${name} runs`)}, async () => {`,
    '  const start = Date.now();',
    waitForPeer ? `  appendFileSync(${JSON.stringify(started)}, 'x');` : '',
    waitForPeer ? `  while (readFileSync(${JSON.stringify(peer)}, { encoding: 'utf8', flag: 'a+' }).length < ${peerMarks} && Date.now() - start < 15000) await new Promise((r) => setTimeout(r, 20));` : '',
    `  await new Promise((r) => setTimeout(r, ${holdMs}));`,
    `  appendFileSync(${JSON.stringify(visits)}, JSON.stringify({ file: ${JSON.stringify(name)}, lane: process.env.PLANTED_LANE, nice: getPriority(), start, end: Date.now() }) + '\\n');`,
    fail ? "  throw new Error('planted failure');" : '',
    '});',
    "test('a second test', () => {});",
  ].join('\n'));
  return file;
}

function runScheduler(plan: object): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(PROJECT_ROOT, 'scripts', 'testLanes.mjs')], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, TEST_LANES_PLAN: JSON.stringify(plan) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout }));
  });
}

const overlaps = (a: Visit, b: Visit) => a.start < b.end && b.start < a.end;

test('lanes: each file gets its lane’s environment, files at the same time are in different lanes, an alone file runs by itself; failures are named and counted', async () => {
  const shared = ['one.test.mjs', 'two.test.mjs', 'three.test.mjs', 'four.test.mjs'].map((n) => plant(n));
  const alone = plant('alone.test.mjs', { waitForPeer: false });
  const failing = plant('failing.test.mjs', { fail: true });
  const crashing = path.join(dir, 'crashing.test.mjs');
  writeFileSync(crashing, "throw new Error('broken at import');\n");

  const { code, stdout } = await runScheduler({
    files: [...shared, alone, failing, crashing],
    nodeFlags: [],
    lanes: [{ PLANTED_LANE: 'a' }, { PLANTED_LANE: 'b' }],
    alone: [alone],
  });

  const seen: Visit[] = readFileSync(visits, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Visit);
  assert.deepEqual(seen.map((v) => v.file).sort(), ['alone.test.mjs', 'failing.test.mjs', 'four.test.mjs', 'one.test.mjs', 'three.test.mjs', 'two.test.mjs']);
  for (const v of seen) assert.ok(v.lane === 'a' || v.lane === 'b', `${v.file} ran with a lane's environment (${v.lane})`);

  const soloVisit = seen.find((v) => v.file === 'alone.test.mjs')!;
  const others = seen.filter((v) => v !== soloVisit);
  for (const v of others) assert.ok(!overlaps(soloVisit, v), `${v.file} ran while the alone file did`);
  assert.ok(others.every((v) => v.start >= soloVisit.end), 'the alone file ran first');

  const pairs = others.flatMap((a, i) => others.slice(i + 1).filter((b) => overlaps(a, b)).map((b) => [a, b] as const));
  assert.ok(pairs.length > 0, 'two lanes ran files at the same time');
  for (const [a, b] of pairs) assert.notEqual(a.lane, b.lane, `${a.file} and ${b.file} ran at once in one lane`);

  assert.equal(code, 1);
  assert.match(stdout, /^# failed files:\n(#   .*\n){2}/m);
  assert.match(stdout, /^#   .*failing\.test\.mjs$/m);
  assert.match(stdout, /^#   .*crashing\.test\.mjs$/m);
  // 6 planted files of 2 tests each pass 11 (one planted failure); the crash counts as a failure.
  assert.match(stdout, /^# pass 11$/m);
  assert.match(stdout, /^11 passed, 2 failed$/m);
  assert.match(stdout, /^# file: .*alone\.test\.mjs ok in [\d.]+ s$/m);
});

test('foreground files run one at a time in their own environment beside the lanes, which run laneNice levels lower; alone files still run first, by themselves', async () => {
  // Each foreground file waits until a lane's file has started, and each lane's file until a foreground one has.
  const shared = ['beside-one.test.mjs', 'beside-two.test.mjs', 'beside-three.test.mjs'].map((n) => plant(n, { mark: 'lane-started', waitFor: 'foreground-started' }));
  const foreground = ['beside-fg-1.test.mjs', 'beside-fg-2.test.mjs'].map((n) => plant(n, { mark: 'foreground-started', waitFor: 'lane-started' }));
  const alone = plant('beside-alone.test.mjs', { waitForPeer: false });
  const names = [...shared, ...foreground, alone].map((f) => path.basename(f));
  const { code, stdout } = await runScheduler({
    files: [...shared, ...foreground, alone],
    nodeFlags: [],
    lanes: [{ PLANTED_LANE: 'a' }, { PLANTED_LANE: 'b' }],
    alone: [alone],
    foreground,
    foregroundLane: { PLANTED_LANE: 'fg' },
    laneNice: 7,
  });
  assert.equal(code, 0, stdout);
  assert.match(stdout, /^# 2 file\(s\) in the foreground, one at a time, beside the lanes$/m);
  assert.match(stdout, /^# 3 file\(s\) in 2 lane\(s\), at nice \+7$/m);
  assert.match(stdout, /^12 passed, 0 failed$/m);

  const seen: Visit[] = readFileSync(visits, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Visit).filter((v) => names.includes(v.file));
  assert.deepEqual(seen.map((v) => v.file).sort(), [...names].sort());
  const soloVisit = seen.find((v) => v.file === 'beside-alone.test.mjs')!;
  const fgVisits = seen.filter((v) => v.file.startsWith('beside-fg-'));
  const laneVisits = seen.filter((v) => v !== soloVisit && !fgVisits.includes(v));
  const base = os.getPriority();
  assert.equal(soloVisit.nice, base, 'the alone file ran at the scheduler\'s own nice level');
  assert.ok([...fgVisits, ...laneVisits].every((v) => v.start >= soloVisit.end), 'the alone file ran first, by itself');
  for (const v of fgVisits) {
    assert.equal(v.lane, 'fg', `${v.file} ran in the foreground files' environment`);
    assert.equal(v.nice, base, `${v.file} ran at the scheduler's own nice level`);
  }
  for (const v of laneVisits) {
    assert.ok(v.lane === 'a' || v.lane === 'b', `${v.file} ran with a lane's environment (${v.lane})`);
    assert.equal(v.nice, Math.min(19, base + 7), `${v.file} ran 7 nice levels lower (at most 19)`);
  }
  assert.ok(!overlaps(fgVisits[0], fgVisits[1]), 'the foreground files ran one at a time');
  assert.ok(fgVisits.some((f) => laneVisits.some((v) => overlaps(f, v))), 'a foreground file ran while a lane ran another');
});

test('where foreground files run: beside the lanes when the lanes can go 5 nice levels lower and end at nice 14 at most, else as alone files', () => {
  const plan = { foregroundCount: 2, laneFileCount: 10, laneCount: 3 };
  const where = (runnerNice: number, more: Partial<Parameters<typeof foregroundSchedule>[0]> = {}) => foregroundSchedule({ ...plan, runnerNice, ...more });
  assert.deepEqual(where(0), { beside: true, laneNice: 5 });
  assert.deepEqual(where(-5), { beside: true, laneNice: 5 });
  assert.deepEqual(where(9), { beside: true, laneNice: 5 });
  // From nice 10 the lanes would sink near other people's nice 19 background work; from 19 (`nice -n 19 npm test`) there is no room.
  assert.deepEqual(where(10), { beside: false, laneNice: 0 });
  assert.deepEqual(where(19), { beside: false, laneNice: 0 });
  // TEST_FOREGROUND=beside: as far down as there is room; TEST_FOREGROUND=alone: never beside.
  assert.deepEqual(where(16, { mode: 'beside' }), { beside: true, laneNice: 3 });
  assert.deepEqual(where(19, { mode: 'beside' }), { beside: true, laneNice: 0 });
  assert.deepEqual(where(0, { mode: 'alone' }), { beside: false, laneNice: 0 });
  // One lane runs one file at a time; no foreground file, or no lane file: nothing to run beside.
  assert.deepEqual(where(0, { laneCount: 1 }), { beside: false, laneNice: 0 });
  assert.deepEqual(where(0, { foregroundCount: 0 }), { beside: false, laneNice: 0 });
  assert.deepEqual(where(0, { laneFileCount: 0 }), { beside: false, laneNice: 0 });
  assert.throws(() => where(0, { mode: 'later' }), /TEST_FOREGROUND must be one of auto, beside, alone, got later/);
});

test('longest first: by this machine\'s durations, else by the committed seed\'s (a fresh clone), else by file size', async () => {
  // One lane, so the files run one after the other in the order chosen. Sizes: big > mid > small.
  const small = plant('order-small.test.mjs', { holdMs: 10, waitForPeer: false });
  const mid = plant('order-mid.test.mjs', { holdMs: 10, waitForPeer: false });
  writeFileSync(mid, `${readFileSync(mid, 'utf8')}\n// ${'x'.repeat(2_000)}\n`);
  const big = plant('order-big.test.mjs', { holdMs: 10, waitForPeer: false });
  writeFileSync(big, `${readFileSync(big, 'utf8')}\n// ${'x'.repeat(20_000)}\n`);
  const key = (f: string) => path.relative(PROJECT_ROOT, f);
  const order = async (durations: Record<string, number> | undefined, seed: Record<string, number> | undefined) => {
    const durationsFile = path.join(dir, `order-durations-${Math.random()}.json`);
    const seedDurationsFile = path.join(dir, `order-seed-${Math.random()}.json`);
    if (durations) writeFileSync(durationsFile, JSON.stringify(durations));
    if (seed) writeFileSync(seedDurationsFile, JSON.stringify(seed));
    const { code, stdout } = await runScheduler({ files: [small, mid, big], nodeFlags: [], lanes: [{ PLANTED_LANE: 'a' }], alone: [], durationsFile, seedDurationsFile });
    assert.equal(code, 0, stdout);
    return [...stdout.matchAll(/^# file: .*order-(\w+)\.test\.mjs \[lane 1\]$/gm)].map((m) => m[1]);
  };
  assert.deepEqual(await order(undefined, undefined), ['big', 'mid', 'small'], 'by size');
  assert.deepEqual(await order(undefined, { [key(small)]: 90_000, [key(mid)]: 50_000, [key(big)]: 1_000 }), ['small', 'mid', 'big'], 'by the seed');
  assert.deepEqual(await order({ [key(mid)]: 120_000 }, { [key(small)]: 90_000, [key(mid)]: 50_000, [key(big)]: 1_000 }), ['mid', 'small', 'big'], "this machine's duration first");
});

test('every file passing: exit code 0 and the plain closing line', async () => {
  const file = plant('only.test.mjs', { holdMs: 10, waitForPeer: false });
  const { code, stdout } = await runScheduler({ files: [file], nodeFlags: [], lanes: [{ PLANTED_LANE: 'a' }, { PLANTED_LANE: 'b' }], alone: [] });
  assert.equal(code, 0);
  assert.match(stdout, /\n2 passed, 0 failed\n$/);
});

test('the durations file: the files run are recorded, entries of files that no longer exist dropped, the others kept', async () => {
  const file = plant('timed.test.mjs', { holdMs: 10, waitForPeer: false });
  const other = plant('not-run.test.mjs', { waitForPeer: false });
  const durationsFile = path.join(dir, 'durations.json');
  const key = (f: string) => path.relative(PROJECT_ROOT, f);
  const gone = key(path.join(dir, 'deleted.test.mjs'));
  writeFileSync(durationsFile, JSON.stringify({ [gone]: 68_000, [key(other)]: 1234 }));
  const { code } = await runScheduler({ files: [file], nodeFlags: [], lanes: [{ PLANTED_LANE: 'a' }], alone: [], durationsFile });
  assert.equal(code, 0);
  const durations = JSON.parse(readFileSync(durationsFile, 'utf8')) as Record<string, number>;
  assert.deepEqual(Object.keys(durations).sort(), [key(other), key(file)].sort());
  assert.equal(durations[key(other)], 1234, 'a file not run this time keeps its last duration');
  assert.ok(durations[key(file)] > 0);
});

test('a real-time file that fails runs once more, alone, at the end: a pass counts and its first failure is listed; a second failure fails the run; each failure is repeated at the end', async () => {
  // Fails on its first run only (a mark file), like a timing assertion on a loaded machine.
  const once = path.join(dir, 'realtime-once.test.mjs');
  const mark = path.join(dir, 'realtime-once.ran');
  writeFileSync(once, [
    "import { test } from 'node:test';",
    "import { existsSync, writeFileSync } from 'node:fs';",
    "test('heard the tone', () => {",
    `  if (existsSync(${JSON.stringify(mark)})) return;`,
    `  writeFileSync(${JSON.stringify(mark)}, 'x');`,
    "  throw new Error('heard 300 ms of the tone, wanted 1000');",
    '});',
  ].join('\n'));
  const always = plant('realtime-always.test.mjs', { holdMs: 10, waitForPeer: false, fail: true });
  const logic = plant('logic-fails.test.mjs', { holdMs: 10, waitForPeer: false, fail: true });
  const { code, stdout } = await runScheduler({ files: [once, always, logic], nodeFlags: [], lanes: [{ PLANTED_LANE: 'a' }], alone: [], realTime: [once, always] });
  assert.equal(code, 1, stdout);
  const runs = (name: string) => [...stdout.matchAll(new RegExp(`^# file: .*${name}\\.test\\.mjs \\[([^\\]]+)\\]$`, 'gm'))].map((m) => m[1]);
  assert.deepEqual(runs('realtime-once'), ['lane 1', 'alone, run again']);
  assert.deepEqual(runs('realtime-always'), ['lane 1', 'alone, run again']);
  assert.deepEqual(runs('logic-fails'), ['lane 1'], 'a file not marked real-time is not run again');
  assert.match(stdout, /^# file: .*realtime-once\.test\.mjs FAILED \(exit 1\); a real-time file: run again, alone, at the end in/m);
  const tail = stdout.slice(stdout.lastIndexOf('# failed, then passed when run again alone'));
  assert.match(tail, /^#   .*realtime-once\.test\.mjs\n#   \| not ok 1 - heard the tone\n/m);
  assert.match(tail, /heard 300 ms of the tone, wanted 1000/, 'the first failure is repeated at the end');
  const failures = tail.slice(tail.indexOf('# failures:'));
  for (const name of ['realtime-always', 'logic-fails']) {
    assert.match(failures, new RegExp(`^#   .*${name}\\.test\\.mjs\\n#   \\| not ok 1 - ${name}\\.test\\.mjs runs\\n`, 'm'));
    assert.match(failures.slice(failures.indexOf('# failed files:')), new RegExp(`^#   .*${name}\\.test\\.mjs$`, 'm'));
  }
  assert.match(failures, /'planted failure'/);
  assert.doesNotMatch(failures.slice(failures.indexOf('# failed files:')), /realtime-once/);
  // Counted once each, by their last run: once passes 1; always and logic each pass 1 of 2.
  assert.match(stdout, /^3 passed, 2 failed$/m);
});

test('a failed before hook: the digest at the end gives the hook’s error first and names the tests it cancelled on one line', async () => {
  const file = path.join(dir, 'hook-fails.test.mjs');
  writeFileSync(file, [
    "import { before, describe, test } from 'node:test';",
    "before(() => { throw new Error('the phone did not register'); });",
    "describe('calls', { concurrency: true }, () => {",
    ...Array.from({ length: 12 }, (_, i) => `  test('call ${i + 1} with a long enough name to fill the digest when each is printed in full', () => {});`),
    '});',
  ].join('\n'));
  const { code, stdout } = await runScheduler({ files: [file], nodeFlags: [], lanes: [{ PLANTED_LANE: 'a' }], alone: [] });
  assert.equal(code, 1, stdout);
  const failures = stdout.slice(stdout.lastIndexOf('# failures:'));
  assert.match(failures, /^#   \| not ok 1 - calls\n/m, 'the suite whose hook failed leads');
  assert.match(failures, /failureType: 'hookFailed'/);
  assert.match(failures, /the phone did not register/);
  assert.match(failures, /^#   \| 12 test\(s\) cancelled when their suite ended: call 1 with .*; call 12 with/m);
  assert.doesNotMatch(failures, /cancelledByParent/);
});
