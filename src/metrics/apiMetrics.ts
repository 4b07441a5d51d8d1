/**
 * The API's metrics (docs/observability.md): served by the API process's /metrics. Labels
 * are bounded: the route TEMPLATE (never the path, which holds ids and tokens), the method,
 * the status, the rate-limit bucket's name.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { LiveSources, sumOfSources } from './liveSources.js';

export const apiRegistry = new Registry();
const registers = [apiRegistry];

/** The route label of a request no route matched (404s of unknown paths). */
export const UNMATCHED_ROUTE = 'unmatched';

export const httpRequests = new Counter({
  name: 'voice_agent_http_requests_total',
  help: 'API requests answered, by method, route template and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers,
});

export const httpRequestDuration = new Histogram({
  name: 'voice_agent_http_request_duration_seconds',
  help: 'Time from a request reaching the API to its answer, by method and route template.',
  labelNames: ['method', 'route'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

export const rateLimitRejections = new Counter({
  name: 'voice_agent_rate_limit_rejections_total',
  help: 'Requests answered 429, by the rate-limit bucket that refused them (docs/rate-limits.md).',
  labelNames: ['bucket'] as const,
  registers,
});

/** What the fallback gauge reads: each rate limiter of the process. */
export const rateLimiters = new LiveSources<{ readonly degraded: boolean }>();

export const rateLimitRedisFallback = new Gauge({
  name: 'voice_agent_rate_limit_redis_fallback',
  help: '1 while the rate limiter counts in process because Redis (REDIS_URL) is unreachable or slow, else 0.',
  registers,
  collect: sumOfSources(rateLimiters, (limiter) => [[{}, limiter.degraded ? 1 : 0]]),
});

export const idempotentReplays = new Counter({
  name: 'voice_agent_idempotent_replays_total',
  help: 'Requests with an Idempotency-Key answered with the kept answer of an earlier request, by route template.',
  labelNames: ['route'] as const,
  registers,
});

export const idempotencyConflicts = new Counter({
  name: 'voice_agent_idempotency_conflicts_total',
  help: 'Requests with an Idempotency-Key refused: in_progress (409, the first is still running) or different_request (422, another body).',
  labelNames: ['route', 'reason'] as const,
  registers,
});
