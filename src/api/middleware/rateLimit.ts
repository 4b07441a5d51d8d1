import { isIP } from 'node:net';
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { Context, Middleware } from 'koa';
import type { ZodType } from 'zod';
import { postAuthBuckets, preAuthBuckets, tokenHash, type BucketCheck, type LimitedAuth } from '../../rateLimit/buckets.js';
import type { Identity } from '../../rateLimit/identityCache.js';
import type { RateLimiter } from '../../rateLimit/limiter.js';
import { retryAfterSeconds, type ConsumeResult, type Reservation } from '../../rateLimit/store.js';
import type { AppDeps } from '../deps.js';
import { tooManyRequests } from '../errors.js';
import { rateLimitRejections } from '../../metrics/apiMetrics.js';
import type { AuthContext } from './authenticate.js';

/** What the rate-limit middleware needs to know about a route. */
export interface LimitedRoute {
  auth: LimitedAuth;
  method: string;
  /** endpointKey(route): "GET /api/v1/get-call-status/:call_id". */
  endpoint: string;
}

/** The one check of a request whose token is known, running while authentication does. */
interface CombinedCheck {
  identity: Identity;
  member: string;
  pre: BucketCheck[];
  post: BucketCheck[];
  result: Promise<ConsumeResult>;
}

interface RateLimitState {
  /** This request's entries in the pre-authentication buckets. */
  pre?: Reservation;
  tokenHash?: string;
  combined?: CombinedCheck;
  tightest?: { limit: number; remaining: number };
}

/** "::ffff:10.0.0.1" (IPv4 on a dual-stack socket) is 10.0.0.1. */
function normalizeIp(ip: string): string {
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}

/**
 * The client address the IP buckets count: Koa's ctx.ip, which with TRUST_PROXY=true is the
 * first X-Forwarded-For address and otherwise the peer. A forwarded value that is not an
 * IP address (garbage, or with a port) is not trusted: the peer address counts instead.
 */
export function clientIp(ctx: Context): string {
  const ip = normalizeIp(ctx.ip);
  if (isIP(ip)) return ip;
  return normalizeIp(ctx.socket.remoteAddress ?? '') || 'unknown';
}

/** The bearer token of the Authorization header if it carries one; never throws. */
function bearerTokenOf(ctx: Context): string | undefined {
  const match = /^bearer\s+(.+)$/i.exec(ctx.get('Authorization'));
  const token = match?.[1].trim();
  return token ? token : undefined;
}

function limiterOf(deps: AppDeps): RateLimiter {
  if (!deps.rateLimiter) throw new Error('AppDeps.rateLimiter is missing: build the app with createApp()');
  return deps.rateLimiter;
}

/**
 * Throws the documented 429 (docs/rate-limits.md), or sets the successful-response headers: limit and remaining of the
 * tightest bucket met so far (fewest remaining; of equals, the smaller limit).
 */
function admit(ctx: Context, buckets: BucketCheck[], result: ConsumeResult): Reservation {
  if (!result.allowed) {
    rateLimitRejections.inc({ bucket: result.bucket.name });
    throw tooManyRequests('Rate limit exceeded', {}, {
      'Retry-After': String(retryAfterSeconds(result.retryAfterMs)),
      'X-RateLimit-Limit': String(result.bucket.limit),
      'X-RateLimit-Remaining': '0',
    });
  }
  const state: RateLimitState = (ctx.state.rateLimit ??= {});
  buckets.forEach((bucket, i) => {
    const remaining = result.remaining[i];
    const t = state.tightest;
    if (!t || remaining < t.remaining || (remaining === t.remaining && bucket.limit < t.limit)) {
      state.tightest = { limit: bucket.limit, remaining };
    }
  });
  ctx.set('X-RateLimit-Limit', String(state.tightest!.limit));
  ctx.set('X-RateLimit-Remaining', String(state.tightest!.remaining));
  return result.reservation;
}

const keysOf = (buckets: BucketCheck[]) => buckets.map((b) => b.key);

/** The pre-authentication part of an admitted combined result (for a request that failed authentication). */
function preOnly(check: CombinedCheck, result: ConsumeResult): ConsumeResult {
  return result.allowed ? { ...result, remaining: result.remaining.slice(0, check.pre.length) } : result;
}

/**
 * The pre-authentication buckets (per IP, IP and endpoint, IP and endpoint writes, token and
 * endpoint, IP webhook). A request they admit stays counted even if authentication fails.
 * Nothing for the internal media-edge API, nor when RATE_LIMITS_ENABLED is false.
 *
 * A bearer token that authenticated before is known with its key and team: then its pre-
 * and post-authentication buckets are checked in one script call that runs while
 * authentication does, and the outcome is settled exactly as in the sequential order:
 * a full pre-authentication bucket answers 429 whatever authentication says; should
 * authentication fail (a revoked key), the post-authentication entries are taken back, or,
 * if a post-authentication bucket had rejected the combined check, the request is counted
 * in the pre-authentication buckets alone. Unknown and invalid tokens are checked first and
 * only reach authentication once admitted.
 */
