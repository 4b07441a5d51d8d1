// The rate limits of docs/rate-limits.md through the real route chain, against both stores (real Redis from
// scripts/run-tests.mjs, and in process), with a driven clock: nothing here sleeps a minute.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { healthRoutes } from '../../src/api/health/routes.js';
import { openApiPath, type RouteDefinition } from '../../src/api/route.js';
import { revokeApiKey } from '../../src/db/repositories/apiKeys.js';
import { openRedis } from '../../src/infrastructure.js';
import { createLogger } from '../../src/logging/logger.js';
import { createTestTeam, testConfig, testPool, type TestTeam } from '../support/app.js';
import { addKey, freshIp, startLimitedApi, testRoute, TestClock, type LimitedApi } from './rateLimitHelpers.js';

const routes: RouteDefinition[] = [
  testRoute('get', '/api/v1/test-rl/public-a', 'public'),
  testRoute('get', '/api/v1/test-rl/public-b', 'public'),
  testRoute('get', '/api/v1/test-rl/public-c', 'public'),
  testRoute('post', '/api/v1/test-rl/public-write', 'public'),
  testRoute('get', '/api/v1/test-rl/items-1/{id}', 'apiKey'),
  testRoute('get', '/api/v1/test-rl/items-2/{id}', 'apiKey'),
  testRoute('get', '/api/v1/test-rl/items-3/{id}', 'apiKey'),
  testRoute('post', '/api/v1/test-rl/items-1', 'apiKey'),
  testRoute('post', '/api/v1/test-rl/items-2', 'apiKey'),
  testRoute('post', '/api/v1/test-rl/items-3', 'apiKey'),
  testRoute('post', '/api/v1/test-rl/hooks/{token}', 'hookToken'),
  testRoute('post', '/internal/v1/test-rl/events', 'mediaEdge'),
  ...healthRoutes,
];

const TOO_MANY = { success: false, message: 'Rate limit exceeded' };

type Res = Awaited<ReturnType<LimitedApi['request']>>;

function assertRejected(res: Res, limit: number, retryAfter = 60): void {
  assert.equal(res.status, 429, `expected 429, got ${res.status} ${JSON.stringify(res.json)}`);
  assert.deepEqual(res.json, TOO_MANY);
  assert.equal(res.headers.get('retry-after'), String(retryAfter));
  assert.equal(res.headers.get('x-ratelimit-limit'), String(limit));
  assert.equal(res.headers.get('x-ratelimit-remaining'), '0');
}

/** Sends `count` requests made by `make(i)` one after another; all must answer `status`. */
async function expectAll(count: number, status: number, make: (i: number) => Promise<Res>): Promise<void> {
  for (let i = 0; i < count; i++) {
    const res = await make(i);
    assert.equal(res.status, status, `request ${i + 1} of ${count}: ${res.status} ${JSON.stringify(res.json)}`);
  }
}

let redis: Redis;

before(async () => {
  await testPool();
  redis = openRedis(testConfig(), createLogger('silent'))!;
});

after(async () => {
  redis?.disconnect();
  // The shared pool's idle connections would keep this process alive for 30 s.
  await (await testPool()).end();
});

