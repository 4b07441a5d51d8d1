// The pure parts of bench/campaignScale.ts that turn what a run read (workflow histories,
// call rows) into the issue-27 figures: workflow-task latency from a history, the line
// order of starts, the head of the line, and a figure against its target.

/** What is read of a history event (the shape of @temporalio/proto's IHistoryEvent). */
export interface HistoryEvent {
  /** A protobuf Timestamp; seconds may be a Long. */
  eventTime?: { seconds?: unknown; nanos?: number | null } | null;
  workflowTaskScheduledEventAttributes?: unknown;
  workflowTaskStartedEventAttributes?: unknown;
  workflowTaskTimedOutEventAttributes?: unknown;
}

/** Milliseconds of a history event's time (a protobuf Timestamp). */
export function eventMs(e: HistoryEvent): number {
  const t = e.eventTime;
  if (!t) return NaN;
  return Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

export interface WorkflowTaskWait {
  /** When the work was first scheduled (the first of any schedules that timed out before it started). */
  scheduledMs: number;
  /** Scheduled → started, in ms. */
  waitMs: number;
  /** Schedules that timed out before this one started (a sticky task handed back, then scheduled again). */
  timedOutBefore: number;
}

/**
 * Every workflow task of a history that started: the time from WorkflowTaskScheduled to its
 * WorkflowTaskStarted. A task that timed out before it started (schedule-to-start, on a
 * worker's sticky queue) is scheduled again; the work waited from the first schedule, so the
 * wait runs from there and the timeouts are counted with it.
 */
export function workflowTaskWaits(events: readonly HistoryEvent[]): WorkflowTaskWait[] {
  const waits: WorkflowTaskWait[] = [];
  let firstScheduled: number | undefined;
  let timedOut = 0;
  for (const e of events) {
    if (e.workflowTaskScheduledEventAttributes) {
      firstScheduled ??= eventMs(e);
    } else if (e.workflowTaskTimedOutEventAttributes) {
      // A task that started and then timed out is followed by a schedule of its own; one
      // that never started keeps its first schedule as the start of the wait.
      timedOut += 1;
    } else if (e.workflowTaskStartedEventAttributes) {
      if (firstScheduled !== undefined) waits.push({ scheduledMs: firstScheduled, waitMs: eventMs(e) - firstScheduled, timedOutBefore: timedOut });
      firstScheduled = undefined;
      timedOut = 0;
    }
  }
  return waits;
}

export interface LineStart {
  /** The call's place in its team's line (scheduled_time, then seq): any increasing number. */
  place: number;
  /** When it started (actual_time, ms); undefined when it never started. */
  startedMs?: number;
}

/**
 * Calls that started out of line by more than one admission batch: a call counts when some
 * call at least `batch` places behind it in line started strictly before it. With
 * batch = 1 it counts every call that anything behind it overtook; calls admitted together
 * (within `batch` places) may start in any order among themselves. Calls that never
 * started are left out.
 */
export function lineInversions(calls: readonly LineStart[], batch: number): number {
  const line = calls.filter((c) => c.startedMs !== undefined).sort((a, b) => a.place - b.place);
  // earliestFrom[i]: the earliest start among line[i..].
  const earliestFrom = new Array<number>(line.length + 1).fill(Infinity);
  for (let i = line.length - 1; i >= 0; i--) earliestFrom[i] = Math.min(line[i].startedMs!, earliestFrom[i + 1]);
  let inverted = 0;
  for (let i = 0; i < line.length; i++) {
    const behind = Math.min(line.length, i + Math.max(1, batch));
    if (earliestFrom[behind] < line[i].startedMs!) inverted += 1;
  }
  return inverted;
}

export interface Verdict {
  value: number;
  target: number;
  met: boolean;
}

/** A figure against a target it must not exceed. */
export function atMost(value: number, target: number): Verdict {
  return { value, target, met: Number.isFinite(value) && value <= target };
}

/** "PASS" or "MISS" for a printed line. */
export const verdictWord = (v: Verdict): string => (v.met ? 'PASS' : 'MISS');
