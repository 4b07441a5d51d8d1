import type { Config } from '../src/config/index.js';
import type { Pool } from '../src/db/pool.js';
import type { Logger } from '../src/logging/logger.js';
import type { Client } from '@temporalio/client';

/** What activities may touch; injected so tests can hand in their own. */
export interface ActivityDeps {
  config: Config;
  pool: Pool;
  logger: Logger;
  temporal: Client;
}

/** Every activity of the service, built from injected dependencies. */
export function createActivities(_deps: ActivityDeps) {
  return {};
}

export type Activities = ReturnType<typeof createActivities>;
