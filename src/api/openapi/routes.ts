import { defineRoute, type RouteDefinition } from '../route.js';
import { z } from '../schemas.js';
import { buildOpenApiDocument } from './document.js';

/** GET /api/v1/openapi.json, describing every route including itself. */
export function openApiRoutes(allRoutes: () => RouteDefinition[]): RouteDefinition[] {
  let cached: Record<string, unknown> | undefined;
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This API described as OpenAPI 3.1',
      tags: ['Meta'],
      auth: 'public',
      responses: { 200: { description: 'The OpenAPI document', schema: z.object({ openapi: z.string() }).passthrough() } },
      handler: async () => {
        cached ??= buildOpenApiDocument(allRoutes());
        return { body: cached };
      },
    }),
  ];
}
