// The chaos run's parts compiled once to plain JavaScript (chaos/compiledParts.ts): a compiled
// entry runs under plain node, a module it imports still finds the files beside its source
// (as src/db/migrate.ts finds its migrations), and the entry's own import.meta.url is the
// compiled file, so a `process.argv[1]` check runs its main (src/server.ts), also in a clone
// of the project whose .tools is a link to another checkout's. Compiling prunes the builds of
// runs that ended without removing theirs.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { compileParts, KEPT_BUILDS } from '../../chaos/compiledParts.js';
import { PROJECT_ROOT } from '../../src/config/index.js';

const run = promisify(execFile);
// Inside the project: entries are named relative to its root.
const work = mkdtempSync(path.join(PROJECT_ROOT, '.tools', 'compiled-parts-test-'));
const rel = (file: string) => path.relative(PROJECT_ROOT, path.join(work, file));
after(() => rmSync(work, { recursive: true, force: true }));

test('a compiled entry runs under plain node; its modules find the files beside their sources; its own import.meta.url is the compiled file', async () => {
  writeFileSync(path.join(work, 'beside.txt'), 'the file beside the module\n');
  writeFileSync(
    path.join(work, 'reader.ts'),
    "import { readFileSync } from 'node:fs';\nimport { fileURLToPath } from 'node:url';\n\nexport const beside = (): string => readFileSync(fileURLToPath(new URL('./beside.txt', import.meta.url)), 'utf8').trim();\n",
  );
  writeFileSync(
    path.join(work, 'entry.ts'),
    "import { fileURLToPath } from 'node:url';\nimport { beside } from './reader.js';\n\nconst main: boolean = process.argv[1] === fileURLToPath(import.meta.url);\nprocess.stdout.write(JSON.stringify({ main, beside: beside() }));\n",
  );
  const compiled = await compileParts([rel('entry.ts')], `test-${process.pid}`);
  try {
    const file = compiled.file(rel('entry.ts'));
    assert.ok(file.endsWith('.mjs') && !file.startsWith(work), file);
    const { stdout } = await run(process.execPath, [file], { cwd: work });
    assert.deepEqual(JSON.parse(stdout), { main: true, beside: 'the file beside the module' });
  } finally {
    compiled.remove();
  }
});

test('in a clone whose .tools is a link to another folder, the compiled entry still runs its main', async () => {
  const clone = path.join(work, 'clone');
  const linkedTools = path.join(work, 'other-checkout-tools');
  mkdirSync(path.join(clone, 'src'), { recursive: true });
  mkdirSync(linkedTools);
  symlinkSync(linkedTools, path.join(clone, '.tools'));
  writeFileSync(
    path.join(clone, 'src', 'entry.ts'),
    "import { fileURLToPath } from 'node:url';\n\nprocess.stdout.write(JSON.stringify({ main: process.argv[1] === fileURLToPath(import.meta.url) }));\n",
  );
  const compiled = await compileParts(['src/entry.ts'], 'linked', clone);
  try {
    const { stdout } = await run(process.execPath, [compiled.file('src/entry.ts')], { cwd: clone });
    assert.deepEqual(JSON.parse(stdout), { main: true });
  } finally {
    compiled.remove();
  }
});

test("the API's entry compiled runs its main: a bad setting stops it naming the variable", async () => {
  const compiled = await compileParts(['src/server.ts'], `test-api-${process.pid}`);
  try {
    const result = await run(process.execPath, [compiled.file('src/server.ts')], { cwd: PROJECT_ROOT, env: { ...process.env, PORT: 'not-a-port' } }).then(
      () => assert.fail('the API should have stopped'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(result.code, 1);
    assert.match(result.stderr, /Invalid configuration: PORT must be a port number/);
  } finally {
    compiled.remove();
  }
});

test('compiling keeps the newest builds and deletes older ones, but never one whose run still goes', async () => {
  const root = path.join(work, 'pruned');
  const builds = path.join(root, '.tools', 'chaos-builds');
  mkdirSync(path.join(root, 'src'), { recursive: true });
  writeFileSync(path.join(root, 'src', 'entry.ts'), 'process.stdout.write("ran");\n');
  // A pid that no longer runs: a child's, once it has exited.
  const { pid: endedPid } = await new Promise<{ pid: number }>((resolve) => {
    const child = spawn(process.execPath, ['-e', '']);
    child.on('exit', () => resolve({ pid: child.pid! }));
  });
  const ago = (minutes: number) => new Date(Date.now() - minutes * 60_000);
  const build = (name: string, minutesAgo: number, ownerPid?: number) => {
    mkdirSync(path.join(builds, name), { recursive: true });
    if (ownerPid !== undefined) writeFileSync(path.join(builds, name, 'owner.pid'), `${ownerPid}\n`);
    utimesSync(path.join(builds, name), ago(minutesAgo), ago(minutesAgo));
  };
  build('chaos-newest-ended', 10, endedPid);
  build('chaos-second-ended', 20, endedPid);
  build('chaos-third-ended', 30, endedPid);
  build('chaos-old-still-running', 40, process.pid);
  build('chaos-old-ended', 50, endedPid);
  build('chaos-old-without-owner', 60);
  const compiled = await compileParts(['src/entry.ts'], 'chaos-new', root);
  try {
    assert.equal(KEPT_BUILDS, 3);
    assert.deepEqual(readdirSync(builds).sort(), ['chaos-new', 'chaos-newest-ended', 'chaos-old-still-running', 'chaos-second-ended']);
    const { stdout } = await run(process.execPath, [compiled.file('src/entry.ts')], { cwd: root });
    assert.equal(stdout, 'ran');
  } finally {
    compiled.remove();
  }
});
