// The bootstrap's installing steps run at once (scripts/bootstrap.mjs main()): npm ci, the
// Go build of the Temporal CLI, Maven's test server jars and the speech venv's pip need
// nothing of one another, and on a fresh machine one after the other they took the sum of
// their times. The bootstrap runs here in a copy of the project whose npm, go, mvn, java and
// python3 are stand-ins: each records when it started and ended, and waits for its peers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { PROJECT_ROOT } from '../../src/config/index.js';

const INSTALLS = ['npm', 'go', 'mvn', 'pip'] as const;
type Install = (typeof INSTALLS)[number];

const work = mkdtempSync(path.join(os.tmpdir(), 'bootstrap-steps-'));
after(() => rmSync(work, { recursive: true, force: true }));

/**
 * One stand-in program. An install (npm ci, go install, mvn, pip install) appends
 * "<name> start" and "<name> end" lines to $STAND_IN_RECORD around its work, which is:
 * with STAND_IN_PEERS=all, wait (up to 30 s) until every install has started; with
 * STAND_IN_PEERS=go-failed, fail at once as go, or else wait until go has ended and take
 * one second more. Each also leaves what the bootstrap checks for afterwards.
 */
function standIn(name: string, body: string): string {
  const file = path.join(work, 'bin', name);
  writeFileSync(file, `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const args = process.argv.slice(2);
const record = (what) => fs.appendFileSync(process.env.STAND_IN_RECORD, what + ' ' + Date.now() + '\\n');
const lines = () => fs.readFileSync(process.env.STAND_IN_RECORD, { encoding: 'utf8', flag: 'a+' }).split('\\n');
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
function install(as, work) {
  record(as + ' start');
  if (process.env.STAND_IN_PEERS === 'go-failed') {
    if (as === 'go') {
      record('go end');
      process.exit(3);
    }
    for (let i = 0; i < 600 && !lines().some((l) => l.startsWith('go end')); i++) sleep(50);
    sleep(1000);
  } else {
    for (let i = 0; i < 600 && lines().filter((l) => / start /.test(l)).length < ${INSTALLS.length}; i++) sleep(50);
  }
  work();
  record(as + ' end');
}
${body}
`);
  chmodSync(file, 0o755);
  return file;
}

