// The chaos run's parts compiled once to plain JavaScript (chaos/compiledParts.ts): a compiled
// entry runs under plain node, a module it imports still finds the files beside its source
// (as src/db/migrate.ts finds its migrations), and the entry's own import.meta.url is the
// compiled file, so a `process.argv[1]` check runs its main (src/server.ts), also in a clone
// of the project whose .tools is a link to another checkout's.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { compileParts } from '../../chaos/compiledParts.js';
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
