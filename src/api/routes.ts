import { callRoutes } from './calls/routes.js';
import { healthRoutes } from './health/routes.js';
import { openApiRoutes } from './openapi/routes.js';
import type { RouteDefinition } from './route.js';

/** Every route of the service. A resource adds its list here. */
export function allRoutes(): RouteDefinition[] {
  return [...healthRoutes, ...callRoutes, ...openApiRoutes(allRoutes)];
}
