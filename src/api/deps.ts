import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { Config } from '../config/index.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';
import type { RateLimiter } from '../rateLimit/limiter.js';
import type { RecordingStore, SpeechSynthesis } from '../recordings/index.js';
import type { SynthesisPool } from '../recordings/synthesisPool.js';
import type { ListContactsAddedListener } from '../services/lists.js';
import type { HostResolver } from '../webhooks/addresses.js';
import type { KeyUsageRecorder } from './middleware/keyUsage.js';

/** What the API needs from the outside world; built once per process and injected. */
export interface AppDeps {
  config: Config;
  pool: Pool;
  temporal: Client;
  logger: Logger;
  redis?: Redis;
  keyUsage: KeyUsageRecorder;
  /** One per app, shared by every route; createApp builds it from config when absent. */
  rateLimiter?: RateLimiter;
  /** Told after contacts join a list; createApp's default wakes the list's batches. */
  listContactsAdded?: ListContactsAddedListener;
  /** Where recordings are read; createApp builds the store RECORDINGS_STORE names when absent. */
  recordings?: RecordingStore;
  /** Speaks simulated calls' transcripts into their recordings; default text2wave. */
  speech?: SpeechSynthesis;
  /** Bounds those syntheses; createApp builds it from RECORDING_SYNTHESIS_* when absent. */
  synthesisPool?: SynthesisPool;
  /** Resolves event webhook hosts for the address check; default dns.lookup. */
  resolveHost?: HostResolver;
  /** The live-call task queue the service's workers poll: web and inbound calls start there (CallServiceDeps). */
  liveTaskQueue?: string;
}
