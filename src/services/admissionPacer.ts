/**
 * The admission pacer (docs/calls.md, "Admission"): each worker process hands free slots to
 * the head of the admission line at ADMISSION_RATE_PER_SECOND and wakes the calls it grants
 * (one slotGranted signal each), holding while the live-call queue is behind. Calls that fall due wait in the line in Postgres, not as
 * workflow tasks: 10,000 calls due at one instant start at the rate the workers sustain, the
 * head of the line first, and the calls already talking keep their turns.
 *
 * Several workers each run one; the team's slot lock keeps the ceiling exact between them,
 * and the rate is per worker (workers add capacity). A lost wake-up is re-sent by the
 * reconciler; each call's own durable timer, far past its due time, is the last resort.
 */
import { AdmissionRate } from '../domain/admissionRate.js';
import { admitDueCalls, type CallSlotDeps } from './callSlots.js';

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
}

/** Live-call workflow tasks waiting above which admissions hold (a few calls' worth of tasks). */
export const LIVE_BACKLOG_LIMIT = 10;
/** How often the live-call queue's backlog is asked for (one RPC to Temporal). */
const BACKLOG_LOOK_MS = 500;

export interface AdmissionPacer {
  /** Stops the loop after the step in flight, if any. */
  stop(): Promise<void>;
}

const DEFAULT_TICK_MS = 100;

/** Starts the pacer's loop in this process. */
export function startAdmissionPacer(deps: CallSlotDeps, opts: AdmissionPacerOptions): AdmissionPacer {
  const tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
  const rate = new AdmissionRate(opts.ratePerSecond, tickMs);
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let step: Promise<void> = Promise.resolve();

  let backlog = 0;
  let lookedAt = 0;
  const tick = async () => {
    try {
      if (opts.liveBacklog && Date.now() - lookedAt >= BACKLOG_LOOK_MS) {
        lookedAt = Date.now();
        // Temporal unable to say (an older server): admit at the rate alone.
        backlog = await opts.liveBacklog().catch((err: unknown) => {
          deps.logger?.warn({ err }, 'live-call queue backlog unknown');
          return 0;
        });
      }
      if (backlog > LIVE_BACKLOG_LIMIT) return;
      const n = rate.available(Date.now());
      if (n > 0) rate.spend((await admitDueCalls(deps, n)).length);
    } catch (err) {
      // The database or Temporal is away: the next tick tries again.
      deps.logger?.warn({ err }, 'admission pacer step failed');
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
