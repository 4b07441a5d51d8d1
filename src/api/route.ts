import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { Context, Middleware } from 'koa';
import type { Readable } from 'node:stream';
import type { ZodType } from 'zod';
import { validationError } from './errors.js';
import type { AppDeps } from './deps.js';
import { authenticateApiKey, authenticateMediaEdge, type AuthContext } from './middleware/authenticate.js';
import { jsonBody } from './middleware/jsonBody.js';
import { documentRateLimits, rateLimitAfterAuth, rateLimitBeforeAuth } from './middleware/rateLimit.js';
import { documentIdempotency, idempotency } from './middleware/idempotency.js';
import { errorResponse } from './schemas.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Who may call a route: `apiKey` (Bearer API key, team attached), `mediaEdge` (the
 * internal media-edge secret), `hookToken` (the token in the path, checked by the
 * handler) or `public`.
 */
export type RouteAuth = 'apiKey' | 'mediaEdge' | 'hookToken' | 'public';

export interface RouteResponseSpec {
  description: string;
  schema?: ZodType;
  /** Default application/json; the API reference page and its files answer other types (one of several). */
  contentType?: string | string[];
  /** Headers the answer carries (e.g. Retry-After on a 503), as OpenAPI header objects. */
  headers?: Record<string, { description: string; schema: { type: 'integer' | 'string'; minimum?: number } }>;
}

export interface RouteRequest<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** Set on apiKey routes. */
  auth: AuthContext;
  ctx: Context;
}

export interface RouteResult {
  status?: number;
  /** JSON; a string, Buffer or stream only on routes that answer a file (their Content-Type in headers). */
  body: Record<string, unknown> | string | Buffer | Readable;
  headers?: Record<string, string>;
}

