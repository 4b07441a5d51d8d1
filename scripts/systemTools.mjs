// Every program outside node_modules that `npm start` and `npm test` run, and where each
// comes from. The bootstrap (scripts/bootstrap.mjs) apt-installs the Debian packages of
// this list that are missing; test/toolchain/freshMachine.test.ts fails when code spawns
// a program this list does not name, or when a program here does not come from where it
// says (a tool someone installed by hand). docs/toolchain.md, "System tools".
//
// Fields:
//   command   a program looked up on PATH (or file: a path a package installs, for data)
//   source    'apt'          a Debian package the bootstrap installs when it is missing
//             'prerequisite' installed by whoever sets up the machine (the README's Node, Go,
//                            Java); with `package`, the bootstrap apt-installs it when missing
//             'base'         part of every Debian/Ubuntu system (priority required); checked, never installed
//             'bootstrap'    built or installed by the bootstrap itself (not on PATH)
//             'project'      a script of this repository
//   package   the Debian package that provides it
//   path      where a 'bootstrap' or 'project' tool is, from the repository root
//   for       which of the two commands need it: 'start', 'test'
//   override  environment variables that point at another copy; when one is set, the
//             bootstrap does not install the package
//   why       what uses it

/** @typedef {{ command?: string, file?: string, source: 'apt' | 'prerequisite' | 'base' | 'bootstrap' | 'project', package?: string, path?: string, for: ('start' | 'test')[], override?: string[], why: string }} SystemTool */

