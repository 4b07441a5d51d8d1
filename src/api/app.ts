import Router from '@koa/router';
import Koa from 'koa';
import { createRateLimiter } from '../rateLimit/limiter.js';
import { createRecordingStore } from '../recordings/index.js';
import { SynthesisPool } from '../recordings/synthesisPool.js';
import { wakeListBatches } from '../services/batches.js';
import type { AppDeps } from './deps.js';
import { errorHandler } from './middleware/errorHandler.js';
import { httpMetrics, routeTemplate } from './middleware/httpMetrics.js';
import { methodNotAllowed } from './middleware/methodNotAllowed.js';
import { requestContext } from './middleware/requestContext.js';
import { koaPath, routeChain, type RouteDefinition } from './route.js';
import { allRoutes } from './routes.js';

/** The Koa application: request context, error mapping, then every declared route. */
export function createApp(input: AppDeps, routes: RouteDefinition[] = allRoutes()): Koa {
  const deps: AppDeps = {
    ...input,
    rateLimiter: input.rateLimiter ?? createRateLimiter(input),
    listContactsAdded: input.listContactsAdded ?? wakeListBatches(input),
    recordings: input.recordings ?? createRecordingStore(input.config),
    synthesisPool:
      input.synthesisPool ??
      new SynthesisPool({ concurrency: input.config.RECORDING_SYNTHESIS_CONCURRENCY, maxQueued: input.config.RECORDING_SYNTHESIS_MAX_QUEUED }),
  };
  const app = new Koa({ proxy: deps.config.TRUST_PROXY });
  app.silent = true;
  const router = new Router();
  for (const route of routes) {
    router[route.method](koaPath(route.path), routeTemplate(route.path), ...routeChain(route, deps));
  }
  app.use(requestContext(deps.logger));
  app.use(httpMetrics());
  app.use(errorHandler());
  app.use(router.routes());
  app.use(methodNotAllowed(router));
  return app;
}
