#!/usr/bin/env node
// Toolchain bootstrap, run by `npm start` (prestart) and `npm test` (pretest --test).
//
// Plain Node with no dependencies: it runs before node_modules exists. Idempotent and
// cached: every step first checks a cheap stamp and does nothing when it matches, so on
// a warm machine the whole script is a few stat calls and one hash of package-lock.json.
//
//   node scripts/bootstrap.mjs          system packages of `npm start`, npm dependencies, Temporal CLI
//                                       (skipped when TEMPORAL_ADDRESS is set)
//                                       and the speech venv when the configured engines need it
//                                       (STT_PROVIDER=whisper)
//   node scripts/bootstrap.mjs --test   system packages of `npm test`, also the Temporal CLI regardless,
//                                       the Java time-skipping test server (+ its CDS archive) and the
//                                       speech venv with every engine's packages
//
// System packages (redis-server, chromium, the speech tools, maven, ...) are those of
// scripts/systemTools.mjs: whatever is missing is apt-installed in one go as root.
//
// See docs/toolchain.md for what is installed where and what to do without Go, Maven or apt.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync, constants, existsSync, mkdirSync, openSync, closeSync, readFileSync, readdirSync,
  realpathSync, renameSync, rmSync, statSync, writeFileSync,
} from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './freePort.mjs';
import { missingLockedPackages } from './npmTree.mjs';
import { SPEECH_ENGINE_PACKAGES, SPEECH_VENV_PATH, speechEnginesFor } from './speechPackages.mjs';
import { missingPackages, toolsFor } from './systemTools.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TOOLS = path.join(ROOT, '.tools');
const LOGS = path.join(TOOLS, 'logs');
const TEMPORAL_CLI_VERSION = '1.5.1';
const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
const TEST_SERVER_DIR = path.join(TOOLS, 'temporal-test-server');
const TEST_SERVER_LIB = path.join(TEST_SERVER_DIR, 'lib');
const TEST_SERVER_POM = path.join(ROOT, 'scripts', 'temporal-test-server', 'pom.xml');
const TEST_SERVER_LAUNCHER = path.join(ROOT, 'scripts', 'temporal-test-server', 'launch.sh');
const TEST_SERVER_CDS = path.join(TEST_SERVER_DIR, 'test-server.jsa');

const argv = process.argv.slice(2);
const TEST = argv.includes('--test');
const started = Date.now();

class BootstrapError extends Error {}

function log(message) {
  process.stderr.write(`bootstrap: ${message}\n`);
}

// ---------------------------------------------------------------- helpers

function sha256(data) {
  return createHash('sha256').update(data).digest('hex');
}

