// The whole stack of a phone-call e2e test (test/e2e/phone*.test.ts, inboundPhoneCall): a
// Temporal dev server, the real API and call worker over the test database, and the real
// media edge (startVoiceEdge with its SIP trunk agent, RTP, Festival, the offline
// recognisers) whose trunk the file points at its telephones (baresip, SIPp) on loopback.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
import { startTestApi, type TestApi } from './app.js';
import { callTestConfig, createCallWorker } from './calls.js';
import { createLocalEnv } from './temporal.js';

export interface PhoneStackEdgeOptions {
  /** The edge's SIP trunk: the file's telephone on loopback. */
  trunk: VoiceEdgeOptions['trunk'];
  /** Media edge settings besides its URL, secret, API and log level (RTP_INACTIVITY_SECONDS, ...). */
  settings?: Record<string, string>;
  transferRingTimeoutMs?: VoiceEdgeOptions['transferRingTimeoutMs'];
  trunkTimers?: VoiceEdgeOptions['trunkTimers'];
}

export interface PhoneStack {
  readonly env: TestWorkflowEnvironment;
  readonly app: TestApi;
  /** The worker's settings (those of the API too). */
  readonly config: Config;
  /** A temp folder of the file's own (recordings in `recordings/`), removed by stop(). */
  readonly work: string;
  /** The edge, once startEdge() has run. */
  readonly edge: VoiceEdge;
  /** Starts the media edge (once the file's telephone is up: the trunk names its port). */
  startEdge(options: PhoneStackEdgeOptions): Promise<VoiceEdge>;
  /** Stops the edge, the worker, the speech engines, the API and the dev server, then the file's telephones, and removes `work`. */
  stop(telephones?: ({ stop(): Promise<unknown> } | undefined)[]): Promise<void>;
}

/**
 * Starts the dev server, the API and a call worker on the task queue `<name>-<pid>`, with
 * `extraSettings` over the phone tests' common ones (local recordings, no rate limits, the
 * edge's secret); the file then starts its telephones and calls startEdge().
 */
export async function startPhoneStack(name: string, extraSettings: Partial<Record<keyof Config, string>> = {}): Promise<PhoneStack> {
  const work = mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const settings = {
    TEMPORAL_TASK_QUEUE: `${name}-${process.pid}`,
    MEDIA_EDGE_SECRET: `${name}-media-edge-secret-0123456789`,
    RECORDINGS_STORE: 'local',
    RECORDINGS_DIR: path.join(work, 'recordings'),
    RATE_LIMITS_ENABLED: 'false',
    ...extraSettings,
  };
  const env = await createLocalEnv();
  const app = await startTestApi({ temporal: env.client, config: settings });
  const config = callTestConfig(settings);
  const worker: Worker = await createCallWorker(env, app.pool, config);
  const running = worker.run();
  let speech: SpeechEngines | undefined;
  let endpointing: Endpointing | undefined;
  let edge: VoiceEdge | undefined;

  return {
    env,
    app,
    config,
    work,
    get edge(): VoiceEdge {
      if (!edge) throw new Error(`${name}: the media edge is not started (startEdge)`);
      return edge;
    },
    async startEdge(options) {
      speech = createSpeechEngines({});
      endpointing = createEndpointing({});
      edge = await startVoiceEdge({
        config: loadMediaEdgeConfig({
          MEDIA_EDGE_WS_URL: settings.MEDIA_EDGE_WS_URL ?? `ws://127.0.0.1:${await freePort()}/ws`,
          MEDIA_EDGE_SECRET: settings.MEDIA_EDGE_SECRET,
          API_URL: app.url,
          LOG_LEVEL: 'silent',
          ...options.settings,
        }),
        logger: createLogger(process.env.EDGE_LOG_LEVEL ?? 'silent'),
        speech,
        endpointing,
        recordings: createRecordingStore(config),
        temporalAddress: env.address,
        temporalNamespace: env.namespace ?? 'default',
        instanceId: `${name}-${process.pid}`,
        trunk: options.trunk,
        transferRingTimeoutMs: options.transferRingTimeoutMs,
        trunkTimers: options.trunkTimers,
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
