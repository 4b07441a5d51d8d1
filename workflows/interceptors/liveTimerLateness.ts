/**
 * How late the timers of calls that talk fire (docs/calls.md, "Task queues"): for each timer of a
 * workflow on a live-call task queue, the time from its due instant to the moment the workflow
 * code sees it fired, told to the worker through the `liveTimers` sink. A call's ring, talk and
 * analysis timers wait in the same queues and on the same cores as its turns, so their lateness
 * is what a campaign's admissions do to the calls already talking; the admission pacer slows
 * down when it grows.
 *
 * Bundled into every worker's workflow code; it adds no command, so histories are unchanged.
 * The due instant is workflow time (the start of the task that set the timer, the same on
 * replay), the moment seen is the worker's clock (`unsafe.now`, told only outside replay: the
 * sink is not called during replay).
 */
import { proxySinks, workflowInfo, type Sinks, type WorkflowInterceptors } from '@temporalio/workflow';
import { liveCallTaskQueue } from '../contracts.js';

export interface LiveTimerSinks extends Sinks {
  liveTimers: {
    /** A timer of a workflow on a live-call queue fired `lateMs` after its due instant. */
    fired(lateMs: number): void;
  };
}

const { liveTimers } = proxySinks<LiveTimerSinks>();
const LIVE_SUFFIX = liveCallTaskQueue('');

export const interceptors = (): WorkflowInterceptors => {
  // Each timer's due instant (workflow time), by its sequence number, until it fires (a cancelled
  // one stays until the workflow ends: a few numbers per call).
  const dueAt = new Map<number, number>();
  const live = () => workflowInfo().taskQueue.endsWith(LIVE_SUFFIX);
  return {
    outbound: [
      {
        startTimer(input, next) {
          if (live()) dueAt.set(input.seq, Date.now() + input.durationMs);
          return next(input);
        },
      },
    ],
    internals: [
      {
        activate(input, next) {
          for (const job of input.activation.jobs ?? []) {
            const seq = job.fireTimer?.seq;
            if (seq === undefined || seq === null) continue;
            const due = dueAt.get(seq);
            if (due === undefined) continue;
            dueAt.delete(seq);
            liveTimers.fired(Math.max(0, workflowInfo().unsafe.now() - due));
          }
          next(input);
        },
      },
    ],
  };
};
