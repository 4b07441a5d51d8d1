import type { Config } from '../src/config/index.js';
import type { Pool } from '../src/db/pool.js';
import type { Logger } from '../src/logging/logger.js';
import type { Client } from '@temporalio/client';
import { createHookActivities } from './hooks.js';
import { createCallActivities } from './calls.js';
import { createWebSessionActivities } from './webSessions.js';
import { createScriptActivities } from './scripts.js';
import { createBatchActivities } from './batches.js';
import type { VoiceProvider } from '../src/telephony/index.js';
import type { CallAnalyser } from '../src/analysis/index.js';

/** What activities may touch; injected so tests can hand in their own. */
export interface ActivityDeps {
  config: Config;
  pool: Pool;
  logger: Logger;
  temporal: Client;
  /** Default: the provider named by VOICE_PROVIDER. */
  voiceProvider?: VoiceProvider;
  /** Default: the built-in deterministic analyser. */
  callAnalyser?: CallAnalyser;
}

/** Every activity of the service, built from injected dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createHookActivities(deps),
    ...createCallActivities(deps),
    ...createWebSessionActivities(deps),
    ...createScriptActivities(deps),
    ...createBatchActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
