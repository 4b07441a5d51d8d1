/**
 * How long the live calls' workflow tasks wait to start, read from this process's Temporal SDK
 * metrics (docs/calls.md, "The live calls' pace"): the SDK measures every workflow task it
 * starts, on a queue's normal and sticky parts alike, from the moment Temporal scheduled it
 * (`temporal_workflow_task_schedule_to_start_latency`). That is the wait of a live call's turn,
 * whatever made it wait: Temporal's queue, the worker's slots, or the CPU. The watcher reads the
 * histogram every half second and gives the admission pacer's LiveCallPace the p99 of the tasks
 * started since the last reading.
 */
import { quantileBetween, type CumulativeBuckets, type LiveCallPace } from '../domain/admissionRate.js';
import type { Logger } from '../logging/logger.js';
import { OutageLog } from '../logging/outageLog.js';

const TASK_START_BUCKET = 'temporal_workflow_task_schedule_to_start_latency_seconds_bucket{';

/**
 * The schedule-to-start bucket bounds the runtime exports (seconds; Core's own are 0.1, 0.5, 1,
 * 5 and more, too coarse for a limit of 100 ms). The key is the metric's name without
 * prefix or unit, as the SDK's `histogramBucketOverrides` takes it.
 */
export const TASK_START_BUCKETS = { workflow_task_schedule_to_start_latency: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] };

/** The task queue's workflow-task schedule-to-start histogram in a Prometheus text exposition (bounds in ms). */
export function taskStartBuckets(exposition: string, taskQueue: string): CumulativeBuckets {
  const buckets: CumulativeBuckets = new Map();
  const queueLabel = `task_queue="${taskQueue}"`;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(TASK_START_BUCKET) || !line.includes(queueLabel)) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    const count = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (le === undefined || !Number.isFinite(count)) continue;
    buckets.set(le === '+Inf' ? Infinity : Number(le) * 1000, count);
  }
  return buckets;
}

export interface LiveTaskLatencyWatch {
  stop(): void;
}

/** Reads `metricsUrl` every `everyMs` and tells `pace` the p99 of the live queue's task waits since the last reading. */
export function watchLiveTaskLatency(opts: { metricsUrl: string; taskQueue: string; pace: LiveCallPace; everyMs: number; logger?: Logger }): LiveTaskLatencyWatch {
  let before: CumulativeBuckets | undefined;
  const outage = new OutageLog(opts.logger, 'live task latency unread; admitting at the rate alone', 'live task latency read again');
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const read = async () => {
    try {
      const response = await fetch(opts.metricsUrl, { signal: AbortSignal.timeout(opts.everyMs) });
      const after = taskStartBuckets(await response.text(), opts.taskQueue);
      // The first reading is the baseline: what came before the watch is not now.
      if (before) opts.pace.observe(quantileBetween(before, after, 0.99), Date.now());
      before = after;
      outage.ok();
    } catch (err) {
      // Unread, the pace goes stale and counts as on time: admissions never wait on it.
      outage.failed(err, { metricsUrl: opts.metricsUrl });
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void read().finally(schedule), opts.everyMs);
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
