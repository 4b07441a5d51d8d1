import type { Config } from '../src/config/index.js';
import type { Pool } from '../src/db/pool.js';
import type { Logger } from '../src/logging/logger.js';
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import { ApplicationFailure } from '@temporalio/activity';
import { UseCaseError, type UseCaseErrorKind } from '../src/services/errors.js';
import {
  CONFLICT_FAILURE,
  GONE_FAILURE,
  INVALID_FAILURE,
  NOT_CONFIGURED_FAILURE,
  NOT_FOUND_FAILURE,
  TOO_MANY_FAILURE,
  UNAUTHENTICATED_FAILURE,
} from '../workflows/contracts.js';
import { createHookActivities } from './hooks.js';
import { createCallActivities } from './calls.js';
import { createWebSessionActivities } from './webSessions.js';
import { createScriptActivities } from './scripts.js';
import { createBatchActivities } from './batches.js';
import type { VoiceProvider } from '../src/telephony/index.js';
import type { CallAnalyser } from '../src/analysis/index.js';
import type { RecordingStore } from '../src/recordings/index.js';
import type { HostResolver } from '../src/webhooks/addresses.js';
import { createWebhookActivities } from './webhooks.js';
import { createDialingActivities, defaultDialPacer } from './dialing.js';
import type { DialPacer } from '../src/pacing/dialPacer.js';

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
  /** Where the media edge stores recordings; default the store RECORDINGS_STORE names. */
  recordings?: RecordingStore;
  /** How event webhook hosts are resolved before each attempt; default dns.lookup. */
  resolveHost?: HostResolver;
  /** The shared Redis (REDIS_URL): the dial pacer's store when given, else Postgres. */
  redis?: Redis;
  /** The dial pacer (carrier pacing); default one on `redis` or the pool, at DIAL_RATE_PER_NUMBER. */
  dialPacer?: DialPacer;
  /**
   * The live-call task queue this process's workers also poll (src/temporal/worker.ts): an
   * admitted phone call continues there. Unset (a worker of its queue alone): it stays.
   */
  liveTaskQueue?: string;
  /**
   * Whether a slot this worker's calls free stays free for the admission pacer (true while the
   * live calls run late; src/services/callSlots.ts). Unset: each is handed on at once.
   */
  holdFreedSlots?: () => boolean;
}

/** The ApplicationFailure type of each kind of use-case error. */
const FAILURE_TYPE_OF_KIND: Record<UseCaseErrorKind, string> = {
  invalid: INVALID_FAILURE,
  unauthenticated: UNAUTHENTICATED_FAILURE,
  not_found: NOT_FOUND_FAILURE,
  conflict: CONFLICT_FAILURE,
  gone: GONE_FAILURE,
  too_many: TOO_MANY_FAILURE,
  not_configured: NOT_CONFIGURED_FAILURE,
};

/** A use case's refusal is permanent: retrying cannot change the answer. Other errors stay retryable. */
function asActivityFailure(err: unknown): unknown {
  if (!(err instanceof UseCaseError)) return err;
  return ApplicationFailure.nonRetryable(err.message, err.code ?? FAILURE_TYPE_OF_KIND[err.kind]);
}

type Activity = (...args: never[]) => Promise<unknown>;

function withFailureTypes<T extends Record<string, Activity>>(activities: T): T {
  const wrapped: Record<string, Activity> = {};
  for (const [name, activity] of Object.entries(activities)) {
    wrapped[name] = async (...args) => {
      try {
        return await activity(...args);
      } catch (err) {
        throw asActivityFailure(err);
      }
    };
  }
  return wrapped as T;
}

/** Every activity of the service, built from injected dependencies; use-case errors leave them as typed failures. */
export function createActivities(given: ActivityDeps) {
  // One dial pacer for the dial token and the dial itself.
  const deps: ActivityDeps = { ...given, dialPacer: given.dialPacer ?? defaultDialPacer(given) };
  return withFailureTypes({
    ...createHookActivities(deps),
    ...createCallActivities(deps),
    ...createWebSessionActivities(deps),
    ...createScriptActivities(deps),
    ...createBatchActivities(deps),
    ...createWebhookActivities(deps),
    ...createDialingActivities(deps),
  });
}

export type Activities = ReturnType<typeof createActivities>;
