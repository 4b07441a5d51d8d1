// test-runner: foreground (60 requests through two API instances must take under a second of wall time)
// The Redis store as a shared, failure-tolerant dependency: two API instances over one Redis,
// Redis killed and restarted under traffic, Redis hanging (slow), and health meanwhile.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import pino from 'pino';
import { healthRoutes } from '../../src/api/health/routes.js';
import type { RouteDefinition } from '../../src/api/route.js';
import { openRedis } from '../../src/infrastructure.js';
import { createLogger } from '../../src/logging/logger.js';
import { createTestTeam, testConfig, testPool } from '../support/app.js';
import { RedisServer } from '../support/redisServer.js';
import { freshIp, startLimitedApi, testRoute, TestClock } from './rateLimitHelpers.js';

const routes: RouteDefinition[] = [
  testRoute('get', '/api/v1/test-rl/public-a', 'public'),
  testRoute('post', '/api/v1/test-rl/public-write', 'public'),
  ...healthRoutes,
];

/** A logger whose lines the test can read. */
function capturingLogger(): { logger: pino.Logger; lines: () => { msg: string; level: number }[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines: () => lines.flatMap((l) => l.trim().split('\n')).map((l) => JSON.parse(l)) };
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  await testPool();
});

// The shared pool's idle connections would keep this process alive for 30 s.
after(async () => {
  await (await testPool()).end();
});

describe('two API instances over one Redis', () => {
  let redisA: Redis;
  let redisB: Redis;

  before(() => {
    redisA = openRedis(testConfig(), createLogger('silent'))!;
    redisB = openRedis(testConfig(), createLogger('silent'))!;
  });

  after(() => {
    redisA?.disconnect();
    redisB?.disconnect();
  });

  test('share every bucket: the 61st write from one IP is rejected whichever instance gets it (Redis server time)', async () => {
    const keyPrefix = `rl-test:${randomUUID()}:`;
    // No clock injected: the script takes Redis's own TIME, which both instances share.
    const one = await startLimitedApi({ routes, redis: redisA, keyPrefix });
    const two = await startLimitedApi({ routes, redis: redisB, keyPrefix });
    try {
      const ip = freshIp();
      for (let i = 0; i < 60; i++) {
        const res = await (i % 2 ? two : one).request('POST', '/api/v1/test-rl/public-write', { ip, body: {} });
        assert.equal(res.status, 200, `request ${i + 1}`);
        assert.equal(res.headers.get('x-ratelimit-remaining'), String(59 - i), 'each instance sees the other instance\'s requests');
      }
      for (const api of [one, two]) {
        const res = await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} });
        assert.equal(res.status, 429);
        assert.equal(res.headers.get('x-ratelimit-limit'), '60');
        assert.ok(Number(res.headers.get('retry-after')) >= 59, 'the oldest entry is less than a second old');
      }
      assert.equal(one.limiter.store, 'redis');
      assert.equal(two.limiter.store, 'redis');
    } finally {
      await one.close();
      await two.close();
    }
  });

  test('a key that authenticated before costs one Redis round trip per request; an unknown or invalid one two or one', async () => {
    const routesWithKey = [testRoute('get', '/api/v1/test-rl/items/{id}', 'apiKey')];
    const api = await startLimitedApi({ routes: routesWithKey, redis: redisA });
    const stats = new Redis(testConfig().REDIS_URL!);
    const calls = async () => {
      const line = (await stats.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_evalsha:'));
      return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
    };
    try {
      const team = await createTestTeam(await testPool());
      const send = (key: string) => api.request('GET', '/api/v1/test-rl/items/1', { ip: freshIp(), key });
      assert.equal((await send(team.apiKey)).status, 200); // loads the script, learns the key
      let before = await calls();
      assert.equal((await send(team.apiKey)).status, 200);
      assert.equal((await calls()) - before, 1, 'known key: one script call');
      const fresh = await createTestTeam(await testPool());
      before = await calls();
      assert.equal((await send(fresh.apiKey)).status, 200);
      assert.equal((await calls()) - before, 2, 'first request of a key: before and after authentication');
      before = await calls();
      assert.equal((await send('vk_nope_secret')).status, 401);
      assert.equal((await calls()) - before, 1, 'invalid key: the pre-authentication check only');
    } finally {
      stats.disconnect();
      await api.close();
    }
  });

  test('concurrent requests through both instances never admit more than the limit', async () => {
    const keyPrefix = `rl-test:${randomUUID()}:`;
    const clock = new TestClock();
    const one = await startLimitedApi({ routes, redis: redisA, keyPrefix, clock });
    const two = await startLimitedApi({ routes, redis: redisB, keyPrefix, clock });
    try {
      const ip = freshIp();
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 ? two : one).request('POST', '/api/v1/test-rl/public-write', { ip, body: {} })),
      );
      assert.equal(results.filter((r) => r.status === 200).length, 60);
      assert.equal(results.filter((r) => r.status === 429).length, 40);
    } finally {
      await one.close();
      await two.close();
    }
  });
});

