import type { Middleware } from 'koa';
import { httpRequestDuration, httpRequests, UNMATCHED_ROUTE } from '../../metrics/apiMetrics.js';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Marks the request with its route's template (`/api/v1/get-call-status/{call_id}`), the label of its metrics. */
export function routeTemplate(template: string): Middleware {
  return (ctx, next) => {
    ctx.state.routeTemplate = template;
    return next();
  };
}

/**
 * Counts every answer by method, route template and status, and times it by route template
 * (docs/observability.md). Placed outside the error handler, so it sees the status sent.
 * Labels stay bounded: an unknown method counts as OTHER, a path no route matched as `unmatched`.
 */
export function httpMetrics(): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const method = METHODS.has(ctx.method) ? ctx.method : 'OTHER';
      const route = (ctx.state.routeTemplate as string | undefined) ?? UNMATCHED_ROUTE;
      httpRequests.inc({ method, route, status: String(ctx.status) });
      httpRequestDuration.observe({ method, route }, (performance.now() - started) / 1000);
    }
  };
}