for (const store of ['redis', 'memory'] as const) {
  describe(`${store} store: the nine buckets`, () => {
    let api: LimitedApi;
    let clock: TestClock;
    let pool: Awaited<ReturnType<typeof testPool>>;

    before(async () => {
      pool = await testPool();
      clock = new TestClock();
      api = await startLimitedApi({ routes, redis: store === 'redis' ? redis : undefined, clock, config: { MEDIA_EDGE_SECRET: 'media-edge-secret-for-tests' } });
      // The first request waits for the connection; from then on every check goes to this store.
      await api.request('GET', '/api/v1/test-rl/public-a', { ip: freshIp() });
      assert.equal(api.limiter.store, store);
    });

    after(async () => {
      assert.equal(api.limiter.store, store, 'no test fell back to another store');
      await api?.close();
    });

    test('per IP: 300 requests across endpoints, then 429 with limit 300', async () => {
      const ip = freshIp();
      const paths = ['/api/v1/test-rl/public-a', '/api/v1/test-rl/public-b', '/api/v1/test-rl/public-c'];
      await expectAll(300, 200, (i) => api.request('GET', paths[i % 3], { ip }));
      assertRejected(await api.request('GET', paths[0], { ip }), 300);
      assert.equal((await api.request('GET', paths[0], { ip: freshIp() })).status, 200, 'another IP is unaffected');
    });

    test('per IP and endpoint: 120, then 429 with limit 120; other endpoints and concrete paths of one template', async () => {
      const ip = freshIp();
      const team = await createTestTeam(pool);
      const other = await createTestTeam(pool);
      // Public reads: one endpoint.
      await expectAll(120, 200, () => api.request('GET', '/api/v1/test-rl/public-a', { ip }));
      assertRejected(await api.request('GET', '/api/v1/test-rl/public-a', { ip }), 120);
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-b', { ip })).status, 200);
      // An endpoint is the route template: different ids, two teams (below their key and token limits).
      const ip2 = freshIp();
      await expectAll(120, 200, (i) => api.request('GET', `/api/v1/test-rl/items-1/id-${i}`, { ip: ip2, key: i % 2 ? team.apiKey : other.apiKey }));
      assertRejected(await api.request('GET', '/api/v1/test-rl/items-1/another-id', { ip: ip2, key: team.apiKey }), 120);
    });

    test('per IP and endpoint, writes: 60, then 429 with limit 60', async () => {
      const ip = freshIp();
      await expectAll(60, 200, () => api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} }));
      assertRejected(await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} }), 60);
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', { ip })).status, 200, 'reads of the same IP still pass');
    });

    test('per bearer token and endpoint, before authentication: an invalid key gets 60 answers of 401, then 429', async () => {
      const token = `vk_nope_${freshIp()}`;
      await expectAll(60, 401, () => api.request('GET', '/api/v1/test-rl/items-1/x', { ip: freshIp(), key: token }));
      assertRejected(await api.request('GET', '/api/v1/test-rl/items-1/x', { ip: freshIp(), key: token }), 60);
      assert.equal((await api.request('GET', '/api/v1/test-rl/items-2/x', { ip: freshIp(), key: token })).status, 401, 'another endpoint has its own bucket');
    });

    test('per bearer token and endpoint: a valid key from many IPs is stopped at 60 on one endpoint', async () => {
      const team = await createTestTeam(pool);
      await expectAll(60, 200, () => api.request('GET', '/api/v1/test-rl/items-1/x', { ip: freshIp(), key: team.apiKey }));
      assertRejected(await api.request('GET', '/api/v1/test-rl/items-1/x', { ip: freshIp(), key: team.apiKey }), 60);
    });

    test('per IP on the webhook trigger: 60, then 429; triggers meet only the IP buckets', async () => {
      const ip = freshIp();
      await expectAll(60, 200, (i) => api.request('POST', `/api/v1/test-rl/hooks/token-${i}`, { ip, body: {} }));
      assertRejected(await api.request('POST', '/api/v1/test-rl/hooks/token-x', { ip, body: {} }), 60);
      // The 60 triggers count in the per-IP bucket (300): 240 more requests fill it.
      await expectAll(120, 200, () => api.request('GET', '/api/v1/test-rl/public-a', { ip }));
      await expectAll(120, 200, () => api.request('GET', '/api/v1/test-rl/public-b', { ip }));
      assertRejected(await api.request('GET', '/api/v1/test-rl/public-c', { ip }), 300);
      // A token in the Authorization header of a trigger does not meet the token bucket.
      const ip2 = freshIp();
      const token = `vk_hook_${ip2}`;
      await expectAll(60, 200, () => api.request('POST', '/api/v1/test-rl/hooks/t', { ip: ip2, key: token, body: {} }));
    });

    test('per API key: 120 across endpoints, then 429 with limit 120', async () => {
      const team = await createTestTeam(pool);
      const paths = ['/api/v1/test-rl/items-1/x', '/api/v1/test-rl/items-2/x', '/api/v1/test-rl/items-3/x'];
      await expectAll(120, 200, (i) => api.request('GET', paths[Math.floor(i / 60)], { ip: freshIp(), key: team.apiKey }));
      assertRejected(await api.request('GET', paths[2], { ip: freshIp(), key: team.apiKey }), 120);
      const second = await addKey(pool, team.teamId);
      assert.equal((await api.request('GET', paths[2], { ip: freshIp(), key: second.apiKey })).status, 200, 'another key of the team passes');
    });

    test('per API key, writes: 60 across endpoints, then 429 with limit 60', async () => {
      const team = await createTestTeam(pool);
      const paths = ['/api/v1/test-rl/items-1', '/api/v1/test-rl/items-2', '/api/v1/test-rl/items-3'];
      await expectAll(60, 200, (i) => api.request('POST', paths[Math.floor(i / 30)], { ip: freshIp(), key: team.apiKey, body: {} }));
      assertRejected(await api.request('POST', paths[2], { ip: freshIp(), key: team.apiKey, body: {} }), 60);
      assert.equal((await api.request('GET', '/api/v1/test-rl/items-3/x', { ip: freshIp(), key: team.apiKey })).status, 200, 'reads of the key still pass');
    });

    test('per team: 300 from all its keys, then 429 with limit 300', async () => {
      const team = await createTestTeam(pool);
      const keys = [team.apiKey, (await addKey(pool, team.teamId)).apiKey, (await addKey(pool, team.teamId)).apiKey];
      const paths = ['/api/v1/test-rl/items-1/x', '/api/v1/test-rl/items-2/x'];
      // 100 per key, 50 per key and endpoint: under every other bucket.
      await expectAll(300, 200, (i) => api.request('GET', paths[Math.floor(i / 50) % 2], { ip: freshIp(), key: keys[Math.floor(i / 100)] }));
      const fourth = await addKey(pool, team.teamId);
      assertRejected(await api.request('GET', paths[0], { ip: freshIp(), key: fourth.apiKey }), 300);
    });

    test('per team, writes: 120 from all its keys, then 429 with limit 120', async () => {
      const team = await createTestTeam(pool);
      const keys = [team.apiKey, (await addKey(pool, team.teamId)).apiKey, (await addKey(pool, team.teamId)).apiKey];
      const paths = ['/api/v1/test-rl/items-1', '/api/v1/test-rl/items-2'];
      await expectAll(120, 200, (i) => api.request('POST', paths[Math.floor(i / 20) % 2], { ip: freshIp(), key: keys[Math.floor(i / 40)], body: {} }));
      const fourth = await addKey(pool, team.teamId);
      assertRejected(await api.request('POST', paths[0], { ip: freshIp(), key: fourth.apiKey, body: {} }), 120);
      assert.equal((await api.request('GET', '/api/v1/test-rl/items-1/x', { ip: freshIp(), key: fourth.apiKey })).status, 200, 'reads still pass');
    });

    test('the internal media-edge API meets no bucket', async () => {
      const ip = freshIp();
      await expectAll(130, 200, () =>
        api.request('POST', '/internal/v1/test-rl/events', { ip, key: 'media-edge-secret-for-tests', body: {} }),
      );
    });

    test('successful answers carry limit and remaining of the tightest bucket met', async () => {
      const team = await createTestTeam(pool);
      const ip = freshIp();
      const read = await api.request('GET', '/api/v1/test-rl/items-3/x', { ip, key: team.apiKey });
      assert.equal(read.status, 200);
      assert.equal(read.headers.get('x-ratelimit-limit'), '60', 'token and endpoint: 60');
      assert.equal(read.headers.get('x-ratelimit-remaining'), '59');
      assert.equal(read.headers.get('retry-after'), null);
      const health = await api.request('GET', '/api/v1/health', { ip });
      assert.equal(health.headers.get('x-ratelimit-limit'), '120', 'a public read: IP and endpoint');
      assert.equal(health.headers.get('x-ratelimit-remaining'), '119');
    });

    test('Retry-After counts whole seconds until the oldest counted request leaves; admitted again exactly then, not at the minute', async () => {
      const ip = freshIp();
      const first = clock.now; // 12:00:30.500
      assert.equal((await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} })).status, 200);
      clock.advance(10_000);
      await expectAll(59, 200, () => api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} }));
      clock.advance(15_300); // 25.3 s after the first: it leaves in 34.7 s
      assertRejected(await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} }), 60, 35);
      clock.now = Date.UTC(2026, 0, 1, 12, 1, 0, 0); // a minute boundary resets nothing
      assertRejected(await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} }), 60, 31);
      clock.now = first + 59_999;
      assertRejected(await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} }), 60, 1);
      clock.now = first + 60_000;
      const again = await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} });
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('x-ratelimit-remaining'), '0');
      assertRejected(await api.request('POST', '/api/v1/test-rl/public-write', { ip, body: {} }), 60, 10);
    });

    test('rejected requests count in no bucket, including the pre-authentication ones of a post-authentication rejection', async () => {
      const local = await startLimitedApi({
        routes,
        redis: store === 'redis' ? redis : undefined,
        clock,
        config: { RATE_LIMIT_PER_KEY: '2', RATE_LIMIT_PER_IP_ENDPOINT: '5' },
      });
      try {
        const ip = freshIp();
        const teams: TestTeam[] = [await createTestTeam(pool), await createTestTeam(pool), await createTestTeam(pool)];
        const get = (t: TestTeam) => local.request('GET', '/api/v1/test-rl/items-1/x', { ip, key: t.apiKey });
        await expectAll(2, 200, () => get(teams[0]));
        for (let i = 0; i < 10; i++) assertRejected(await get(teams[0]), 2);
        // Had the ten rejections counted in IP and endpoint (5), these would fail.
        await expectAll(2, 200, () => get(teams[1]));
        assert.equal((await get(teams[2])).status, 200);
        assertRejected(await get(teams[2]), 5);
        // ...and the rejections by IP and endpoint counted in no other bucket either: the key bucket of teams[2] holds one.
        const ok = await local.request('GET', '/api/v1/test-rl/items-2/x', { ip: freshIp(), key: teams[2].apiKey });
        assert.equal(ok.status, 200);
        assert.equal(ok.headers.get('x-ratelimit-remaining'), '0', 'key bucket: 2 - 2');
        assertRejected(await local.request('GET', '/api/v1/test-rl/items-2/x', { ip: freshIp(), key: teams[2].apiKey }), 2);
      } finally {
        await local.close();
      }
    });

    test('a key that authenticated before: each request counts in every bucket; if authentication then fails, only in the pre-authentication ones', async () => {
      const local = await startLimitedApi({
        routes,
        redis: store === 'redis' ? redis : undefined,
        clock,
        config: { RATE_LIMIT_PER_TEAM: '4', RATE_LIMIT_PER_TOKEN_ENDPOINT: '7', RATE_LIMIT_PER_KEY: '3' },
      });
      try {
        const team = await createTestTeam(pool);
        const second = await addKey(pool, team.teamId);
        const get = (key: string) => local.request('GET', '/api/v1/test-rl/items-1/x', { ip: freshIp(), key });
        await expectAll(2, 200, () => get(team.apiKey)); // known from the first on
        await revokeApiKey(pool, team.keyId);
        await expectAll(3, 403, () => get(team.apiKey));
        // The 403s counted in the token bucket (2 + 3 + 2 = 7)...
        await expectAll(2, 403, () => get(team.apiKey));
        assertRejected(await get(team.apiKey), 7);
        // ...but not in the team bucket: 2 of 4 used, 2 left for the other key.
        await expectAll(2, 200, () => get(second.apiKey));
        assertRejected(await get(second.apiKey), 4);

        // A revoked key whose key bucket is full answers 403: authentication decides, not the stale bucket.
        const other = await createTestTeam(pool);
        await expectAll(3, 200, () => get(other.apiKey));
        assertRejected(await get(other.apiKey), 3);
        await revokeApiKey(pool, other.keyId);
        assert.equal((await get(other.apiKey)).status, 403);
      } finally {
        await local.close();
      }
    });

    test('a known key over a pre-authentication limit answers 429 even once revoked, as the sequential order would', async () => {
      const local = await startLimitedApi({ routes, redis: store === 'redis' ? redis : undefined, clock, config: { RATE_LIMIT_PER_TOKEN_ENDPOINT: '2' } });
      try {
        const team = await createTestTeam(pool);
        const get = () => local.request('GET', '/api/v1/test-rl/items-1/x', { ip: freshIp(), key: team.apiKey });
        await expectAll(2, 200, get);
        await revokeApiKey(pool, team.keyId);
        assertRejected(await get(), 2);
        assertRejected(await get(), 2);
        assert.equal((await local.request('GET', '/api/v1/test-rl/items-2/x', { ip: freshIp(), key: team.apiKey })).status, 403);
      } finally {
        await local.close();
      }
    });

    test('when several buckets are full, the one with the longest wait answers (the earliest a retry can pass)', async () => {
      const local = await startLimitedApi({
        routes,
        redis: store === 'redis' ? redis : undefined,
        clock,
        config: { RATE_LIMIT_PER_IP: '4', RATE_LIMIT_PER_IP_ENDPOINT: '2' },
      });
      try {
        const ip = freshIp();
        await expectAll(2, 200, () => local.request('GET', '/api/v1/test-rl/public-b', { ip }));
        clock.advance(20_000);
        await expectAll(2, 200, () => local.request('GET', '/api/v1/test-rl/public-a', { ip }));
        clock.advance(5_000);
        // Per IP (checked first) is full until 35 s from now; IP and endpoint a until 55 s from now.
        assertRejected(await local.request('GET', '/api/v1/test-rl/public-a', { ip }), 2, 55);
        assertRejected(await local.request('GET', '/api/v1/test-rl/public-c', { ip }), 4, 35);
      } finally {
        await local.close();
      }
    });
  });
}