describe('Redis failures', () => {
  // A redis-server of this test alone, so it can be killed, hung and restarted.
  let own: RedisServer;

  before(async () => {
    own = await RedisServer.start();
  });

  after(async () => {
    await own?.stop();
  });

  test('Redis killed mid-test: the API keeps answering and limiting in process, health says down, both recover when Redis returns', async () => {
    const config = testConfig({ REDIS_URL: own.url });
    const client = openRedis(config, createLogger('silent'))!;
    const { logger, lines } = capturingLogger();
    const keyPrefix = `rl-test:${randomUUID()}:`;
    const clock = new TestClock();
    const api = await startLimitedApi({
      routes,
      redis: client,
      clock,
      keyPrefix,
      logger,
      recoveryProbeMs: 100,
      config: { RATE_LIMIT_PER_IP_ENDPOINT: '5', RATE_LIMIT_PER_IP: '1000' },
    });
    const inspect = new Redis(own.url, { lazyConnect: true });
    try {
      const ip1 = freshIp();
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', { ip: ip1 })).status, 200);
      assert.equal(api.limiter.store, 'redis');
      assert.equal((await api.request('GET', '/api/v1/health', { ip: freshIp() })).json.checks.redis, 'ok');

      await own.kill();
      // Still answering, still limiting (in process now): 5 per IP and endpoint, then 429.
      const ip2 = freshIp();
      for (let i = 0; i < 5; i++) assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', { ip: ip2 })).status, 200, `request ${i + 1}`);
      const limited = await api.request('GET', '/api/v1/test-rl/public-a', { ip: ip2 });
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('x-ratelimit-limit'), '5');
      assert.equal(api.limiter.degraded, true);
      const health = await api.request('GET', '/api/v1/health', { ip: freshIp() });
      assert.equal(health.status, 503);
      assert.equal(health.json.checks.redis, 'down');
      for (let i = 0; i < 20; i++) await api.request('GET', '/api/v1/test-rl/public-a', { ip: freshIp() });

      await own.start();
      await waitFor('health to report redis ok', async () => (await api.request('GET', '/api/v1/health', { ip: freshIp() })).json.checks.redis === 'ok');
      assert.equal(api.limiter.store, 'redis');
      const ip3 = freshIp();
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', { ip: ip3 })).status, 200);
      await inspect.connect();
      assert.equal(await inspect.zcard(`${keyPrefix}ip:${ip3}`), 1, 'counted in the restarted Redis (script loaded again)');

      const messages = lines().map((l) => l.msg);
      assert.equal(messages.filter((m) => /falls back to the in-process store/.test(m)).length, 1, 'the outage is logged once');
      assert.equal(messages.filter((m) => /back on Redis/.test(m)).length, 1, 'and the recovery once');
    } finally {
      inspect.disconnect();
      await api.close();
      client.disconnect();
    }
  });

  test('Redis hanging: a check waits at most RATE_LIMIT_REDIS_TIMEOUT_MS, then the in-process store answers until Redis responds again', async () => {
    const config = testConfig({ REDIS_URL: own.url });
    const client = openRedis(config, createLogger('silent'))!;
    const api = await startLimitedApi({
      routes,
      redis: client,
      recoveryProbeMs: 100,
      config: { RATE_LIMIT_REDIS_TIMEOUT_MS: '200' },
    });
    try {
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', { ip: freshIp() })).status, 200);
      assert.equal(api.limiter.store, 'redis');
      own.signal('SIGSTOP');
      const started = performance.now();
      const res = await api.request('GET', '/api/v1/test-rl/public-a', { ip: freshIp() });
      const ms = performance.now() - started;
      assert.equal(res.status, 200);
      assert.ok(ms >= 190 && ms < 2000, `answered after ${Math.round(ms)} ms`);
      assert.equal(api.limiter.degraded, true);
      // While falling back, requests do not wait on Redis.
      const fastStart = performance.now();
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', { ip: freshIp() })).status, 200);
      assert.ok(performance.now() - fastStart < 150);
      assert.equal((await api.request('GET', '/api/v1/health', { ip: freshIp() })).json.checks.redis, 'down');
      own.signal('SIGCONT');
      await waitFor('the limiter to return to Redis', async () => {
        await api.request('GET', '/api/v1/test-rl/public-a', { ip: freshIp() });
        return !api.limiter.degraded;
      });
      assert.equal((await api.request('GET', '/api/v1/health', { ip: freshIp() })).json.checks.redis, 'ok');
    } finally {
      own.signal('SIGCONT');
      await api.close();
      client.disconnect();
    }
  });
});