/** @type {SystemTool[]} */
export const SYSTEM_TOOLS = [
  { command: 'node', source: 'prerequisite', for: ['start', 'test'], why: 'runs everything (Node 20, with npm 11)' },
  { command: 'npm', source: 'prerequisite', for: ['start', 'test'], why: 'installs node_modules from package-lock.json' },
  { command: 'go', source: 'prerequisite', for: ['start', 'test'], override: ['TEMPORAL_CLI_PATH'], why: 'builds the Temporal CLI' },
  { command: 'java', source: 'prerequisite', package: 'default-jre-headless', for: ['test'], override: ['TEMPORAL_TEST_SERVER_EXECUTABLE', 'JAVA', 'JAVA_HOME'], why: 'runs the Temporal time-skipping test server' },

  { command: 'temporal', source: 'bootstrap', path: '.tools/bin/temporal', override: ['TEMPORAL_CLI_PATH'], for: ['start', 'test'], why: 'Temporal dev server and Web UI: go install into .tools/bin' },
  { command: 'tsx', source: 'bootstrap', path: 'node_modules/.bin/tsx', for: ['start', 'test'], why: 'node_modules/.bin/tsx: runs the CLI in CLI tests' },
  { command: 'python3', source: 'prerequisite', package: 'python3-venv', for: ['start', 'test'], override: ['PYTHON3'], why: "media edge: runs pocketsphinx's warm decoders (pocketsphinx_worker.py, the standard library on the pocketsphinx package's libpocketsphinx3; POCKETSPHINX_WARM_DECODERS=0 does without); makes the speech venv (npm start: only when an engine needs it, STT_PROVIDER=whisper)" },
  { command: 'python', source: 'bootstrap', path: '.tools/speech-venv/bin/python', for: ['test'], why: 'the speech venv (scripts/speechPackages.mjs): runs the Whisper worker (npm start: only with STT_PROVIDER=whisper)' },
  { command: 'schemathesis', source: 'bootstrap', path: '.tools/speech-venv/bin/schemathesis', for: ['test'], why: 'the tools venv (scripts/speechPackages.mjs): the OpenAPI contract test (test/api/schemathesis.test.ts)' },
  { command: 'launch.sh', source: 'project', path: 'scripts/temporal-test-server/launch.sh', override: ['TEMPORAL_TEST_SERVER_EXECUTABLE'], for: ['test'], why: 'scripts/temporal-test-server/launch.sh: execs java on the test server jars' },

  { command: 'mvn', source: 'apt', package: 'maven', for: ['test'], override: ['TEMPORAL_TEST_SERVER_EXECUTABLE'], why: 'resolves the test server jars from Maven Central' },
  { command: 'redis-server', source: 'apt', package: 'redis-server', for: ['test'], override: ['REDIS_BIN'], why: 'the throwaway Redis of a test run' },
  { command: 'chromium', source: 'apt', package: 'chromium', for: ['test'], override: ['CHROMIUM_PATH'], why: 'browser tests (playwright-core drives it)' },
  { command: 'espeak-ng', source: 'apt', package: 'espeak-ng', for: ['start', 'test'], why: 'media edge: speech synthesis' },
  { command: 'festival', source: 'apt', package: 'festival', for: ['start', 'test'], why: 'media edge and recordings: speech synthesis' },
  { command: 'text2wave', source: 'apt', package: 'festival', for: ['start', 'test'], why: 'recordings: synthesis of simulated calls' },
  { file: '/usr/share/festival/voices/english/kal_diphone', source: 'apt', package: 'festvox-kallpc16k', for: ['start', 'test'], why: "festival's voice kal_diphone" },
  { command: 'pocketsphinx_continuous', source: 'apt', package: 'pocketsphinx', for: ['start', 'test'], why: 'media edge: speech recognition' },
  { command: 'pocketsphinx_batch', source: 'apt', package: 'pocketsphinx', for: ['start', 'test'], why: 'media edge: speech recognition of recordings' },
  { file: '/usr/share/pocketsphinx/model/en-us/en-us', source: 'apt', package: 'pocketsphinx-en-us', for: ['start', 'test'], why: "pocketsphinx's US English model" },
  { command: 'sox', source: 'apt', package: 'sox', for: ['start', 'test'], why: 'media edge: audio conversion' },
  { command: 'soxi', source: 'apt', package: 'sox', for: ['start', 'test'], why: 'media edge: audio file facts' },
  { command: 'baresip', source: 'apt', package: 'baresip-core', for: ['test'], why: 'SIP trunk tests: a real telephone that answers, rings, is busy or dials (test/support/baresip.ts)' },
  { command: 'sipp', source: 'apt', package: 'sip-tester', for: ['test'], why: 'SIP trunk tests: scripted SIP scenarios such as digest challenges (test/support/sipp.ts)' },

  { command: 'sh', source: 'base', package: 'dash', for: ['start', 'test'], why: 'the test runner watchdog; the media edge pipes audio to pocketsphinx through sh -c' },
  { command: 'cat', source: 'base', package: 'coreutils', for: ['start', 'test'], why: 'media edge: the pipe in front of pocketsphinx_continuous (inside its sh -c string)' },
  { command: 'id', source: 'base', package: 'coreutils', for: ['test'], why: 'the test runner: does user postgres exist' },
  { command: 'nice', source: 'base', package: 'coreutils', for: ['test'], why: 'the test runner: the lanes\' files at a lower priority while a foreground file runs beside them (scripts/testLanes.mjs)' },
  { command: 'groupadd', source: 'base', package: 'passwd', for: ['test'], why: 'the test runner as root: user postgres for the embedded Postgres' },
  { command: 'useradd', source: 'base', package: 'passwd', for: ['test'], why: 'the test runner as root: user postgres for the embedded Postgres' },
  { command: 'apt-get', source: 'base', package: 'apt', for: ['start', 'test'], why: 'the bootstrap installs the apt packages of this list (as root)' },
  { command: 'dpkg-query', source: 'base', package: 'dpkg', for: ['test'], why: 'test/toolchain/freshMachine.test.ts: which package a tool comes from' },
];

/** The tools `npm start` (mode 'start') or `npm test` (mode 'test') needs. */
export function toolsFor(mode) {
  return SYSTEM_TOOLS.filter((t) => t.for.includes(mode));
}

/**
 * The Debian packages to install for `mode`, in list order without repeats: those of
 * tools that `isPresent(tool)` says are missing, skipping tools whose override variable is
 * set in `env`. `isPresent` decides how a tool is found (PATH, a file, JAVA_HOME, ...).
 */
export function missingPackages(mode, isPresent, env = process.env) {
  const packages = [];
  for (const tool of toolsFor(mode)) {
    if (!tool.package || (tool.source !== 'apt' && tool.source !== 'prerequisite')) continue;
    if (tool.override?.some((name) => env[name])) continue;
    if (!packages.includes(tool.package) && !isPresent(tool)) packages.push(tool.package);
  }
  return packages;
}
