import { contactRoutes } from './contacts/routes.js';
import { doNotCallRoutes } from './do-not-call/routes.js';
import { callRoutes } from './calls/routes.js';
import { healthRoutes } from './health/routes.js';
import { hookRoutes } from './hooks/routes.js';
import { listRoutes } from './lists/routes.js';
import { objectTypeRoutes } from './object-types/routes.js';
import { objectRoutes } from './objects/routes.js';
import { webCallRoutes } from './web-calls/routes.js';
import { internalRoutes } from './internal/routes.js';
import { inboundCallRoutes } from './inbound-calls/routes.js';
import { openApiRoutes } from './openapi/routes.js';
import { docsRoutes } from './docs/routes.js';
import { recordingRoutes } from './recordings/routes.js';
import { webhookDeliveryRoutes } from './webhook-deliveries/routes.js';
import { webhookEndpointRoutes } from './webhook-endpoints/routes.js';
import type { RouteDefinition } from './route.js';

/** Every route of the service. A resource adds its list here. */
export function allRoutes(): RouteDefinition[] {
  return [...healthRoutes, ...callRoutes, ...hookRoutes, ...contactRoutes, ...doNotCallRoutes, ...listRoutes, ...objectTypeRoutes, ...objectRoutes, ...webCallRoutes, ...recordingRoutes, ...webhookEndpointRoutes, ...webhookDeliveryRoutes, ...internalRoutes, ...inboundCallRoutes, ...openApiRoutes(allRoutes), ...docsRoutes];
}