/** A copy of the project's bootstrap with its own package files, stand-ins on PATH. */
function sandbox(): { root: string; env: NodeJS.ProcessEnv } {
  const root = mkdtempSync(path.join(work, 'project-'));
  mkdirSync(path.join(root, 'scripts', 'temporal-test-server'), { recursive: true });
  for (const f of ['bootstrap.mjs', 'freePort.mjs', 'npmTree.mjs', 'speechPackages.mjs', 'systemTools.mjs']) {
    copyFileSync(path.join(PROJECT_ROOT, 'scripts', f), path.join(root, 'scripts', f));
  }
  copyFileSync(path.join(PROJECT_ROOT, 'scripts', 'temporal-test-server', 'pom.xml'), path.join(root, 'scripts', 'temporal-test-server', 'pom.xml'));
  // The class-data-sharing training run finds no server: the bootstrap goes on without the archive.
  writeFileSync(path.join(root, 'scripts', 'temporal-test-server', 'launch.sh'), '#!/bin/sh\nexit 1\n');
  chmodSync(path.join(root, 'scripts', 'temporal-test-server', 'launch.sh'), 0o755);
  writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'sandbox', version: '1.0.0' }));
  writeFileSync(path.join(root, 'package-lock.json'), JSON.stringify({ name: 'sandbox', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'sandbox', version: '1.0.0' } } }));
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${path.join(work, 'bin')}${path.delimiter}${process.env.PATH}`, GO: path.join(work, 'bin', 'go'), JAVA: path.join(work, 'bin', 'java'), PYTHON3: path.join(work, 'bin', 'python3') };
  // Set by the test runner or npm: the bootstrap would take them instead of installing.
  for (const name of ['TEMPORAL_CLI_PATH', 'TEMPORAL_TEST_SERVER_EXECUTABLE', 'npm_execpath', 'JAVA_HOME']) delete env[name];
  return { root, env };
}

mkdirSync(path.join(work, 'bin'));
standIn('npm', "if (args[0] === 'ci') install('npm', () => fs.mkdirSync(path.join(process.cwd(), 'node_modules'), { recursive: true }));");
standIn('go', "install('go', () => { fs.mkdirSync(process.env.GOBIN, { recursive: true }); fs.writeFileSync(path.join(process.env.GOBIN, 'temporal'), '#!/bin/sh\\necho temporal version 1.5.1\\n', { mode: 0o755 }); });");
standIn('mvn', "const out = args.find((a) => a.startsWith('-DoutputDirectory=')).slice('-DoutputDirectory='.length);\ninstall('mvn', () => { fs.mkdirSync(out, { recursive: true }); fs.writeFileSync(path.join(out, 'temporal-test-server-1.0.0.jar'), ''); });");
standIn('java', "process.stderr.write('openjdk version \"17.0.1\" 2021-10-19\\n');");
// python3 makes the venv, whose python is the same stand-in: pip install waits, the import check passes.
standIn('python3', [
  "if (args[0] === '-m' && args[1] === 'venv') {",
  "  fs.mkdirSync(path.join(args[2], 'bin'), { recursive: true });",
  "  fs.copyFileSync(__filename, path.join(args[2], 'bin', 'python'));",
  "  fs.chmodSync(path.join(args[2], 'bin', 'python'), 0o755);",
  "} else if (args[0] === '-m' && args[1] === 'pip') install('pip', () => {});",
  "else if (args[0] === '-c' && args[1].includes('ensurepip')) console.log('True ' + __filename);",
].join('\n'));

function bootstrap(root: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string; recordAtExit: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'scripts', 'bootstrap.mjs'), '--test'], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stderr, recordAtExit: existsSync(env.STAND_IN_RECORD!) ? readFileSync(env.STAND_IN_RECORD!, 'utf8') : '' }));
  });
}

/** Each install's start and end, from the record. */
function spans(record: string): Record<Install, { start: number; end?: number }> {
  const out = {} as Record<Install, { start: number; end?: number }>;
  for (const line of record.trim().split('\n')) {
    const [name, what, at] = line.split(' ') as [Install, 'start' | 'end', string];
    out[name] = { ...out[name], [what]: Number(at) };
  }
  return out;
}

test('npm ci, go install, mvn and pip install run at once, and the bootstrap ends when all four have', async () => {
  const { root, env } = sandbox();
  const record = path.join(root, 'record');
  const { code, stderr, recordAtExit } = await bootstrap(root, { ...env, STAND_IN_RECORD: record, STAND_IN_PEERS: 'all' });
  assert.equal(code, 0, stderr);
  assert.match(stderr, /toolchain ready in [\d.]+ s \(npm: installed, temporalCli: installed, testServer: installed, cds: unavailable, speechVenv: installed /, stderr);
  const seen = spans(recordAtExit);
  assert.deepEqual(Object.keys(seen).sort(), [...INSTALLS].sort(), recordAtExit);
  const lastStart = Math.max(...INSTALLS.map((i) => seen[i].start));
  for (const i of INSTALLS) assert.ok(seen[i].end! >= lastStart, `${i} was still running when the last install started:\n${recordAtExit}`);
  assert.ok(existsSync(path.join(root, '.tools', 'bin', 'temporal')) && existsSync(path.join(root, 'node_modules', '.bootstrap-stamp')));
});

test('a step that fails fails the bootstrap with its own message, after the steps still running have ended', async () => {
  const { root, env } = sandbox();
  const record = path.join(root, 'record');
  const { code, stderr, recordAtExit } = await bootstrap(root, { ...env, STAND_IN_RECORD: record, STAND_IN_PEERS: 'go-failed' });
  assert.equal(code, 1, stderr);
  assert.match(stderr, /bootstrap: FAILED\ngo install of the Temporal CLI failed \(exit 3\)/, stderr);
  const seen = spans(recordAtExit);
  for (const i of ['npm', 'mvn', 'pip'] as const) assert.ok(seen[i]?.end, `${i} had ended before the bootstrap stopped:\n${recordAtExit}`);
  assert.ok(!existsSync(path.join(root, '.tools', '.bootstrap.lock')), 'the lock is released');
});
