/**
 * The admission pacer (docs/calls.md, "Admission"): each worker process hands free slots to
 * the head of the admission line at ADMISSION_RATE_PER_SECOND and wakes the calls it grants
 * (one slotGranted signal each), holding while the live-call queue is behind (and then looking at
 * the line, empty or not, only as often as it asks for that queue's backlog), and admitting
 * more slowly while the live calls' workflow tasks wait to start (and then leaving the slots
 * its worker's calls free to it). Calls that fall due wait in the line in Postgres, not as
 * workflow tasks: 10,000 calls due at one instant start at the rate the workers sustain, the
 * head of the line first, and the calls already talking keep their turns.
 *
 * Several workers each run one; the team's slot lock keeps the ceiling exact between them,
 * and the rate is per worker (workers add capacity). A lost wake-up is re-sent by the
 * reconciler; each call's own durable timer, far past its due time, is the last resort.
 */
import { AdmissionRate, LiveAdmissionRate, LiveCallPace } from '../domain/admissionRate.js';
import { admissionLineTeams } from '../db/repositories/concurrencySlots.js';
import { admissionRate } from '../metrics/workerMetrics.js';
import { admitDueCalls, type CallSlotDeps } from './callSlots.js';
import { OutageLog } from '../logging/outageLog.js';

export interface AdmissionPacerOptions {
  ratePerSecond: number;
  /** How often the line is looked at. */
  tickMs?: number;
  /**
   * The workflow tasks waiting on the live-call task queue (docs/calls.md, "Task queues"):
   * while more than LIVE_BACKLOG_LIMIT wait, the pacer admits nothing, so calls already
   * admitted are served before more join them, whatever the rate says.
   */
  liveBacklog?: () => Promise<number>;
  /**
   * How long the live calls' workflow tasks wait to start (liveCallPace): while their p99 is
   * above LIVE_TASK_WAIT_LIMIT_MS and due calls wait, the rate is lowered, and raised back once
   * they are on time or the line is empty; calls falling due after a quiet spell start at a
   * quarter of the rate, doubled while on time (LiveAdmissionRate). Without it, the pacer
   * admits at `ratePerSecond`.
   */
  livePace?: LiveCallPace;
}

/** Live-call workflow tasks waiting above which admissions hold (a few calls' worth of tasks). */
export const LIVE_BACKLOG_LIMIT = 10;
/** How often the live-call queue's backlog is asked for (one RPC to Temporal). */
const BACKLOG_LOOK_MS = 500;
/**
 * The live calls' workflow tasks' wait to start (p99 over the last reading) above which
 * admissions slow down while due calls wait, and the slots the worker's calls free are left to
 * the pacer. A live call's turn that waits a quarter of a second is a pause the person on the
 * line hears; the pace is read half a second after the admissions that make it, so the limit
 * is lower than that (bench/campaignScale.ts chose it: docs/benchmarks.md, "Releases that
 * follow the live calls' pace").
 */
export const LIVE_TASK_WAIT_LIMIT_MS = 100;
/** How often the rate follows the live calls' pace. */
const RATE_STEP_MS = 500;
/**
 * The line empty this long, due calls start slowly again (LiveAdmissionRate): a simulated
 * call's own tasks come within about five seconds of its admission, so a quiet spell that
 * long has left nothing of the last admissions to read.
 */
const IDLE_RESTART_MS = 5_000;
/** How often the worker reads the live tasks' waits from its SDK metrics. */
export const LIVE_PACE_READ_MS = 500;
/** A reading older than this (the metrics unread since) counts as on time. */
const LIVE_PACE_STALE_MS = 2_000;

/**
 * This worker's live calls' pace (src/temporal/liveTaskLatency.ts reads it into the pace): the
 * admission pacer follows it, and, while it is late, the slots the worker's calls free are left
 * to the pacer instead of going straight to the next call in line (CallSlotDeps.holdFreedSlots).
 */