function readText(file) {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function isExecutable(file) {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Like `which`: the first executable named `name` on PATH (plus the usual system dirs). */
function which(name) {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const extra of ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']) {
    if (!dirs.includes(extra)) dirs.push(extra);
  }
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function fileStamp(file) {
  const st = statSync(file);
  return `${st.size}:${Math.trunc(st.mtimeMs)}`;
}

/**
 * Runs a command to completion; output goes to `logFile` (or is inherited). Rejects on
 * failure. Asynchronous, so that the installing steps can run at once (main()).
 */
async function run(cmd, args, { env, cwd = ROOT, logFile, what } = {}) {
  const fd = logFile ? openSync(logFile, 'w') : undefined;
  let res;
  try {
    res = await new Promise((resolve) => {
      const child = spawn(cmd, args, {
        cwd,
        env: { ...process.env, ...env },
        stdio: ['ignore', fd ?? 'inherit', fd ?? 'inherit'],
      });
      child.once('error', (error) => resolve({ error }));
      child.once('exit', (status, signal) => resolve({ status, signal }));
    });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (res.error) throw new BootstrapError(`${what ?? cmd} could not run: ${res.error.message}`);
  if (res.status !== 0) {
    let tail = '';
    if (logFile) {
      const lines = (readText(logFile) ?? '').trimEnd().split('\n');
      tail = `\n--- last lines of ${path.relative(ROOT, logFile)} ---\n${lines.slice(-25).join('\n')}`;
    }
    throw new BootstrapError(`${what ?? cmd} failed (exit ${res.status ?? res.signal})${tail}`);
  }
}

// One bootstrap at a time per checkout does the installing (several `npm test` runs may
// start together). The lock is only taken when a step has work to do, so the warm path
// never waits; after taking it the step checks again, since the other run may have done it.
const LOCK_DIR = path.join(TOOLS, '.bootstrap.lock');
let lockHeld = false;

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function acquireLock() {
  if (lockHeld) return;
  mkdirSync(TOOLS, { recursive: true });
  const deadline = Date.now() + 30 * 60_000;
  let announced = false;
  for (;;) {
    try {
      mkdirSync(LOCK_DIR);
      writeFileSync(path.join(LOCK_DIR, 'pid'), String(process.pid));
      lockHeld = true;
      return;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    const owner = Number(readText(path.join(LOCK_DIR, 'pid')));
    let age = 0;
    try {
      age = Date.now() - statSync(LOCK_DIR).mtimeMs;
    } catch {
      continue; // released meanwhile
    }
    if ((owner && !pidAlive(owner)) || (!owner && age > 10_000)) {
      rmSync(LOCK_DIR, { recursive: true, force: true }); // left behind by a killed run
      continue;
    }
    if (Date.now() > deadline) throw new BootstrapError(`another bootstrap (pid ${owner}) holds ${LOCK_DIR} for too long; remove it if that process is gone`);
    if (!announced) {
      log(`waiting for another bootstrap (pid ${owner}) to finish installing…`);
      announced = true;
    }
    sleepSync(500);
  }
}

function releaseLock() {
  if (!lockHeld) return;
  rmSync(LOCK_DIR, { recursive: true, force: true });
  lockHeld = false;
}

process.on('exit', releaseLock);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    releaseLock();
    process.exit(128 + ({ SIGHUP: 1, SIGINT: 2, SIGTERM: 15 })[sig]);
  });
}

// Debian/Ubuntu packages, installed only when we are root and apt-get exists.
let aptUpdated = false;
function canApt() {
  return process.getuid?.() === 0 && Boolean(which('apt-get'));
}
async function aptInstall(packages) {
  acquireLock();
  mkdirSync(LOGS, { recursive: true });
  const logFile = path.join(LOGS, 'apt.log');
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  const wait = ['-o', 'DPkg::Lock::Timeout=600'];
  if (!aptUpdated) {
    log('apt-get update');
    await run('apt-get', [...wait, 'update'], { env, logFile, what: 'apt-get update' });
    aptUpdated = true;
  }
  log(`apt-get install -y ${packages.join(' ')}`);
  await run('apt-get', [...wait, 'install', '-y', '--no-install-recommends', ...packages], {
    env, logFile, what: `apt-get install ${packages.join(' ')}`,
  });
}

// ---------------------------------------------------------------- npm dependencies

const NODE_MODULES = path.join(ROOT, 'node_modules');
const NPM_STAMP = path.join(NODE_MODULES, '.bootstrap-stamp');

function npmWanted() {
  const lock = readText(path.join(ROOT, 'package-lock.json'));
  if (lock === undefined) throw new BootstrapError('package-lock.json is missing; it is committed with the project — restore it (git checkout package-lock.json)');
  // Native modules are built per Node ABI and platform, so those are part of the stamp too.
  return { lock, stamp: `${sha256(lock)} ${process.platform}-${process.arch} abi${process.versions.modules}` };
}

/**
 * True when node_modules was installed from exactly this lock file, judged by npm's own
 * record of the installed tree (node_modules/.package-lock.json). Lets an existing install
 * be adopted without a needless `npm ci` that would wipe node_modules under running processes.
 */
function installedTreeMatches(lockText) {
  const hidden = readText(path.join(NODE_MODULES, '.package-lock.json'));
  if (!hidden) return false;
  try {
    const want = JSON.parse(lockText).packages ?? {};
    const have = JSON.parse(hidden).packages ?? {};
    for (const [key, entry] of Object.entries(want)) {
      if (key === '') continue;
      const got = have[key];
      if (!got) {
        if (entry.optional) continue; // other platforms' optional binaries are never installed
        return false;
      }
      if (got.version !== entry.version || (entry.integrity && got.integrity && got.integrity !== entry.integrity)) return false;
    }
    for (const key of Object.keys(have)) if (key !== '' && !(key in want)) return false;
    return true;
  } catch {
    return false;
  }
}

async function ensureNpmDependencies() {
  const { lock, stamp } = npmWanted();
  // A package folder deleted since the install leaves npm's record as it was: look at the folders too.
  const missing = () => missingLockedPackages(ROOT, lock);
  const present = () => existsSync(NODE_MODULES) && missing().length === 0;
  if (readText(NPM_STAMP) === stamp && existsSync(path.join(NODE_MODULES, '.package-lock.json')) && present()) return 'cached';
  if (existsSync(NODE_MODULES) && installedTreeMatches(lock) && present()) {
    writeFileSync(NPM_STAMP, stamp);
    return 'adopted';
  }
  acquireLock();
  if (readText(NPM_STAMP) === stamp && present()) return 'cached';
  if (existsSync(NODE_MODULES)) {
    const gone = missing();
    if (gone.length > 0) log(`node_modules lacks ${gone.slice(0, 5).join(', ')}${gone.length > 5 ? ` and ${gone.length - 5} more` : ''}`);
  }
  log('npm ci (node_modules missing or out of date with package-lock.json)…');
  // Use the npm that is running us when we were started by `npm start` / `npm test`.
  const npmCli = process.env.npm_execpath && /npm-cli\.js$/.test(process.env.npm_execpath) ? process.env.npm_execpath : undefined;
  const [cmd, args] = npmCli ? [process.execPath, [npmCli]] : ['npm', []];
  const flags = ['--include=dev', '--no-audit', '--no-fund'];
  mkdirSync(LOGS, { recursive: true });
  const ciLog = path.join(LOGS, 'npm-ci.log');
  try {
    await run(cmd, [...args, 'ci', ...flags], { what: 'npm ci', logFile: ciLog });
  } catch (err) {
    // `npm ci` insists that the lock lists every optional platform package of every
    // dependency (e.g. @swc/core-darwin-arm64). A lock made where the registry does not
    // serve other platforms' packages lacks them, and `npm ci` refuses it before touching
    // node_modules. `npm install --no-save` then installs the very versions of the lock.
    if (!/can only install packages when your package\.json and package-lock\.json/.test(readText(ciLog) ?? '')) throw err;
    log('npm ci rejects the lock (it lacks optional packages of other platforms); installing the locked versions with npm install --no-save…');
    await run(cmd, [...args, 'install', '--no-save', ...flags], { what: 'npm install' });
    if (readText(path.join(ROOT, 'package-lock.json')) !== lock) {
      writeFileSync(path.join(ROOT, 'package-lock.json'), lock);
      log('warning: npm install wanted to change package-lock.json; restored the committed one');
    }
  }
  writeFileSync(NPM_STAMP, stamp);
  return 'installed';
}

// ---------------------------------------------------------------- Temporal CLI

const TEMPORAL_BIN_DIR = path.join(TOOLS, 'bin');
const TEMPORAL_BIN = path.join(TEMPORAL_BIN_DIR, 'temporal');
const TEMPORAL_STAMP = path.join(TEMPORAL_BIN_DIR, '.temporal.stamp');

function findGo() {
  // GO=/path/to/go picks the toolchain (and GO=none pretends there is none).
  if (process.env.GO) return isExecutable(process.env.GO) ? process.env.GO : undefined;
  return which('go') ?? ['/usr/local/go/bin/go', path.join(process.env.HOME ?? '/root', 'go', 'bin', 'go'), '/usr/lib/go/bin/go'].find(isExecutable);
}

/** The CLI version of a temporal binary: release builds print it; `go install` builds print 0.0.0-DEV, so read the Go build info instead. */
function temporalCliVersion(bin) {
  const res = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 15_000 });
  const printed = /temporal version (\S+)/.exec(res.stdout ?? '')?.[1];
  if (printed && printed !== '0.0.0-DEV') return printed;
  const go = findGo();
  if (go) {
    const info = spawnSync(go, ['version', '-m', bin], { encoding: 'utf8', timeout: 15_000 });
    const mod = /^\s*mod\s+github\.com\/temporalio\/cli\s+v(\S+)/m.exec(info.stdout ?? '')?.[1];
    if (mod) return mod;
  }
  return printed;
}

