// The whole stack of a call test through the media edge (test/e2e/phone*, inboundPhoneCall,
// webCallVoice, converseCall, test/tracing/*CallTrace): a Temporal dev server, the real API and
// call worker over the test database, and the real media edge (startVoiceEdge: SIP over
// WebSocket and WebRTC, the SIP trunk agent and RTP when the file gives a trunk, Festival, the
// offline recognisers) whose trunk the file points at its telephones (baresip, SIPp) on loopback.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { Config } from '../../src/config/index.js';
import { freePort } from '../../src/localPorts.js';
import { createLogger } from '../../src/logging/logger.js';
import { createEndpointing, type Endpointing } from '../../src/mediaEdge/audio/endpointingConfig.js';
import { loadMediaEdgeConfig } from '../../src/mediaEdge/server.js';
import { createSpeechEngines, type SpeechEngines } from '../../src/mediaEdge/speech/speechEngines.js';
import { startVoiceEdge, type VoiceEdge, type VoiceEdgeOptions } from '../../src/mediaEdge/voiceEdge.js';
import { createRecordingStore } from '../../src/recordings/index.js';
import { createWorker } from '../../src/temporal/worker.js';
import { temporalClientInterceptors } from '../../src/tracing/tracing.js';
import { startTestApi, type TestApi } from './app.js';
import { callTestConfig, createCallWorker } from './calls.js';
import { createLocalEnv } from './temporal.js';

export interface VoiceStackOptions {
  /** Browser calls: the API hands out a WebSocket URL of the edge's (a free port) and this SIP domain, which the edge serves. */
  webCallDomain?: string;
  /**
   * Traces: the API's and the worker's Temporal client carries the tracing interceptors, and the
   * worker is the production createWorker (its traced bundle). Install tracing before starting.
   */
  traced?: boolean;
}

export interface VoiceStackEdgeOptions {
  /** The edge's SIP trunk: the file's telephone on loopback (default: none). */
  trunk?: VoiceEdgeOptions['trunk'];
  /** Media edge settings besides its URL, secret, API and log level (RTP_INACTIVITY_SECONDS, ...). */
  settings?: Record<string, string>;
  transferRingTimeoutMs?: VoiceEdgeOptions['transferRingTimeoutMs'];
  trunkTimers?: VoiceEdgeOptions['trunkTimers'];
  llm?: VoiceEdgeOptions['llm'];
  /** The edge's speech engines and endpointing (default: the offline ones); stop() closes them. */
  speech?: SpeechEngines;
  endpointing?: Endpointing;
}

export interface VoiceStack {
  readonly env: TestWorkflowEnvironment;
  readonly app: TestApi;
  /** The client the API and the worker use (traced with `traced`). */
  readonly temporal: Client;
  /** The worker's settings (those of the API too). */
  readonly config: Config;
  /** A temp folder of the file's own (recordings in `recordings/`), removed by stop(). */
  readonly work: string;
  /** The edge, once startEdge() has run. */
  readonly edge: VoiceEdge;
  /** Starts the media edge (a phone test once its telephone is up: the trunk names its port). */
  startEdge(options?: VoiceStackEdgeOptions): Promise<VoiceEdge>;
  /** Stops the edge, the worker, the speech engines, the API and the dev server, then the file's telephones, and removes `work`. */
  stop(telephones?: ({ stop(): Promise<unknown> } | undefined)[]): Promise<void>;
}

/**
 * Starts the dev server, the API and a call worker on the task queue `<name>-<pid>`, with
 * `extraSettings` over the common ones (local recordings, no rate limits, the edge's secret);
 * the file then starts its telephones, if any, and calls startEdge().
 */
export async function startVoiceStack(name: string, extraSettings: Partial<Record<keyof Config, string>> = {}, options: VoiceStackOptions = {}): Promise<VoiceStack> {
  const work = mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const settings = {
    TEMPORAL_TASK_QUEUE: `${name}-${process.pid}`,
    MEDIA_EDGE_SECRET: `${name}-media-edge-secret-0123456789`,
    RECORDINGS_STORE: 'local',
    RECORDINGS_DIR: path.join(work, 'recordings'),
    RATE_LIMITS_ENABLED: 'false',
    ...(options.webCallDomain ? { MEDIA_EDGE_WS_URL: `ws://127.0.0.1:${await freePort()}/ws`, MEDIA_EDGE_SIP_DOMAIN: options.webCallDomain } : {}),
    ...extraSettings,
  };
  const env = await createLocalEnv();
  const temporal = options.traced ? new Client({ connection: env.connection, interceptors: temporalClientInterceptors() }) : env.client;
  const app = await startTestApi({ temporal, config: settings });
  const config = callTestConfig(settings);
  const worker: Worker = options.traced
    ? await createWorker({ connection: env.nativeConnection, namespace: 'default', taskQueue: config.TEMPORAL_TASK_QUEUE, deps: { config, pool: app.pool, logger: createLogger('silent'), temporal } })
    : await createCallWorker(env, app.pool, config);
  const running = worker.run();
  let speech: SpeechEngines | undefined;
  let endpointing: Endpointing | undefined;
  let edge: VoiceEdge | undefined;

  return {
    env,
    app,
    temporal,
    config,
    work,
    get edge(): VoiceEdge {
      if (!edge) throw new Error(`${name}: the media edge is not started (startEdge)`);
      return edge;
    },
    async startEdge(edgeOptions = {}) {
      speech = edgeOptions.speech ?? createSpeechEngines({});
      endpointing = edgeOptions.endpointing ?? createEndpointing({});
      edge = await startVoiceEdge({
        config: loadMediaEdgeConfig({
          MEDIA_EDGE_WS_URL: settings.MEDIA_EDGE_WS_URL ?? `ws://127.0.0.1:${await freePort()}/ws`,
          MEDIA_EDGE_SECRET: settings.MEDIA_EDGE_SECRET,
          API_URL: app.url,
          LOG_LEVEL: 'silent',
          ...(settings.MEDIA_EDGE_SIP_DOMAIN ? { MEDIA_EDGE_SIP_DOMAIN: settings.MEDIA_EDGE_SIP_DOMAIN } : {}),
          ...edgeOptions.settings,
        }),
        logger: createLogger(process.env.EDGE_LOG_LEVEL ?? 'silent'),
        speech,
        endpointing,
        recordings: createRecordingStore(config),
        temporalAddress: env.address,
        temporalNamespace: env.namespace ?? 'default',
        instanceId: `${name}-${process.pid}`,
        trunk: edgeOptions.trunk ?? null,
        transferRingTimeoutMs: edgeOptions.transferRingTimeoutMs,
        trunkTimers: edgeOptions.trunkTimers,
        llm: edgeOptions.llm,
      });
      return edge;
    },
    async stop(telephones = []) {
      await edge?.close();
      worker.shutdown();
      await running;
      await speech?.close();
      await endpointing?.close();
      await app.close();
      await env.teardown();
      for (const telephone of telephones) await telephone?.stop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
