// The real Koa app over the real Postgres (DATABASE_URL from scripts/run-tests.mjs) with a
// Temporal client from the caller's test environment.
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import { loadConfig, type Config } from '../../src/config/index.js';
import { generateApiKey } from '../../src/domain/apiKeys.js';
import { DEMO_SCRIPT } from '../../src/domain/scripts/demoScript.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { insertApiKey } from '../../src/db/repositories/apiKeys.js';
import { addPhoneNumber } from '../../src/db/repositories/phoneNumbers.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { insertTeam } from '../../src/db/repositories/teams.js';
import { createLogger, type Logger } from '../../src/logging/logger.js';
import { startApi, type RunningApi } from '../../src/server.js';
import type { ListContactsAddedListener } from '../../src/services/lists.js';
import type { HostResolver } from '../../src/webhooks/addresses.js';
import type { RouteDefinition } from '../../src/api/route.js';
import { toApiError } from '../../src/api/middleware/errorHandler.js';

let sharedPool: Pool | undefined;

/** The HTTP status the API answers for an error a service threw (through the API's one mapping). */
export const httpStatus = (err: unknown): number => toApiError(err).status;

/** One migrated pool per test process. */
export async function testPool(): Promise<Pool> {
  if (!sharedPool) {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('DATABASE_URL is not set: run the tests with `npm test`');
    sharedPool = createPool(url, 10);
    await migrate(sharedPool);
  }
  return sharedPool;
}

export function testConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  // Calls wake themselves when due (no admission line): the tests' workers run no admission
  // pacer; the tests of the line turn it on (test/workflows/admissionLine.test.ts).
  return loadConfig({ ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent', NODE_ENV: 'test' }, { PORT: '0', HOST: '127.0.0.1', ADMISSION_SAFETY_NET_SECONDS: '0', ...overrides });
}

export interface TestResponse {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

export interface TestApi {
  url: string;
  pool: Pool;
  config: Config;
  api: RunningApi;
  request(method: string, path: string, opts?: { key?: string; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> }): Promise<TestResponse>;
  close(): Promise<void>;
}

/** Starts the API on a free port over the test database and the given Temporal client. */
export async function startTestApi(opts: {
  temporal: Client;
  redis?: Redis;
  config?: Partial<Record<keyof Config, string>>;
  routes?: RouteDefinition[];
  listContactsAdded?: ListContactsAddedListener;
  resolveHost?: HostResolver;
  /** The app's logger (default: LOG_LEVEL to stdout); a test reading the logs passes one writing to a stream. */
  logger?: Logger;
}): Promise<TestApi> {
  const pool = await testPool();
  const config = testConfig(opts.config);
  const logger = opts.logger ?? createLogger(config.LOG_LEVEL);
  const api = await startApi({ config, pool, temporal: opts.temporal, logger, redis: opts.redis, port: 0, routes: opts.routes, listContactsAdded: opts.listContactsAdded, resolveHost: opts.resolveHost });
  const url = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  return {
    url,
    pool,
    config,
    api,
    async request(method, path, { key, body, rawBody, headers = {} } = {}) {
      const h: Record<string, string> = { ...headers };
      if (key !== undefined) h.Authorization = `Bearer ${key}`;
      let payload: string | Buffer | undefined = rawBody;
      if (payload === undefined && body !== undefined) payload = JSON.stringify(body);
      if (payload !== undefined) h['Content-Type'] ??= 'application/json';
      const res = await fetch(url + path, { method, headers: h, body: payload as BodyInit | undefined });
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, json, text };
    },
    close: () => api.close(),
  };
}

export interface TestTeam {
  teamId: string;
  apiKey: string;
  keyId: string;
  scriptId: string;
  fromNumber: string;
}

let numberSeq = 0;

/** A fresh team with one key, the demo script and one owned number. */
export async function createTestTeam(pool: Pool, opts: { maxConcurrent?: number; name?: string } = {}): Promise<TestTeam> {
  const team = await insertTeam(pool, { name: opts.name ?? 'test team', maxConcurrent: opts.maxConcurrent ?? 10 });
  const key = generateApiKey();
  const keyRecord = await insertApiKey(pool, { teamId: team.id, prefix: key.prefix, hash: key.hash, name: 'Default' });
  const script = await insertScript(pool, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  numberSeq += 1;
  const fromNumber = `+1212${String(200 + (process.pid % 800)).padStart(3, '0')}${String(1000 + ((Date.now() + numberSeq) % 9000)).padStart(4, '0')}`;
  await addPhoneNumber(pool, team.id, fromNumber);
  return { teamId: team.id, apiKey: key.apiKey, keyId: keyRecord.id, scriptId: script.id, fromNumber };
}