function cliVersionAcceptable(version) {
  return typeof version === 'string' && /^1\.5\.\d+$/.test(version);
}

function noGoMessage(reason) {
  return [
    `${reason}`,
    'The Temporal CLI (its dev server runs Temporal and the Web UI for `npm start` and the tests) is built',
    `with Go, and no Go toolchain was found (looked on PATH, /usr/local/go/bin). Do one of:`,
    `  - install Go >= 1.25 (https://go.dev/dl/, or apt-get install golang-go where recent enough) and rerun;`,
    `    bootstrap then runs: GOBIN=${TEMPORAL_BIN_DIR} go install ${TEMPORAL_CLI_MODULE}@v${TEMPORAL_CLI_VERSION}`,
    `  - or download the temporal CLI v${TEMPORAL_CLI_VERSION} release archive for your platform from`,
    `    https://github.com/temporalio/cli/releases/tag/v${TEMPORAL_CLI_VERSION} and put its \`temporal\` binary at`,
    `    ${TEMPORAL_BIN} (chmod +x)`,
    '  - or set TEMPORAL_CLI_PATH to an existing temporal CLI v1.5.x binary',
    TEST ? '' : '  - or (npm start only) set TEMPORAL_ADDRESS to use an already running Temporal server.',
  ].filter(Boolean).join('\n');
}

