import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import { openApiPath, type RouteDefinition } from '../route.js';
import { OPERATION_LINKS } from './links.js';

/** The route's description with its links (links.ts) on the answers they follow from. */
function withLinks(operation: RouteConfig): RouteConfig {
  const links = operation.operationId ? OPERATION_LINKS[operation.operationId] : undefined;
  if (!links) return operation;
  const responses: RouteConfig['responses'] = { ...operation.responses };
  for (const [status, byName] of Object.entries(links)) {
    const response = responses[status];
    if (!response || '$ref' in response) throw new Error(`links.ts: ${operation.operationId} has no ${status} answer to link from`);
    responses[status] = { ...response, links: byName };
  }
  return { ...operation, responses };
}

/** OpenAPI 3.1 document generated from the same route definitions that validate requests. */
export function buildOpenApiDocument(routes: RouteDefinition[]): Record<string, unknown> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key of the form <prefix>_<token>, created with the operator CLI.',
  });
  registry.registerComponent('securitySchemes', 'mediaEdgeAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'MEDIA_EDGE_SECRET: used only by the media edge on /internal/v1.',
  });
  for (const route of routes) registry.registerPath(withLinks(openApiPath(route)));
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Voice Agent Calling API',
      version: '1.0.0',
      description: 'Contacts, lists, objects, scheduled phone calls, web calls, webhook triggers and the Auth Check tool.',
    },
    servers: [{ url: '/' }],
  }) as unknown as Record<string, unknown>;
}
