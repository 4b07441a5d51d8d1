// Pure parts of the rate limiter: which buckets a request meets, and the rolling-window
// semantics of the in-process store under a driven clock (table-driven and property tests).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { loadConfig } from '../../src/config/index.js';
import { bucketLimits, isWriteMethod, postAuthBuckets, preAuthBuckets, tokenHash, type BucketCheck } from '../../src/rateLimit/buckets.js';
import { MemoryRateLimitStore } from '../../src/rateLimit/memoryStore.js';
import { retryAfterSeconds } from '../../src/rateLimit/store.js';

const limits = bucketLimits(loadConfig({}));

describe('bucket definitions', () => {
  test('the defaults are the documented numbers', () => {
    assert.deepEqual(limits, {
      ip: 300,
      ipEndpoint: 120,
      ipEndpointWrite: 60,
      tokenEndpoint: 60,
      ipWebhook: 60,
      key: 120,
      keyWrite: 60,
      team: 300,
      teamWrite: 120,
    });
  });

  test('each limit is configurable and a bad value names the variable', () => {
    assert.equal(bucketLimits(loadConfig({ RATE_LIMIT_PER_TEAM_WRITES: '7' })).teamWrite, 7);
    assert.throws(() => loadConfig({ RATE_LIMIT_PER_IP: '0' }), /RATE_LIMIT_PER_IP must be positive/);
    assert.throws(() => loadConfig({ RATE_LIMITS_ENABLED: 'maybe' }), /RATE_LIMITS_ENABLED must be true or false/);
  });

  test('POST, PUT, PATCH and DELETE are writes; GET, HEAD and OPTIONS are not', () => {
    for (const m of ['POST', 'put', 'PATCH', 'delete']) assert.equal(isWriteMethod(m), true, m);
    for (const m of ['GET', 'head', 'OPTIONS']) assert.equal(isWriteMethod(m), false, m);
  });

  const names = (buckets: BucketCheck[]) => buckets.map((b) => b.name);
  const base = { ip: '198.51.100.1', token: 'vk_abc_secret' };
  const cases: { title: string; auth: 'apiKey' | 'public' | 'hookToken' | 'mediaEdge'; method: string; token?: string; expected: string[] }[] = [
    { title: 'an API-key read', auth: 'apiKey', method: 'get', token: base.token, expected: ['ip', 'ipEndpoint', 'tokenEndpoint'] },
    { title: 'an API-key write', auth: 'apiKey', method: 'post', token: base.token, expected: ['ip', 'ipEndpoint', 'ipEndpointWrite', 'tokenEndpoint'] },
    { title: 'an API-key request without a bearer token', auth: 'apiKey', method: 'delete', expected: ['ip', 'ipEndpoint', 'ipEndpointWrite'] },
    { title: 'a public read (health, OpenAPI), even with a token', auth: 'public', method: 'get', token: base.token, expected: ['ip', 'ipEndpoint'] },
    { title: 'a webhook trigger', auth: 'hookToken', method: 'post', token: base.token, expected: ['ip', 'ipWebhook'] },
    { title: 'the internal media-edge API', auth: 'mediaEdge', method: 'post', token: base.token, expected: [] },
  ];
  for (const c of cases) {
    test(`${c.title} meets ${c.expected.join(', ') || 'no'} pre-authentication buckets`, () => {
      const buckets = preAuthBuckets(limits, { auth: c.auth, method: c.method, endpoint: `${c.method.toUpperCase()} /api/v1/x/:id`, ip: base.ip, tokenHash: c.token && tokenHash(c.token) });
      assert.deepEqual(names(buckets), c.expected);
    });
  }

  test('after authentication a read meets key and team, a write also their write buckets', () => {
    assert.deepEqual(names(postAuthBuckets(limits, { method: 'get', keyId: 'k', teamId: 't' })), ['key', 'team']);
    assert.deepEqual(names(postAuthBuckets(limits, { method: 'patch', keyId: 'k', teamId: 't' })), ['key', 'keyWrite', 'team', 'teamWrite']);
  });

  test('the same endpoint shares a bucket across IPs only in the token bucket, which never holds the token itself', () => {
    const a = preAuthBuckets(limits, { auth: 'apiKey', method: 'get', endpoint: 'GET /a', ip: '192.0.2.1', tokenHash: tokenHash(base.token) });
    const b = preAuthBuckets(limits, { auth: 'apiKey', method: 'get', endpoint: 'GET /a', ip: '192.0.2.2', tokenHash: tokenHash(base.token) });
    assert.equal(a.find((x) => x.name === 'tokenEndpoint')!.key, b.find((x) => x.name === 'tokenEndpoint')!.key);
    assert.notEqual(a.find((x) => x.name === 'ipEndpoint')!.key, b.find((x) => x.name === 'ipEndpoint')!.key);
    assert.ok(!a.some((x) => x.key.includes(base.token)));
    assert.ok(a.find((x) => x.name === 'tokenEndpoint')!.key.includes(tokenHash(base.token)));
  });

  test('Retry-After rounds milliseconds up to whole seconds, at least 1', () => {
    for (const [ms, s] of [[1, 1], [999, 1], [1000, 1], [1001, 2], [34_700, 35], [60_000, 60]]) assert.equal(retryAfterSeconds(ms), s, String(ms));
  });
});