async function ensureTemporalCli() {
  if (!TEST && process.env.TEMPORAL_ADDRESS) return 'skipped (TEMPORAL_ADDRESS is set)';
  if (process.env.TEMPORAL_CLI_PATH) {
    if (!isExecutable(process.env.TEMPORAL_CLI_PATH)) throw new BootstrapError(`TEMPORAL_CLI_PATH=${process.env.TEMPORAL_CLI_PATH} is not an executable file`);
    return 'external';
  }
  if (isExecutable(TEMPORAL_BIN)) {
    const stamp = `${TEMPORAL_CLI_VERSION} ${fileStamp(TEMPORAL_BIN)}`;
    if (readText(TEMPORAL_STAMP) === stamp) return 'cached';
    const version = temporalCliVersion(TEMPORAL_BIN);
    if (cliVersionAcceptable(version)) {
      writeFileSync(TEMPORAL_STAMP, stamp);
      return 'cached';
    }
    log(`${path.relative(ROOT, TEMPORAL_BIN)} reports version ${version ?? 'unknown'}; want ${TEMPORAL_CLI_VERSION}, reinstalling`);
  }
  const go = findGo();
  if (!go) throw new BootstrapError(noGoMessage(`Temporal CLI not found at ${TEMPORAL_BIN}.`));
  acquireLock();
  if (isExecutable(TEMPORAL_BIN) && cliVersionAcceptable(temporalCliVersion(TEMPORAL_BIN))) {
    writeFileSync(TEMPORAL_STAMP, `${TEMPORAL_CLI_VERSION} ${fileStamp(TEMPORAL_BIN)}`);
    return 'cached';
  }
  mkdirSync(TEMPORAL_BIN_DIR, { recursive: true });
  mkdirSync(LOGS, { recursive: true });
  log(`go install ${TEMPORAL_CLI_MODULE}@v${TEMPORAL_CLI_VERSION} → ${path.relative(ROOT, TEMPORAL_BIN_DIR)} (one-time; compiling takes a few minutes)…`);
  const env = {
    GOBIN: TEMPORAL_BIN_DIR,
    // cli v1.5.1 needs Go >= 1.25; `auto` lets an older Go fetch that toolchain from the module proxy.
    GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'auto',
    GOFLAGS: process.env.GOFLAGS ?? '',
  };
  if (!process.env.HOME && !process.env.GOPATH) {
    env.GOPATH = path.join(TOOLS, 'go');
    env.GOCACHE = path.join(TOOLS, 'go', 'cache');
  }
  await run(go, ['install', `${TEMPORAL_CLI_MODULE}@v${TEMPORAL_CLI_VERSION}`], {
    env, logFile: path.join(LOGS, 'go-install.log'), what: 'go install of the Temporal CLI',
  });
  if (!isExecutable(TEMPORAL_BIN)) throw new BootstrapError(`go install succeeded but ${TEMPORAL_BIN} is missing`);
  writeFileSync(TEMPORAL_STAMP, `${TEMPORAL_CLI_VERSION} ${fileStamp(TEMPORAL_BIN)}`);
  return 'installed';
}

