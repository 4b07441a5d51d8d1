// The control plane of a phone-call workflow test (test/workflows/trunkCall*.test.ts): the
// time-skipping environment, the real API (create-phone-call, cancel-call) and call worker over
// the test database, and edges made of the real dialer (src/mediaEdge/phoneDialer.ts: dial
// claim over HTTP, reports, RTP) on the shared dial queue with the file's stand-in trunk, and
// the file's activities on each edge's own queue.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createLogger } from '../../src/logging/logger.js';
import { CallEventReporter } from '../../src/mediaEdge/callEvents.js';
import { LiveCalls } from '../../src/mediaEdge/liveCalls.js';
import type { PhoneCall } from '../../src/mediaEdge/phoneCall.js';
import { PhoneDialer, type PhoneDialerOptions } from '../../src/mediaEdge/phoneDialer.js';
import { openRtpSession } from '../../src/mediaEdge/rtp/rtpSession.js';
import { callWorkflowId, MEDIA_EDGE_DIAL_TASK_QUEUE, mediaEdgeTaskQueue, type MediaEdgeActivities, type MediaEdgeCancelDialActivities } from '../../workflows/contracts.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from './app.js';
import { CALLS_TASK_QUEUE, callTestConfig, createCallWorker } from './calls.js';
import { createTimeSkippingEnv } from './temporal.js';

/** One edge of the test: its queue, its reporter to the API, the calls it holds, and its dialer. */
export interface TrunkTestEdge {
  readonly taskQueue: string;
  readonly reporter: CallEventReporter;
  readonly calls: LiveCalls;
  readonly dialer: PhoneDialer;
}

export interface TrunkTestEdgeOptions {
  /** The queue's readable part (`<name>-<uuid>`). */
  name: string;
  trunk: PhoneDialerOptions['trunk'];
  /** The RTP ports of this file (files run at once: each its own range). */
  rtpPorts: { min: number; max: number };
  screening?: PhoneDialerOptions['screening'];
  heartbeatMs?: PhoneDialerOptions['heartbeatMs'];
  /** Receives every answered call (the voice edge's part: hold it, report `answered`). */
  onCall(call: PhoneCall, edge: TrunkTestEdge): void;
  /** The edge's own queue: the script's speech and the workflow's cancelDial. */
  activities(edge: TrunkTestEdge): MediaEdgeActivities & MediaEdgeCancelDialActivities;
}

export interface TrunkControlPlane {
  readonly env: TestWorkflowEnvironment;
  readonly app: TestApi;
  /** A client that leaves time skipping locked (calls run in real time). */
  readonly plain: Client;
  readonly team: TestTeam;
  /** The edges' secret for the API. */
  readonly secret: string;
  startEdge(options: TrunkTestEdgeOptions): Promise<TrunkTestEdge>;
  /** create-phone-call to `to` (contact Ada) with the script (default: the team's); the call id. */
  createPhoneCall(to: string, scriptId?: string): Promise<string>;
  /** The activities the call workflow scheduled off the call queue, as name@queue (dial: the shared dial queue, edge: the edge's own). */
  scheduledActivities(callId: string): Promise<string[]>;
  /** Stops every worker, the API and the environment. */
  stop(): Promise<void>;
}

/** Starts the environment, the API and a call worker (VOICE_PROVIDER=sip, the ring timeout given) and a team with room for `maxConcurrent` calls. */
export async function startTrunkControlPlane(opts: { name: string; ringTimeoutSeconds: number; maxConcurrent: number }): Promise<TrunkControlPlane> {
  const secret = `media-edge-secret-for-${opts.name}-tests`;
  const settings = {
    TEMPORAL_TASK_QUEUE: CALLS_TASK_QUEUE,
    DIAL_RATE_PER_NUMBER: '1000',
    VOICE_PROVIDER: 'sip',
    SIP_RING_TIMEOUT_SECONDS: String(opts.ringTimeoutSeconds),
    MEDIA_EDGE_SECRET: secret,
    RATE_LIMITS_ENABLED: 'false',
  };
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  const run = (worker: Worker) => workers.push({ worker, running: worker.run() });
  const env = await createTimeSkippingEnv();
  const app = await startTestApi({ temporal: env.client, config: settings });
  const plain = new Client({ connection: env.connection, namespace: env.namespace });
  run(await createCallWorker(env, app.pool, callTestConfig(settings)));
  const team = await createTestTeam(app.pool, { maxConcurrent: opts.maxConcurrent });

  return {
    env,
    app,
    plain,
    team,
    secret,
    async startEdge(edgeOptions) {
      const taskQueue = mediaEdgeTaskQueue(`${edgeOptions.name}-${randomUUID()}`);
      const reporter = new CallEventReporter({ apiUrl: app.url, secret, logger: createLogger('silent'), attempts: 2 });
      const calls = new LiveCalls();
      const dialer = new PhoneDialer({
        trunk: edgeOptions.trunk,
        openRtp: () => openRtpSession({ portRange: edgeOptions.rtpPorts, bindAddress: '127.0.0.1' }),
        publicAddress: '127.0.0.1',
        reporter,
        calls,
        taskQueue,
        logger: createLogger(process.env.TEST_EDGE_LOG === '1' ? 'debug' : 'silent'),
        screening: edgeOptions.screening,
        heartbeatMs: edgeOptions.heartbeatMs,
        // Calls are answered only once the edge below exists.
        onCall: (call) => edgeOptions.onCall(call, edge),
      });
      const edge: TrunkTestEdge = { taskQueue, reporter, calls, dialer };
      run(await Worker.create({ connection: env.nativeConnection, taskQueue: MEDIA_EDGE_DIAL_TASK_QUEUE, activities: dialer.activities() }));
      run(await Worker.create({ connection: env.nativeConnection, taskQueue, activities: edgeOptions.activities(edge) }));
      return edge;
    },
    async createPhoneCall(to, scriptId = team.scriptId) {
      const res = await app.request('POST', '/api/v1/create-phone-call', {
        key: team.apiKey,
        body: { from_number: team.fromNumber, script_id: scriptId, contact: { phone_number: to, first_name: 'Ada' } },
      });
      assert.equal(res.status, 201, res.text);
      return res.json.call_id as string;
    },
    async scheduledActivities(callId) {
      const history = await plain.workflow.getHandle(callWorkflowId(callId)).fetchHistory();
      return (history.events ?? []).flatMap((e) => {
        const a = e.activityTaskScheduledEventAttributes;
        if (!a || a.taskQueue?.name === CALLS_TASK_QUEUE) return [];
        return [`${a.activityType?.name}@${a.taskQueue?.name === MEDIA_EDGE_DIAL_TASK_QUEUE ? 'dial' : 'edge'}`];
      });
    },
    async stop() {
      for (const { worker } of workers) worker.shutdown();
      await Promise.all(workers.map((w) => w.running));
      await app.close();
      await env.teardown();
    },
  };
}
