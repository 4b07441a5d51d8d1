// The workflow bundle cache of the test runs (src/temporal/workflowBundleCache.ts) on a small
// planted workflow module: the first call builds and keeps the bundle and the next one reads
// it; an edit to a module the workflow imports, or a new file where webpack looked and found
// nothing, makes the next call build again; two calls at once, past a lock left by a process
// that died, build once. A worker whose cache folder cannot be made builds in memory.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { DefaultLogger } from '@temporalio/worker';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { keptOrBuiltWorkflowBundle, workflowBundleForWorker } from '../../src/temporal/workflowBundleCache.js';

// Inside the project, so that webpack finds @temporalio/workflow in its node_modules.
const work = mkdtempSync(path.join(PROJECT_ROOT, '.tools', 'bundle-cache-test-'));
const cacheDir = path.join(work, 'cache');
const workflowsPath = path.join(work, 'workflows.ts');
const options = { workflowsPath, logger: new DefaultLogger('WARN') };
after(() => rmSync(work, { recursive: true, force: true }));

writeFileSync(workflowsPath, "import { greeting } from './greeting.js';\n\nexport async function plantedWorkflow(): Promise<string> {\n  return greeting;\n}\n");
const greetingJs = path.join(work, 'greeting.js');
const greetingTs = path.join(work, 'greeting.ts');
const bundle = () => keptOrBuiltWorkflowBundle(options, cacheDir);

test('built once, then read back unchanged', async () => {
  writeFileSync(greetingJs, "export const greeting = 'first greeting';\n");
  const first = await bundle();
  assert.equal(first.built, true);
  assert.match(first.code, /first greeting/);
  const again = await bundle();
  assert.equal(again.built, false);
  assert.equal(again.code, first.code);
});

test('an edit to an imported module builds it again', async () => {
  writeFileSync(greetingJs, "export const greeting = 'second greeting';\n");
  const edited = await bundle();
  assert.equal(edited.built, true);
  assert.match(edited.code, /second greeting/);
  assert.doesNotMatch(edited.code, /first greeting/);
  assert.equal((await bundle()).built, false);
});

test('a new file where webpack looked first (greeting.ts before greeting.js) builds it again', async () => {
  writeFileSync(greetingTs, "export const greeting: string = 'third greeting';\n");
  const shadowed = await bundle();
  assert.equal(shadowed.built, true);
  assert.match(shadowed.code, /third greeting/);
});

test('a module written while the bundle was built (modified after the build began) is not kept: the next call builds again', async () => {
  writeFileSync(greetingTs, "export const greeting: string = 'greeting written meanwhile';\n");
  // As an edit that lands while webpack runs: the file's time is after the build's start.
  const later = new Date(Date.now() + 60_000);
  utimesSync(greetingTs, later, later);
  const meanwhile = await bundle();
  assert.equal(meanwhile.built, true);
  assert.equal((await bundle()).built, true, 'not read back under hashes taken after the build');
  utimesSync(greetingTs, new Date(), new Date(Date.now() - 60_000));
  assert.equal((await bundle()).built, true);
  assert.equal((await bundle()).built, false, 'kept once its inputs are older than the build');
});

test('two calls at once, past the lock of a process that died, build once', async () => {
  writeFileSync(greetingTs, "export const greeting: string = 'fourth greeting';\n");
  // A process that has exited: its pid is free.
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const [key] = readdirSync(cacheDir).filter((f) => f.endsWith('.json'));
  writeFileSync(path.join(cacheDir, key.replace(/\.json$/, '.lock')), gone.stdout);
  const results = await Promise.all([bundle(), bundle()]);
  assert.deepEqual(results.map((r) => r.built).sort(), [false, true]);
  for (const r of results) assert.match(r.code, /fourth greeting/);
});

test('a worker whose cache folder cannot be made (a file in its path) builds the bundle in memory', async () => {
  const blocker = path.join(work, 'blocker');
  writeFileSync(blocker, 'not a folder');
  const result = await workflowBundleForWorker(options, path.join(blocker, 'bundles'));
  assert.equal(result.kept, false);
  assert.equal(result.built, true);
  assert.match(result.kept ? '' : result.reason, /ENOTDIR/);
  assert.match(result.code, /fourth greeting/);
});