describe('client IP and TRUST_PROXY', () => {
  test('with TRUST_PROXY=true the first X-Forwarded-For address is the client', async () => {
    const api = await startLimitedApi({ routes, config: { TRUST_PROXY: 'true', RATE_LIMIT_PER_IP_ENDPOINT: '3' } });
    try {
      const xff = (first: string) => ({ headers: { 'X-Forwarded-For': `${first}, 10.9.9.9` } });
      await expectAll(3, 200, () => api.request('GET', '/api/v1/test-rl/public-a', xff('203.0.113.7')));
      assertRejected(await api.request('GET', '/api/v1/test-rl/public-a', xff('203.0.113.7')), 3);
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', xff('203.0.113.8'))).status, 200);
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', xff('::ffff:203.0.113.8'))).status, 200, 'IPv4-mapped is the same client');
      await expectAll(3, 200, () => api.request('GET', '/api/v1/test-rl/public-b', { headers: { 'X-Forwarded-For': 'not-an-ip' } }));
      assertRejected(await api.request('GET', '/api/v1/test-rl/public-b', { headers: { 'X-Forwarded-For': 'garbage-2' } }), 3);
    } finally {
      await api.close();
    }
  });

  test('with TRUST_PROXY=false X-Forwarded-For is ignored and the peer address counts', async () => {
    const api = await startLimitedApi({ routes, config: { TRUST_PROXY: 'false', RATE_LIMIT_PER_IP_ENDPOINT: '3' } });
    try {
      await expectAll(3, 200, (i) => api.request('GET', '/api/v1/test-rl/public-a', { ip: `198.51.100.${i + 1}` }));
      assertRejected(await api.request('GET', '/api/v1/test-rl/public-a', { ip: '198.51.100.99' }), 3);
    } finally {
      await api.close();
    }
  });
});

describe('configuration and description', () => {
  test('RATE_LIMITS_ENABLED=false builds no limiter into the chain', async () => {
    const api = await startLimitedApi({ routes, config: { RATE_LIMITS_ENABLED: 'false', RATE_LIMIT_PER_IP_ENDPOINT: '1' } });
    try {
      const ip = freshIp();
      await expectAll(5, 200, () => api.request('GET', '/api/v1/test-rl/public-a', { ip }));
      assert.equal((await api.request('GET', '/api/v1/test-rl/public-a', { ip })).headers.get('x-ratelimit-limit'), null);
    } finally {
      await api.close();
    }
  });

  test('the OpenAPI operation of a limited route documents 429 and the headers; the media-edge API does not', () => {
    const health = openApiPath(healthRoutes[0]) as any;
    assert.equal(health.responses[429].description, 'Rate limit exceeded');
    assert.ok(health.responses[429].headers['Retry-After']);
    assert.ok(health.responses[200].headers['X-RateLimit-Remaining']);
    const internal = openApiPath(routes.find((r) => r.auth === 'mediaEdge')!) as any;
    assert.equal(internal.responses[429], undefined);
  });
});