export interface RouteDefinition<P = any, Q = any, B = any> {
  method: HttpMethod;
  /** OpenAPI-style template, e.g. /api/v1/get-call-status/{call_id}. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: RouteAuth;
  request?: { params?: ZodType<P>; query?: ZodType<Q>; body?: ZodType<B>; bodyRequired?: boolean };
  responses: Record<number, RouteResponseSpec>;
  handler: (req: RouteRequest<P, Q, B>, deps: AppDeps) => Promise<RouteResult>;
}

/** Declares a route once: its schemas validate requests and feed the OpenAPI document. */
export function defineRoute<P, Q, B>(route: RouteDefinition<P, Q, B>): RouteDefinition<P, Q, B> {
  return route;
}

/** /api/v1/x/{id} -> /api/v1/x/:id for the Koa router. */
export function koaPath(template: string): string {
  return template.replace(/\{(\w+)\}/g, ':$1');
}

/** "METHOD template": the endpoint identity used by rate limits and idempotency keys. */
export function endpointKey(route: Pick<RouteDefinition, 'method' | 'path'>): string {
  return `${route.method.toUpperCase()} ${koaPath(route.path)}`;
}

function validated<T>(schema: ZodType<T> | undefined, value: unknown, location: 'body' | 'query' | 'path'): T {
  if (!schema) return value as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationError(parsed.error, location);
  return parsed.data;
}

function authentication(route: RouteDefinition, deps: AppDeps): Middleware[] {
  switch (route.auth) {
    case 'apiKey':
      return [authenticateApiKey(deps)];
    case 'mediaEdge':
      return [authenticateMediaEdge(deps)];
    default:
      return [];
  }
}

/**
 * The chain every route runs, in this order: pre-authentication rate limits, authenticate,
 * post-authentication rate limits, read the JSON body (413/400), validate path, query and
 * body, then the handler.
 */
export function routeChain(route: RouteDefinition, deps: AppDeps): Middleware[] {
  const handle: Middleware = async (ctx) => {
    const params = validated(route.request?.params, ctx.params ?? {}, 'path');
    const query = validated(route.request?.query, { ...ctx.query }, 'query');
    const rawBody = ctx.state.body;
    const body = validated(route.request?.body, rawBody === undefined && !route.request?.bodyRequired ? {} : rawBody, 'body');
    const result = await route.handler({ params, query, body, auth: ctx.state.auth, ctx }, deps);
    ctx.status = result.status ?? 200;
    for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
    ctx.body = result.body;
  };
  const limited = { auth: route.auth, method: route.method, endpoint: endpointKey(route) };
  return [
    ...rateLimitBeforeAuth(limited, deps),
    ...authentication(route, deps),
    ...rateLimitAfterAuth(limited, deps),
    jsonBody(),
    ...idempotency(route, deps),
    handle,
  ];
}

/** Every route's 503: the database or Temporal cannot be reached (src/api/dependencyOutage.ts). */
const dependencyOutageResponse: RouteResponseSpec = {
  description: 'A dependency (the database or Temporal) cannot be reached; the message names it. Nothing was answered 2xx: retry after Retry-After seconds.',
  headers: { 'Retry-After': { description: 'Whole seconds to wait before retrying.', schema: { type: 'integer' as const, minimum: 1 } } },
};

/** What every route of an auth kind declares, described here once. */
function commonResponses(route: RouteDefinition): Record<number, RouteResponseSpec> {
  const common: Record<number, RouteResponseSpec> = { 500: { description: 'Internal server error' }, 503: dependencyOutageResponse };
  if (route.auth === 'apiKey') {
    common[401] = { description: 'Missing, malformed or invalid API key' };
    common[403] = { description: 'API key has been revoked' };
    common[429] = { description: 'Rate limit exceeded' };
  } else if (route.auth === 'mediaEdge') {
    common[401] = { description: 'Missing or invalid media edge secret' };
  }
  return common;
}

/**
 * What a route can answer around its handler that it does not describe itself, by the chain
 * it runs: Node's HTTP parser (400, 408, 431), reading a body (413, and 400 for a body that
 * is not JSON or nests too deep) and a path naming something that is not there (404).
 */
function chainResponses(route: RouteDefinition): Record<number, RouteResponseSpec> {
  const readsBody = route.method !== 'get';
  const chain: Record<number, RouteResponseSpec> = {
    400: { description: readsBody ? 'Malformed HTTP request, a body that is not JSON or nests deeper than 64 levels, or an invalid field' : 'Malformed HTTP request, or an invalid parameter' },
    408: { description: 'Request timed out (the connection is then closed)' },
    431: { description: 'Request headers exceed the server limit (the connection is then closed)' },
  };
  if (readsBody) chain[413] = { description: 'Request body exceeds the limit of 1048576 bytes (with maxBytes)' };
  if (/\{\w+\}/.test(route.path)) chain[404] = { description: 'Not found' };
  return chain;
}

function responseObject(spec: RouteResponseSpec, status: number): RouteConfig['responses'][string] {
  const schema = spec.schema ?? (status >= 400 ? errorResponse : undefined);
  const headers = spec.headers ? { headers: spec.headers } : {};
  return schema
    ? { description: spec.description, content: Object.fromEntries([spec.contentType ?? 'application/json'].flat().map((type) => [type, { schema }])), ...headers }
    : { description: spec.description, ...headers };
}

/** The OpenAPI description of one route. */
export function openApiPath(route: RouteDefinition): RouteConfig {
  const responses: RouteConfig['responses'] = {};
  const all: Record<number, RouteResponseSpec> = { ...commonResponses(route), ...route.responses };
  for (const [status, spec] of Object.entries(all)) responses[status] = responseObject(spec, Number(status));
  const operation = documentIdempotency(route, {
    method: route.method,
    path: route.path,
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    tags: route.tags,
    security: route.auth === 'apiKey' ? [{ bearerAuth: [] }] : route.auth === 'mediaEdge' ? [{ mediaEdgeAuth: [] }] : [],
    request: {
      // zod-to-openapi wants object schemas here; every route's params and query are objects.
      params: route.request?.params as any,
      query: route.request?.query as any,
      body: route.request?.body
        ? { required: route.request.bodyRequired ?? true, content: { 'application/json': { schema: route.request.body } } }
        : undefined,
    },
    responses,
  }, errorResponse);
  const documented = documentRateLimits(route, operation, errorResponse);
  // Last, so the route's own descriptions and the idempotency and rate-limit ones come first.
  for (const [status, spec] of Object.entries(chainResponses(route))) documented.responses[status] ??= responseObject(spec, Number(status));
  return documented;
}