// ---------------------------------------------------------------- Java test server

function findJava() {
  if (process.env.JAVA && isExecutable(process.env.JAVA)) return process.env.JAVA;
  if (process.env.JAVA_HOME && isExecutable(path.join(process.env.JAVA_HOME, 'bin', 'java'))) return path.join(process.env.JAVA_HOME, 'bin', 'java');
  return which('java');
}

function javaMajor(java) {
  const res = spawnSync(java, ['-version'], { encoding: 'utf8', timeout: 30_000 });
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${res.stderr}${res.stdout}`);
  if (!m) return undefined;
  return m[1] === '1' ? Number(m[2]) : Number(m[1]);
}

function libJars() {
  try {
    return readdirSync(TEST_SERVER_LIB).filter((f) => f.endsWith('.jar')).sort();
  } catch {
    return [];
  }
}

/** java and mvn, which the system packages step installed when missing (when it could). */
function ensureJavaAndMaven() {
  const java = findJava();
  const mvn = which('mvn');
  if (java && mvn) return { java, mvn };
  const missing = [!java && 'java (a JRE >= 11)', !mvn && 'mvn (Apache Maven)'].filter(Boolean).join(' and ');
  throw new BootstrapError([
    `The Temporal time-skipping test server needs ${missing}, which ${java || mvn ? 'is' : 'are'} not installed.`,
    '  Debian/Ubuntu: sudo apt-get install -y maven default-jre-headless',
    '  macOS:         brew install maven openjdk',
    `  or put the jars of io.temporal:temporal-test-server (see ${path.relative(ROOT, TEST_SERVER_POM)}) into`,
    `  ${TEST_SERVER_LIB} yourself, or point TEMPORAL_TEST_SERVER_EXECUTABLE at a native temporal-test-server binary.`,
  ].join('\n'));
}

async function ensureTestServerJars() {
  if (process.env.TEMPORAL_TEST_SERVER_EXECUTABLE) {
    if (!isExecutable(process.env.TEMPORAL_TEST_SERVER_EXECUTABLE)) throw new BootstrapError(`TEMPORAL_TEST_SERVER_EXECUTABLE=${process.env.TEMPORAL_TEST_SERVER_EXECUTABLE} is not an executable file`);
    return 'external';
  }
  const pom = readText(TEST_SERVER_POM);
  if (pom === undefined) throw new BootstrapError(`${TEST_SERVER_POM} is missing`);
  const stampFile = path.join(TEST_SERVER_DIR, '.lib.stamp');
  const stamp = sha256(pom);
  const hasServerJar = () => libJars().some((f) => f.startsWith('temporal-test-server-'));
  if (readText(stampFile) === stamp && hasServerJar()) return 'cached';
  const { java } = ensureJavaAndMaven();
  const major = javaMajor(java);
  if (major !== undefined && major < 11) throw new BootstrapError(`${java} is Java ${major}; the test server needs Java 11 or newer (set JAVA_HOME)`);
  acquireLock();
  if (readText(stampFile) === stamp && hasServerJar()) return 'cached';
  mkdirSync(LOGS, { recursive: true });
  const tmp = `${TEST_SERVER_LIB}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  log('mvn dependency:copy-dependencies io.temporal:temporal-test-server → .tools/temporal-test-server/lib…');
  await run(which('mvn'), ['-q', '-B', '-f', TEST_SERVER_POM, 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${tmp}`], {
    logFile: path.join(LOGS, 'mvn.log'), what: 'mvn (resolving the Temporal test server from Maven Central)',
  });
  rmSync(TEST_SERVER_LIB, { recursive: true, force: true });
  renameSync(tmp, TEST_SERVER_LIB);
  writeFileSync(stampFile, stamp);
  rmSync(path.join(TEST_SERVER_DIR, '.cds.stamp'), { force: true });
  return 'installed';
}

/** One unary gRPC call over plain HTTP/2 (no dependencies): true when the server answered with grpc-status 0. */
function grpcPing(port, method) {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const done = (ok) => {
      session.destroy();
      resolve(ok);
    };
    session.once('error', () => done(false));
    session.setTimeout(3000, () => done(false));
    const req = session.request({ ':method': 'POST', ':path': method, 'content-type': 'application/grpc', te: 'trailers' });
    let status;
    req.on('response', (headers) => { status = headers['grpc-status'] ?? status; });
    req.on('trailers', (trailers) => { status = trailers['grpc-status'] ?? status; });
    req.on('data', () => {});
    req.on('end', () => done(String(status) === '0'));
    req.on('error', () => done(false));
    req.end(Buffer.from([0, 0, 0, 0, 0])); // uncompressed, empty request message
  });
}

/**
 * Class-data-sharing archive for the test server's JVM: a training run of the launcher
 * dumps the classes it loaded (start-up plus one request), and later launches map them
 * instead of parsing ~3,400 classes from 40 jars. Cuts start-up by 2–3× (docs/toolchain.md).
 * Best effort: on failure the launcher simply runs without it.
 */
async function ensureCdsArchive() {
  if (process.env.TEMPORAL_TEST_SERVER_EXECUTABLE) return 'skipped';
  const java = findJava();
  if (!java) return 'skipped (no java)';
  let javaId;
  try {
    const real = realpathSync(java);
    javaId = `${real} ${fileStamp(real)}`;
  } catch {
    javaId = java;
  }
  const stampFile = path.join(TEST_SERVER_DIR, '.cds.stamp');
  const want = `${javaId} ${readText(path.join(TEST_SERVER_DIR, '.lib.stamp'))} ${sha256(readText(TEST_SERVER_LAUNCHER) ?? '')}`;
  const have = readText(stampFile);
  if (have === want && existsSync(TEST_SERVER_CDS)) return 'cached';
  if (have === `failed ${want}`) return 'cached (unavailable)';
  acquireLock();
  log('building the test server class-data-sharing archive (one-time, a few seconds)…');
  const tmp = `${TEST_SERVER_CDS}.tmp-${process.pid}`;
  rmSync(tmp, { force: true });
  const port = await freePort();
  const logFile = path.join(LOGS, 'cds.log');
  mkdirSync(LOGS, { recursive: true });
  const fd = openSync(logFile, 'w');
  const child = spawn(TEST_SERVER_LAUNCHER, [String(port)], {
    env: { ...process.env, TEMPORAL_TEST_SERVER_CDS_DUMP: tmp },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let ok = false;
  const deadline = Date.now() + 60_000;
  while (!ok && Date.now() < deadline && child.exitCode === null) {
    await new Promise((r) => setTimeout(r, 100));
    ok = await grpcPing(port, '/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo');
  }
  if (ok) await grpcPing(port, '/grpc.health.v1.Health/Check');
  child.kill('SIGTERM'); // the JVM writes the archive in its shutdown sequence
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
  if (ok && existsSync(tmp) && statSync(tmp).size > 0) {
    renameSync(tmp, TEST_SERVER_CDS);
    writeFileSync(stampFile, want);
    return 'installed';
  }
  rmSync(tmp, { force: true });
  writeFileSync(stampFile, `failed ${want}`);
  log(`warning: could not build the CDS archive (see ${path.relative(ROOT, logFile)}); the test server works without it but starts slower`);
  return 'unavailable';
}

// ---------------------------------------------------------------- speech venv (Python engines)

const SPEECH_VENV = path.join(ROOT, SPEECH_VENV_PATH);
const SPEECH_VENV_PYTHON = path.join(SPEECH_VENV, 'bin', 'python');
const SPEECH_VENV_STAMP = path.join(SPEECH_VENV, '.bootstrap-stamp');

/** The python3 the venv is made from (PYTHON3=/path picks one): its real path and file stamp, which the venv depends on. */
function basePython() {
  const found = process.env.PYTHON3 ? (isExecutable(process.env.PYTHON3) ? process.env.PYTHON3 : undefined) : which('python3');
  if (!found) return undefined;
  const probe = spawnSync(found, ['-c', 'import sys, venv, ensurepip; print(sys.version_info >= (3, 9), sys.executable)'], { encoding: 'utf8', timeout: 30_000 });
  const [ok, executable] = (probe.stdout ?? '').trim().split(' ');
  let identity;
  try {
    const real = realpathSync(executable || found);
    identity = `${real} ${fileStamp(real)}`;
  } catch {
    identity = found;
  }
  return { bin: found, usable: probe.status === 0 && ok === 'True', identity };
}

function noPythonMessage(engines) {
  return [
    `The speech engines ${engines.join(', ')} run in a Python venv (${SPEECH_VENV_PATH}), and no python3 (>= 3.9, with its venv module) was found.`,
    '  Debian/Ubuntu: sudo apt-get install -y --no-install-recommends python3-venv',
    '  (run as root with apt-get available, the bootstrap installs it itself), or set PYTHON3 to a python3 >= 3.9.',
    TEST ? '' : `  Or choose an engine that needs no Python (${engines.includes('whisper') ? 'STT_PROVIDER=pocketsphinx' : 'the defaults'}).`,
  ].filter(Boolean).join('\n');
}

/**
 * The venv of the Python speech engines (scripts/speechPackages.mjs): created once from
 * python3, then `pip install` of the pinned packages of every engine this run needs (plus
 * those installed before, so a later `npm start` never removes what the tests use). The
 * stamp holds the base python and the installed requirement strings: a matching stamp is
 * a single file read; a new python re-creates the venv, a changed list re-runs pip.
 */
async function ensureSpeechVenv() {
  const engines = speechEnginesFor(TEST ? 'test' : 'start');
  if (engines.length === 0) return 'skipped (no configured engine needs it)';
  const wanted = engines.flatMap((e) => SPEECH_ENGINE_PACKAGES[e].packages);
  const stamped = () => (readText(SPEECH_VENV_STAMP) ?? '').split('\n').filter(Boolean);
  const upToDate = () => {
    const [, ...installed] = stamped();
    return isExecutable(SPEECH_VENV_PYTHON) && wanted.every((p) => installed.includes(p));
  };
  if (upToDate()) return 'cached';
  acquireLock();
  if (upToDate()) return 'cached';
  let python = basePython();
  if (!python?.usable) {
    if (!canApt()) throw new BootstrapError(noPythonMessage(engines));
    await aptInstall(['python3-venv']);
    python = basePython();
    if (!python?.usable) throw new BootstrapError(`apt-get installed python3-venv but ${python?.bin ?? 'python3'} still cannot make a venv\n${noPythonMessage(engines)}`);
  }
  mkdirSync(LOGS, { recursive: true });
  const logFile = path.join(LOGS, 'speech-venv.log');
  const [madeFrom, ...before] = stamped();
  const fresh = !isExecutable(SPEECH_VENV_PYTHON) || madeFrom !== `python ${python.identity}`;
  // Packages a previous run installed stay (a different pin of the same package gives way to the wanted one).
  const nameOf = (requirement) => requirement.split('==')[0].toLowerCase();
  const keep = fresh ? [] : before.filter((p) => !wanted.some((w) => nameOf(w) === nameOf(p)) && Object.values(SPEECH_ENGINE_PACKAGES).some((e) => e.packages.includes(p)));
  // Engines may pin the same package (onnxruntime, numpy): each requirement goes to pip once.
  const all = [...new Set([...wanted, ...keep])];
  if (fresh) {
    rmSync(SPEECH_VENV, { recursive: true, force: true });
    log(`python3 -m venv ${SPEECH_VENV_PATH} (one-time)…`);
    await run(python.bin, ['-m', 'venv', SPEECH_VENV], { logFile, what: 'python3 -m venv' });
  }
  log(`pip install into ${SPEECH_VENV_PATH}: ${engines.join(', ')} (${all.length} pinned packages; the first time takes a minute or two)…`);
  await run(SPEECH_VENV_PYTHON, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', ...all], {
    logFile: path.join(LOGS, 'speech-venv-pip.log'), what: `pip install (the speech venv, ${SPEECH_VENV_PATH})`,
  });
  const imports = Object.values(SPEECH_ENGINE_PACKAGES).filter((e) => e.packages.some((p) => all.includes(p))).flatMap((e) => e.imports);
  await run(SPEECH_VENV_PYTHON, ['-c', imports.map((m) => `import ${m}`).join('; ')], {
    logFile: path.join(LOGS, 'speech-venv-check.log'), what: `the speech venv's check (import ${imports.join(', ')})`,
  });
  writeFileSync(SPEECH_VENV_STAMP, [`python ${python.identity}`, ...all].join('\n') + '\n');
  return `installed ${engines.join(', ')}`;
}

