import { randomUUID } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import type { Logger } from '../../logging/logger.js';
import { redactPath } from '../../logging/redaction.js';

/**
 * Gives each request an id (echoed as X-Request-Id) and a child logger carrying it. When
 * tracing is on, the request's HTTP span carries the id (`request.id`) and, once a route
 * matched, its template (`http.route`, also in the span's name).
 */
export function requestContext(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = /^[\w.-]{1,100}$/.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    const span = trace.getActiveSpan();
    span?.setAttribute('request.id', requestId);
    const started = performance.now();
    try {
      await next();
    } finally {
      // The route's template as the metrics label it (`/api/v1/get-call-status/{call_id}`; httpMetrics.ts).
      const route: unknown = ctx.state.routeTemplate;
      if (span && typeof route === 'string') {
        span.setAttribute('http.route', route);
        span.updateName(`${ctx.method} ${route}`);
      }
      ctx.state.log.info(
        // A hook's path holds its bearer token: the log keeps its last 4 characters.
        { method: ctx.method, path: redactPath(ctx.path), status: ctx.status, ms: Math.round(performance.now() - started), teamId: ctx.state.auth?.teamId },
        'request',
      );
    }
  };
}