describe('in-process store: rolling window', () => {
  const bucket = (limit: number, key = 'b'): BucketCheck => ({ name: 'ip', key, limit });
  let seq = 0;
  const consume = (store: MemoryRateLimitStore, buckets: BucketCheck[]) => store.consumeNow({ buckets, member: `m${++seq}` });

  test('a request is admitted again exactly when the oldest counted one leaves, not at a minute boundary', () => {
    let now = Date.UTC(2026, 0, 1, 12, 0, 30, 500); // half a minute past a minute boundary
    const store = new MemoryRateLimitStore(() => now);
    const first = now;
    assert.equal(consume(store, [bucket(2)]).allowed, true);
    now += 20_000;
    assert.equal(consume(store, [bucket(2)]).allowed, true);
    now = Date.UTC(2026, 0, 1, 12, 1, 0, 0); // the minute boundary: nothing resets
    const atBoundary = consume(store, [bucket(2)]);
    assert.equal(atBoundary.allowed, false);
    assert.equal(!atBoundary.allowed && atBoundary.retryAfterMs, first + 60_000 - now);
    now = first + 59_999;
    assert.equal(consume(store, [bucket(2)]).allowed, false);
    now = first + 60_000;
    assert.equal(consume(store, [bucket(2)]).allowed, true);
    assert.equal(consume(store, [bucket(2)]).allowed, false, 'the second request still counts');
  });

  test('a request rejected by one bucket consumes from none, and the longest wait is reported', () => {
    let now = 1_000_000;
    const store = new MemoryRateLimitStore(() => now);
    const a = bucket(1, 'a');
    const b = bucket(3, 'b');
    const c = bucket(1, 'c');
    assert.equal(consume(store, [a]).allowed, true); // a full from t=0
    now += 10_000;
    assert.equal(consume(store, [c]).allowed, true); // c full from t=10 s
    now += 5_000;
    const rejected = consume(store, [b, a, c]);
    assert.equal(rejected.allowed, false);
    assert.equal(!rejected.allowed && rejected.bucket.key, 'c');
    assert.equal(!rejected.allowed && rejected.retryAfterMs, 55_000);
    const onlyB = consume(store, [b]);
    assert.equal(onlyB.allowed && onlyB.remaining[0], 2, 'the rejected request left nothing in b');
  });

  test('a rejection releases the reservation it is given', () => {
    const now = 5_000_000;
    const store = new MemoryRateLimitStore(() => now);
    const pre = store.consumeNow({ buckets: [bucket(5, 'pre')], member: 'r1' });
    assert.ok(pre.allowed);
    store.consumeNow({ buckets: [bucket(1, 'post')], member: 'other' });
    const post = store.consumeNow({ buckets: [bucket(1, 'post')], member: 'r1', release: pre.reservation });
    assert.equal(post.allowed, false);
    const check = store.consumeNow({ buckets: [bucket(5, 'pre')], member: 'r2' });
    assert.equal(check.allowed && check.remaining[0], 4, 'only r2 is counted in pre');
  });

  test('buckets that empty are dropped, so memory stays bounded', () => {
    let now = 0;
    const store = new MemoryRateLimitStore(() => now);
    for (let i = 0; i < 1000; i++) consume(store, [bucket(10, `k${i}`)]);
    assert.equal(store.size, 1000);
    now += 60_000;
    consume(store, [bucket(10, 'fresh')]);
    assert.equal(store.size, 1);
  });

  test('property: any 60 s window holds at most the limit, rejections happen only when full, and Retry-After is exact', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(fc.integer({ min: 0, max: 25_000 }), { minLength: 1, maxLength: 60 }), (limit, gaps) => {
        let now = 0;
        const store = new MemoryRateLimitStore(() => now);
        const admitted: number[] = [];
        for (const gap of gaps) {
          now += gap;
          const inWindow = admitted.filter((t) => t > now - 60_000);
          const result = consume(store, [bucket(limit)]);
          if (result.allowed) {
            assert.ok(inWindow.length < limit);
            assert.equal(result.remaining[0], limit - inWindow.length - 1);
            admitted.push(now);
          } else {
            assert.equal(inWindow.length, limit);
            // Admitted again exactly when the oldest counted request leaves.
            assert.equal(result.retryAfterMs, inWindow[0] + 60_000 - now);
            assert.ok(result.retryAfterMs > 0);
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
