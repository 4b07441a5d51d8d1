// Where the test files marked `// test-runner: foreground` run (scripts/run-tests.mjs,
// docs/toolchain.md "The test runner"): beside the lanes, whose files then run some nice
// levels lower so that the foreground file has first claim on the CPU, or, like the files
// marked `alone`, first, with nothing else running.

/**
 * How many nice levels below the runner the lanes run while foreground files run beside them.
 * Five levels give a foreground process about three times a lane process's share of a
 * contended CPU, and a waking foreground process preempts the lanes. (Foreground files passed
 * beside lanes at the same nice level at load average 9-30, with far less than that; more
 * levels would give the lanes to other people's `nice -n 19` work on a shared machine: a lane
 * at nice 10 has only seven times such a process's share, against 68 at nice 0.)
 */
export const LANE_NICE = 5;
/** The lowest the lanes may go in `auto`: five levels above other people's `nice -n 19` work. */
const LOWEST_LANE_NICE = 14;
/** TEST_FOREGROUND: `auto` (beside when the lanes can go LANE_NICE levels lower and no lower than LOWEST_LANE_NICE), `beside` (always), `alone` (never). */
export const FOREGROUND_MODES = ['auto', 'beside', 'alone'];

/**
 * Whether the foreground files run beside the lanes, and how many nice levels below the runner
 * the lanes' files then run. Beside needs foreground files and lane files, more than one lane
 * (one lane means one file at a time) and, in `auto`, a runner at nice 9 or less: from a runner
 * at nice 19 (`nice -n 19 npm test`) the lanes cannot go below the foreground file.
 */
export function foregroundSchedule({ mode = 'auto', foregroundCount, laneFileCount, laneCount, runnerNice }) {
  if (!FOREGROUND_MODES.includes(mode)) throw new Error(`TEST_FOREGROUND must be one of ${FOREGROUND_MODES.join(', ')}, got ${mode}`);
  const room = Math.max(0, Math.min(LANE_NICE, 19 - runnerNice));
  const possible = foregroundCount > 0 && laneFileCount > 0 && laneCount > 1;
  const beside = possible && (mode === 'beside' || (mode === 'auto' && runnerNice + LANE_NICE <= LOWEST_LANE_NICE));
  return { beside, laneNice: beside ? room : 0 };
}
