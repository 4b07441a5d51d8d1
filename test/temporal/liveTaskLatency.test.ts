// The live calls' pace read from the SDK's metrics (src/temporal/liveTaskLatency.ts): the
// live queue's schedule-to-start histogram parsed from the Prometheus text the runtime serves,
// and the watcher telling the pace the p99 of the tasks started between two readings; a lost
// endpoint leaves the pace on time.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { LiveCallPace } from '../../src/domain/admissionRate.js';
import { taskStartBuckets, watchLiveTaskLatency } from '../../src/temporal/liveTaskLatency.js';
import { eventually } from '../support/eventually.js';

const LIVE = 'voice-agent-live-calls';
const BOUNDS = ['0.1', '0.25', '0.5', '+Inf'];

/** The runtime's exposition of the schedule-to-start histogram for the live queue (counts per bound) and the service queue. */
function exposition(live: number[], service: number[] = [0, 0, 0, 0]): string {
  const lines = ['# HELP temporal_workflow_task_schedule_to_start_latency_seconds Workflow task schedule-to-start latency', '# TYPE temporal_workflow_task_schedule_to_start_latency_seconds histogram'];
  for (const [queue, counts] of [
    [LIVE, live],
    ['voice-agent', service],
  ] as const) {
    BOUNDS.forEach((le, i) =>
      lines.push(`temporal_workflow_task_schedule_to_start_latency_seconds_bucket{namespace="default",service_name="temporal-core-sdk",task_queue="${queue}",le="${le}"} ${counts[i]}`),
    );
    lines.push(`temporal_workflow_task_schedule_to_start_latency_seconds_count{namespace="default",service_name="temporal-core-sdk",task_queue="${queue}"} ${counts[3]}`);
  }
  lines.push(`temporal_activity_schedule_to_start_latency_seconds_bucket{namespace="default",service_name="temporal-core-sdk",task_queue="${LIVE}",le="0.1"} 999`);
  return `${lines.join('\n')}\n`;
}

test("the live queue's buckets, in ms, and no other queue's or metric's", () => {
  const buckets = taskStartBuckets(exposition([5, 8, 9, 10], [1, 1, 1, 50]), LIVE);
  assert.deepEqual(
    [...buckets],
    [
      [100, 5],
      [250, 8],
      [500, 9],
      [Infinity, 10],
    ],
  );
  assert.equal(taskStartBuckets(exposition([1, 1, 1, 1]), 'other-live-calls').size, 0);
});

test('the watcher tells the p99 of the tasks started between readings; an endpoint gone leaves the pace on time', async () => {
  let body = exposition([100, 100, 100, 100]);
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(body));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const pace = new LiveCallPace(250, 300);
  const watch = watchLiveTaskLatency({ metricsUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`, taskQueue: LIVE, pace, everyMs: 50 });
  try {
    // The first reading is the baseline (a hundred tasks before the watch); then ten, two past half a second.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(pace.late(Date.now()), false, 'no task since the baseline');
    body = exposition([105, 108, 108, 110]);
    await eventually(() => pace.late(Date.now()), 'late: the p99 of the ten is past 500 ms');
    assert.equal(pace.lateness(Date.now()), Infinity);
    body = exposition([205, 208, 208, 210]);
    await eventually(() => pace.lateness(Date.now()) === 100, 'the next hundred all within 100 ms: on time');
    body = exposition([205, 208, 209, 211]);
    await eventually(() => pace.late(Date.now()), 'late again');
    server.close();
    server.closeAllConnections();
    await eventually(() => !pace.late(Date.now()), 'on time once the readings are stale');
  } finally {
    watch.stop();
    server.close();
  }
});