// ---------------------------------------------------------------- system packages

function toolPresent(tool) {
  if (tool.file) return existsSync(tool.file);
  if (tool.command === 'java') return Boolean(findJava());
  return Boolean(which(tool.command));
}

/**
 * The Debian packages of scripts/systemTools.mjs that this mode needs and that are missing,
 * installed with one apt-get as root; otherwise a message naming them. On a warm machine
 * this is a PATH lookup per tool.
 */
async function ensureSystemPackages() {
  const mode = TEST ? 'test' : 'start';
  for (const variable of ['REDIS_BIN', 'CHROMIUM_PATH']) {
    const value = process.env[variable];
    if (value && !isExecutable(value)) throw new BootstrapError(`${variable}=${value} is not an executable file`);
  }
  const packages = missingPackages(mode, toolPresent);
  if (packages.length === 0) return 'cached';
  const missing = toolsFor(mode).filter((t) => packages.includes(t.package) && !toolPresent(t));
  if (!canApt()) {
    const overrides = missing.filter((t) => t.override?.length).map((t) => `  or set ${t.override.join(' or ')} (instead of installing ${t.package})`);
    throw new BootstrapError([
      `\`npm ${TEST ? 'test' : 'start'}\` needs programs that are not installed: ${missing.map((t) => t.command ?? t.file).join(', ')}.`,
      `  Debian/Ubuntu: sudo apt-get install -y --no-install-recommends ${packages.join(' ')}`,
      '  (run as root with apt-get available, the bootstrap installs them itself)',
      ...overrides,
    ].join('\n'));
  }
  await aptInstall(packages);
  const still = toolsFor(mode).filter((t) => packages.includes(t.package) && !toolPresent(t));
  if (still.length) throw new BootstrapError(`apt-get installed ${packages.join(' ')} but ${still.map((t) => t.command ?? t.file).join(', ')} still cannot be found`);
  return `installed ${packages.join(' ')}`;
}