export function liveCallPace(): LiveCallPace {
  return new LiveCallPace(LIVE_TASK_WAIT_LIMIT_MS, LIVE_PACE_STALE_MS);
}

export interface AdmissionPacer {
  /** Stops the loop after the step in flight, if any. */
  stop(): Promise<void>;
}

const DEFAULT_TICK_MS = 100;

/** Starts the pacer's loop in this process. */
export function startAdmissionPacer(deps: CallSlotDeps, opts: AdmissionPacerOptions): AdmissionPacer {
  const tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
  const rate = new AdmissionRate(opts.ratePerSecond, tickMs);
  const liveRate = new LiveAdmissionRate(opts.ratePerSecond, { limitMs: LIVE_TASK_WAIT_LIMIT_MS, stepMs: RATE_STEP_MS, idleRestartMs: IDLE_RESTART_MS });
  admissionRate.set(opts.ratePerSecond);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let step: Promise<void> = Promise.resolve();

  let backlog = 0;
  // Whether the last look at the line found due calls with a free slot.
  let lineFound = false;
  // When the backlog was last asked for, or, while holding, the line was found empty.
  let lookedAt = 0;
  // One warning per outage, and one line when it ends: at ten ticks a second, a warning per
  // failure would bury the log while the database or Temporal is away.
  const backlogOutage = new OutageLog(deps.logger, 'live-call queue backlog unknown; admitting at the rate alone', 'live-call queue backlog known again');
  const stepOutage = new OutageLog(deps.logger, 'admission pacer step failed; retrying every tick', 'admission pacer steps succeed again');
  // The rate the live calls' pace allows, applied and shown on the worker's metrics.
  const follow = (perSecond: number) => {
    rate.setRate(perSecond);
    admissionRate.set(perSecond);
  };
  const tick = async () => {
    try {
      if (opts.livePace) {
        const now = Date.now();
        // Lateness while the line is empty is not this pacer's doing (a burst of creations, other
        // work): the rate grows back meanwhile; a line that forms after a quiet spell then starts
        // slowly (lineLooked below), but at once.
        const livePace = opts.livePace;
        follow(liveRate.update(now, () => (lineFound ? livePace.lateness(now) : undefined)));
      }
      let n = rate.available(Date.now());
      if (n <= 0) return;
      // Holding: nothing is admitted until the backlog is asked again, so the line can wait for that too.
      const holding = backlog > LIVE_BACKLOG_LIMIT;
      if (holding && Date.now() - lookedAt < BACKLOG_LOOK_MS) return;
      // Only a line with due calls (and a free slot to give them) is worth asking Temporal about.
      const teams = await admissionLineTeams(deps.pool, n);
      lineFound = teams.length > 0;
      if (opts.livePace) {
        // Calls falling due after a quiet spell start slowly, from this tick on (LiveAdmissionRate).
        follow(liveRate.lineLooked(Date.now(), lineFound));
        n = Math.min(n, rate.available(Date.now()));
      }
      // An empty line while holding: the hold stands (the backlog unasked), and the line is
      // looked at again at the backlog's pace, not at every tick.
      if (teams.length === 0 && holding) lookedAt = Date.now();
      if (teams.length > 0 && opts.liveBacklog && Date.now() - lookedAt >= BACKLOG_LOOK_MS) {
        lookedAt = Date.now();
        // Temporal unable to say (an older server, or away): admit at the rate alone.
        backlog = await opts.liveBacklog().then(
          (count) => {
            backlogOutage.ok();
            return count;
          },
          (err: unknown) => {
            backlogOutage.failed(err);
            return 0;
          },
        );
      }
      if (teams.length > 0 && backlog <= LIVE_BACKLOG_LIMIT) rate.spend((await admitDueCalls(deps, n, teams)).length);
      stepOutage.ok();
    } catch (err) {
      // The database or Temporal is away: the next tick tries again.
      stepOutage.failed(err);
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      step = tick().finally(schedule);
    }, tickMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await step;
    },
  };
}