export function rateLimitBeforeAuth(route: LimitedRoute, deps: AppDeps): Middleware[] {
  const limiter = limiterOf(deps);
  if (!limiter.enabled || route.auth === 'mediaEdge') return [];
  return [
    async (ctx, next) => {
      const token = route.auth === 'apiKey' ? bearerTokenOf(ctx) : undefined;
      const hash = token ? tokenHash(token) : undefined;
      const pre = preAuthBuckets(limiter.limits, { ...route, ip: clientIp(ctx), tokenHash: hash });
      const state: RateLimitState = (ctx.state.rateLimit = { tokenHash: hash });
      const member = limiter.newMember();
      const identity = hash ? limiter.identities.get(hash) : undefined;
      if (!identity) {
        state.pre = admit(ctx, pre, await limiter.consume({ buckets: pre, member }));
        return next();
      }
      const post = postAuthBuckets(limiter.limits, { method: route.method, ...identity });
      const check: CombinedCheck = { identity, member, pre, post, result: limiter.consume({ buckets: [...pre, ...post], member }) };
      state.combined = check;
      try {
        return await next();
      } catch (err) {
        // Failures after authentication were settled by rateLimitAfterAuth.
        if (ctx.state.auth) throw err;
        limiter.identities.delete(hash!);
        const result = await check.result;
        if (result.allowed) {
          admit(ctx, pre, preOnly(check, result));
          await limiter.release({ keys: keysOf(post), member });
        } else {
          // Counted nowhere yet: count it as the unauthenticated request it is (429 if a pre-authentication bucket is full).
          state.pre = admit(ctx, pre, await limiter.consume({ buckets: pre, member }));
        }
        throw err;
      }
    },
  ];
}

/**
 * The post-authentication buckets (per key, key writes, team, team writes) of API-key
 * routes. A rejection here also takes back the request's pre-authentication entries, in
 * the same atomic step: a rejected request counts in no bucket.
 */
export function rateLimitAfterAuth(route: LimitedRoute, deps: AppDeps): Middleware[] {
  const limiter = limiterOf(deps);
  if (!limiter.enabled || route.auth !== 'apiKey') return [];
  return [
    async (ctx, next) => {
      const auth = ctx.state.auth as AuthContext;
      const state: RateLimitState = (ctx.state.rateLimit ??= {});
      const check = state.combined;
      if (check) {
        const result = await check.result;
        if (check.identity.keyId === auth.keyId && check.identity.teamId === auth.teamId) {
          admit(ctx, [...check.pre, ...check.post], result);
          return next();
        }
        // Not the key the token was known as (cannot happen while keys keep their team): recount.
        if (result.allowed) {
          await limiter.release({ keys: keysOf(check.post), member: check.member });
          state.pre = { keys: keysOf(check.pre), member: check.member };
        } else {
          state.pre = admit(ctx, check.pre, await limiter.consume({ buckets: check.pre, member: check.member }));
        }
      }
      const buckets = postAuthBuckets(limiter.limits, { method: route.method, keyId: auth.keyId, teamId: auth.teamId });
      const pre = state.pre;
      admit(ctx, buckets, await limiter.consume({ buckets, member: pre?.member ?? limiter.newMember(), release: pre }));
      if (state.tokenHash) limiter.identities.set(state.tokenHash, { keyId: auth.keyId, teamId: auth.teamId });
      return next();
    },
  ];
}

const integerHeader = (description: string) => ({ description, schema: { type: 'integer' as const, minimum: 0 } });

const successHeaders = {
  'X-RateLimit-Limit': integerHeader('Limit per rolling 60 s of the tightest rate-limit bucket this request met.'),
  'X-RateLimit-Remaining': integerHeader('Requests that bucket still admits now.'),
};

const rejectionHeaders = {
  'Retry-After': integerHeader('Whole seconds until the oldest request counted by the rejecting bucket leaves its window (at least 1).'),
  'X-RateLimit-Limit': integerHeader('Limit of the rejecting bucket.'),
  'X-RateLimit-Remaining': integerHeader('Always 0.'),
};

/** Adds the 429 answer and the X-RateLimit headers to a rate-limited route's OpenAPI operation. */
export function documentRateLimits(route: { auth: LimitedAuth }, operation: RouteConfig, errorSchema: ZodType): RouteConfig {
  if (route.auth === 'mediaEdge') return operation;
  const responses: RouteConfig['responses'] = {};
  for (const [status, response] of Object.entries(operation.responses)) {
    const code = Number(status);
    if ('$ref' in response || code === 429) {
      responses[status] = response;
    } else {
      responses[status] = code < 300 ? { ...response, headers: { ...(response.headers as object | undefined), ...successHeaders } } : response;
    }
  }
  const existing = operation.responses[429];
  if (existing && '$ref' in existing) return { ...operation, responses };
  responses[429] = existing
    ? {
        ...existing,
        description: existing.description === 'Rate limit exceeded' ? existing.description : `${existing.description}; or Rate limit exceeded`,
        headers: { ...(existing.headers as object | undefined), ...rejectionHeaders },
      }
    : { description: 'Rate limit exceeded', content: { 'application/json': { schema: errorSchema } }, headers: rejectionHeaders };
  return { ...operation, responses };
}
