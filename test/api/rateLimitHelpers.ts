// The real app (createApp, the real route chain) over the test database, with a rate limiter
// whose clock the test drives and a Redis key prefix of its own.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Redis } from 'ioredis';
import { createApp } from '../../src/api/app.js';
import { KeyUsageRecorder } from '../../src/api/middleware/keyUsage.js';
import { defineRoute, type HttpMethod, type RouteDefinition } from '../../src/api/route.js';
import type { Config } from '../../src/config/index.js';
import { generateApiKey } from '../../src/domain/apiKeys.js';
import { insertApiKey } from '../../src/db/repositories/apiKeys.js';
import type { Pool } from '../../src/db/pool.js';
import { createLogger, type Logger } from '../../src/logging/logger.js';
import { createRateLimiter, type RateLimiter } from '../../src/rateLimit/limiter.js';
import { testConfig, testPool } from '../support/app.js';

export function testRoute(method: HttpMethod, path: string, auth: RouteDefinition['auth']): RouteDefinition {
  return defineRoute({
    method,
    path,
    operationId: `test${method}${path.replace(/\W/g, '')}`,
    summary: 'rate-limit test route',
    tags: ['Test'],
    auth,
    responses: { 200: { description: 'ok' } },
    handler: async () => ({ body: { success: true } }),
  });
}

/** A virtual clock: starts at a fixed time half a minute past a minute boundary. */
export class TestClock {
  now = Date.UTC(2026, 0, 1, 12, 0, 30, 500);
  readonly read = () => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

export interface LimitedApi {
  url: string;
  limiter: RateLimiter;
  request(method: string, path: string, opts?: { ip?: string; key?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; headers: Headers; json: any }>;
  close(): Promise<void>;
}

export async function startLimitedApi(opts: {
  routes: RouteDefinition[];
  config?: Partial<Record<keyof Config, string>>;
  redis?: Redis;
  clock?: TestClock;
  keyPrefix?: string;
  recoveryProbeMs?: number;
  logger?: Logger;
}): Promise<LimitedApi> {
  const pool = await testPool();
  const config = testConfig({ TRUST_PROXY: 'true', ...opts.config });
  const logger = opts.logger ?? createLogger(config.LOG_LEVEL);
  // A lazy client of an address that refuses: these tests never reach Temporal (health then
  // reports it down, which no test asserts). No gRPC retry interceptor: a retry's backoff timer
  // firing after close() threw "Channel has been shut down" out of the finished test.
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', interceptors: [] }) });
  const limiter = createRateLimiter(
    { config, redis: opts.redis, logger },
    { clock: opts.clock?.read, keyPrefix: opts.keyPrefix ?? `rl-test:${randomUUID()}:`, recoveryProbeMs: opts.recoveryProbeMs },
  );
  const keyUsage = new KeyUsageRecorder(pool, logger, 60_000);
  const app = createApp({ config, pool, temporal, logger, redis: opts.redis, keyUsage, rateLimiter: limiter }, opts.routes);
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    limiter,
    async request(method, path, { ip, key, body, headers = {} } = {}) {
      const h: Record<string, string> = { ...headers };
      if (ip) h['X-Forwarded-For'] = ip;
      if (key) h.Authorization = `Bearer ${key}`;
      if (body !== undefined) h['Content-Type'] = 'application/json';
      const res = await fetch(url + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await temporal.connection.close();
    },
  };
}

/** Another key of the team (the team buckets span all of a team's keys). */
export async function addKey(pool: Pool, teamId: string): Promise<{ apiKey: string; keyId: string }> {
  const key = generateApiKey();
  const record = await insertApiKey(pool, { teamId, prefix: key.prefix, hash: key.hash, name: 'extra' });
  return { apiKey: key.apiKey, keyId: record.id };
}

let ipSeq = 0;
/** A fresh client address per call, so tests never share IP buckets. */
export function freshIp(): string {
  ipSeq += 1;
  return `10.${(process.pid >> 8) & 255}.${(ipSeq >> 8) & 255}.${ipSeq & 255}`;
}
