/**
 * How late the timers of calls that talk fire (docs/calls.md, "Task queues"): for each timer of a
 * workflow on a live-call task queue, the time from its due instant to the moment the workflow
 * code sees it fired, told to the worker through the `liveTimers` sink, which operators read as
 * `voice_agent_live_timer_lateness_seconds`. The admission pacer does not follow it: a timer's
 * lateness includes the rest of the task that set it, so it reads late on an idle worker too;
 * the pacer reads the tasks' wait to start instead (src/temporal/liveTaskLatency.ts).
 *
 * Bundled into every worker's workflow code; it adds no command, so histories are unchanged.
 * Both instants are the worker's clock (`unsafe.now`): the due instant is when the workflow code
 * set the timer plus its duration, not workflow time, which is the start of the task that set
 * it: a call's timers follow its local activities in the same task (its dial, its end), and
 * measured from the task's start they would look late by those activities' time on any
 * machine, idle or not. A timer set during replay (the workflow left the worker's cache) is not
 * measured, as the moment it was set is gone; the sink is not called during replay either.
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
  // Each timer's due instant (the worker's clock), by its sequence number, until it fires (a
  // cancelled one stays until the workflow ends: a few numbers per call).
  const dueAt = new Map<number, number>();
  const measured = () => workflowInfo().taskQueue.endsWith(LIVE_SUFFIX) && !workflowInfo().unsafe.isReplaying;
  return {
    outbound: [
      {
        startTimer(input, next) {
          if (measured()) dueAt.set(input.seq, workflowInfo().unsafe.now() + input.durationMs);
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
