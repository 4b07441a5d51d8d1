// The pure parts of bench/campaignScale.ts: workflow-task waits read from a history, the
// line-order check, and figures against their targets.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { atMost, lineInversions, verdictWord, workflowTaskWaits, type HistoryEvent } from '../../bench/campaignScale/figures.js';

const at = (ms: number) => ({ eventTime: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 } });
const scheduled = (ms: number): HistoryEvent => ({ ...at(ms), workflowTaskScheduledEventAttributes: {} });
const started = (ms: number): HistoryEvent => ({ ...at(ms), workflowTaskStartedEventAttributes: {} });
const completed = (ms: number): HistoryEvent => ({ ...at(ms) });
const timedOut = (ms: number): HistoryEvent => ({ ...at(ms), workflowTaskTimedOutEventAttributes: {} });

describe('workflow-task waits from a history', () => {
  it('is the time from each task scheduled to its start', () => {
    const events = [scheduled(1_000), started(1_020), completed(1_030), completed(2_000), scheduled(3_000), started(3_250), completed(3_260)];
    assert.deepEqual(workflowTaskWaits(events), [
      { scheduledMs: 1_000, waitMs: 20, timedOutBefore: 0 },
      { scheduledMs: 3_000, waitMs: 250, timedOutBefore: 0 },
    ]);
  });

  it('reads a Timestamp whose seconds are not a plain number (a Long prints as digits)', () => {
    const long = { toString: () => '1700000000' };
    const events: HistoryEvent[] = [
      { eventTime: { seconds: long, nanos: 5e6 }, workflowTaskScheduledEventAttributes: {} },
      { eventTime: { seconds: long, nanos: 105e6 }, workflowTaskStartedEventAttributes: {} },
    ];
    assert.equal(workflowTaskWaits(events)[0].waitMs, 100);
  });

  it('counts a task handed back from a sticky queue from its first schedule, with the timeout', () => {
    const events = [scheduled(10_000), timedOut(70_000), scheduled(70_000), started(71_000), completed(71_010)];
    assert.deepEqual(workflowTaskWaits(events), [{ scheduledMs: 10_000, waitMs: 61_000, timedOutBefore: 1 }]);
  });

  it('leaves out a task scheduled at the end that never started', () => {
    assert.deepEqual(workflowTaskWaits([scheduled(0), started(5), completed(6), scheduled(100)]), [{ scheduledMs: 0, waitMs: 5, timedOutBefore: 0 }]);
  });
});

describe('line order of starts', () => {
  const line = (starts: Array<number | undefined>) => starts.map((startedMs, place) => ({ place, startedMs }));

  it('counts nothing when calls start in line order', () => {
    assert.equal(lineInversions(line([1, 2, 3, 4, 5]), 1), 0);
  });

  it('counts each call that a call at least a batch behind it overtook', () => {
    // The call at place 4 started first: it overtook the four ahead of it.
    assert.equal(lineInversions(line([10, 20, 30, 40, 5]), 1), 4);
    // Within a batch of 2, places 3 and 4 may swap; place 4 is still two places behind 0, 1 and 2.
    assert.equal(lineInversions(line([10, 20, 30, 40, 5]), 2), 3);
    assert.equal(lineInversions(line([10, 20, 30, 40, 5]), 5), 0);
  });

  it('lets calls admitted together start in any order among themselves', () => {
    assert.equal(lineInversions(line([3, 2, 1, 6, 5, 4]), 3), 0);
    assert.equal(lineInversions(line([3, 2, 1, 6, 5, 4]), 2), 2);
  });

  it('orders by place whatever order the rows come in, and leaves out calls that never started', () => {
    const rows = [
      { place: 30, startedMs: 1 },
      { place: 10, startedMs: 2 },
      { place: 20, startedMs: undefined },
    ];
    assert.equal(lineInversions(rows, 1), 1);
  });
});

describe('figures against targets', () => {
  it('meets a target it does not exceed, and never with no figure', () => {
    assert.equal(verdictWord(atMost(250, 250)), 'PASS');
    assert.equal(verdictWord(atMost(251, 250)), 'MISS');
    assert.equal(verdictWord(atMost(NaN, 250)), 'MISS');
  });
});
