// The suite's scheduler (scripts/testLanes.mjs, started by scripts/run-tests.mjs) on planted
// test files: each lane's environment reaches the files it runs, files running at the same
// time are in different lanes, a file marked to run alone runs with nothing else, and a
// failing or crashing file fails the run by name while the totals add up.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { PROJECT_ROOT } from '../../src/config/index.js';

interface Visit {
  file: string;
  lane: string;
  start: number;
  end: number;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'test-lanes-'));
const visits = path.join(dir, 'visits.jsonl');

/**
 * A planted test file that records when it ran and in which lane, then passes or fails.
 * With `waitForPeer` it first waits (up to 15 s) until another planted file has started,
 * so two lanes running at once are sure to be seen overlapping.
 */
function plant(name: string, { holdMs = 300, fail = false, waitForPeer = true } = {}): string {
  const file = path.join(dir, name);
  const started = path.join(dir, 'started');
  writeFileSync(file, [
    "import { test } from 'node:test';",
    "import { appendFileSync, readFileSync } from 'node:fs';",
    `test(${JSON.stringify(`${name} runs`)}, async () => {`,
    '  const start = Date.now();',
    waitForPeer ? `  appendFileSync(${JSON.stringify(started)}, 'x');` : '',
    waitForPeer ? `  while (readFileSync(${JSON.stringify(started)}, 'utf8').length < 2 && Date.now() - start < 15000) await new Promise((r) => setTimeout(r, 20));` : '',
    `  await new Promise((r) => setTimeout(r, ${holdMs}));`,
    `  appendFileSync(${JSON.stringify(visits)}, JSON.stringify({ file: ${JSON.stringify(name)}, lane: process.env.PLANTED_LANE, start, end: Date.now() }) + '\\n');`,
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
