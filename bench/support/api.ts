// The real API for the benchmarks that go through HTTP, and teams that can call it.
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { allRoutes } from '../../src/api/routes.js';
import type { Config } from '../../src/config/index.js';
import type { Pool } from '../../src/db/pool.js';
import { insertApiKey } from '../../src/db/repositories/apiKeys.js';
import { insertTeam } from '../../src/db/repositories/teams.js';
import { generateApiKey } from '../../src/domain/apiKeys.js';
import { createLogger } from '../../src/logging/logger.js';
import { startApi, type RunningApi } from '../../src/server.js';

export interface BenchApi {
  api: RunningApi;
  port: number;
  /** http://127.0.0.1:<port> */
  base: string;
}

/**
 * The API with every route, silent, on a free port; with `liveTaskQueue`, it starts browser
 * and inbound calls on that queue, as `npm start` does (docs/calls.md, "Task queues").
 */
export async function startBenchApi(config: Config, pool: Pool, temporal: Client, opts: { liveTaskQueue?: string } = {}): Promise<BenchApi> {
  const api = await startApi({ config, pool, temporal, logger: createLogger('silent'), port: 0, routes: allRoutes(), liveTaskQueue: opts.liveTaskQueue });
  const port = (api.server.address() as AddressInfo).port;
  return { api, port, base: `http://127.0.0.1:${port}` };
}

/** A team (ceiling 10) with an API key named `bench`. */
export async function insertTeamWithKey(pool: Pool, name: string): Promise<{ id: string; key: string }> {
  const team = await insertTeam(pool, { name, maxConcurrent: 10 });
  const key = generateApiKey();
  await insertApiKey(pool, { teamId: team.id, prefix: key.prefix, hash: key.hash, name: 'bench' });
  return { id: team.id, key: key.apiKey };
}

/** `request(key, method, path, body?)`: a JSON request with a bearer key; its JSON answer, or a throw when the status is 300 or more. */
export function jsonRequester(base: string) {
  return async (key: string, method: string, p: string, body?: unknown) => {
    const res = await fetch(base + p, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as Record<string, any>;
    if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${JSON.stringify(json)}`);
    return json;
  };
}