// ---------------------------------------------------------------- main

async function main() {
  const results = {};
  // The system packages first: Go, Java, Maven and python3 may come from them.
  results.system = await ensureSystemPackages();
  // The rest need nothing of one another (npm, Go, Maven and the JVM, pip), so they run at
  // once: on a fresh machine one after the other they took the sum of their times. Each step
  // is awaited to its end, failed or not, so none is left running when the bootstrap stops.
  const record = (name) => (result) => {
    results[name] = result;
  };
  const outcomes = await Promise.allSettled([
    ensureNpmDependencies().then(record('npm')),
    ensureTemporalCli().then(record('temporalCli')),
    TEST ? ensureTestServerJars().then(record('testServer')).then(ensureCdsArchive).then(record('cds')) : undefined,
    ensureSpeechVenv().then(record('speechVenv')),
  ]);
  const failures = outcomes.filter((o) => o.status === 'rejected').map((o) => o.reason);
  const unexpected = failures.find((err) => !(err instanceof BootstrapError));
  if (unexpected) throw unexpected;
  if (failures.length) throw new BootstrapError(failures.map((err) => err.message).join('\n\n'));
  releaseLock();
  const worked = ['system', 'npm', 'temporalCli', 'testServer', 'cds', 'speechVenv'].filter((k) => k in results).map((k) => [k, results[k]]).filter(([, r]) => !String(r).startsWith('cached') && r !== 'external' && !String(r).startsWith('skipped'));
  const ms = Date.now() - started;
  if (worked.length === 0) log(`toolchain up to date (${ms} ms)`);
  else log(`toolchain ready in ${(ms / 1000).toFixed(1)} s (${worked.map(([k, r]) => `${k}: ${r}`).join(', ')})`);
}

main().catch((err) => {
  releaseLock();
  if (err instanceof BootstrapError) {
    process.stderr.write(`\nbootstrap: FAILED\n${err.message}\n\n`);
  } else {
    process.stderr.write(`\nbootstrap: FAILED unexpectedly\n${err?.stack ?? err}\n\n`);
  }
  process.exit(1);
});
