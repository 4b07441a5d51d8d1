// The typed TypeScript client of the Voice Agent Calling API (docs/api.md, "The TypeScript
// client"). Every request and response type comes from generated/api.ts, which openapi-typescript
// writes from the OpenAPI document (`npm run client:generate`); the calls are openapi-fetch's.
// This file adds only what the document cannot say: the API key, Idempotency-Key on creates,
// a 429 retried after its Retry-After, and the keyset cursors as async iterators.
import createFetchClient, { type Client, type FetchResponse } from 'openapi-fetch';
import type { components, paths } from './generated/api.js';

export type { components, operations, paths } from './generated/api.js';

/** Every failure's body: the document's `Error` schema, `{ success: false, message }`. */
export type ApiErrorBody = components['schemas']['Error'];

/** A failed answer, thrown by the iterators and by `dataOrThrow`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ApiErrorBody | undefined,
  ) {
    super(body?.message ?? `HTTP ${status}`);
    this.name = 'ApiError';
  }
}

export interface RateLimitRetryOptions {
  /** Attempts in all, the first included (default 3; 1 never retries). */
  maxAttempts?: number;
  /** A 429 asking for a longer wait than this is returned at once (default 60). */
  maxWaitSeconds?: number;
  /** How to wait before a retry (default a timer); a test passes one that moves its clock. */
  wait?: (ms: number) => Promise<void>;
}

export interface ClientOptions {
  /** The service's origin, e.g. `https://calls.example.com` (paths start with /api/v1). */
  baseUrl: string;
  /** An API key (`<prefix>_<token>`, made with the operator CLI), sent as a Bearer token. */
  apiKey: string;
  /**
   * `'auto'`: every POST under /api/v1 that carries no `Idempotency-Key` gets a fresh random
   * one, which the client's own 429 retries reuse. Default `'explicit'`: a key is sent only
   * when the call passes one (`params: { header: { 'Idempotency-Key': key } }`).
   */
  idempotencyKeys?: 'auto' | 'explicit';
  rateLimitRetry?: RateLimitRetryOptions;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: (request: Request) => Promise<Response>;
}

type QueryOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;
type ItemOf<T> = T extends readonly (infer I)[] ? I : never;

export type CallListItem = components['schemas']['CallListItem'];
export type DoNotCallEntry = components['schemas']['DoNotCallEntry'];
export type WebhookDelivery = components['schemas']['WebhookDelivery'];
export type ListContact = ItemOf<components['schemas']['ListResponse']['list']['contacts']>;

/** Every item of a cursor-paged list, newest first, fetched page by page as the loop asks. */
export interface Paginators {
  /** GET /api/v1/calls: the call log. A `cursor` in the query starts after it. */
  calls(query?: QueryOf<'/api/v1/calls'>): AsyncGenerator<CallListItem, void, undefined>;
  /** GET /api/v1/do-not-call. */
  doNotCall(query?: QueryOf<'/api/v1/do-not-call'>): AsyncGenerator<DoNotCallEntry, void, undefined>;
  /** GET /api/v1/webhook-deliveries. */
  webhookDeliveries(query?: QueryOf<'/api/v1/webhook-deliveries'>): AsyncGenerator<WebhookDelivery, void, undefined>;
  /** The contacts of GET /api/v1/lists/{list_id}. */
  listContacts(listId: string, query?: QueryOf<'/api/v1/lists/{list_id}'>): AsyncGenerator<ListContact, void, undefined>;
}

export type VoiceAgentClient = Client<paths> & { paginate: Paginators };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Seconds a Retry-After asks for (delta-seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** `send` with a 429 retried after its Retry-After, a bounded number of times. */
function retryingOn429(send: (request: Request) => Promise<Response>, options: RateLimitRetryOptions = {}): (request: Request) => Promise<Response> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
  const maxWaitSeconds = options.maxWaitSeconds ?? 60;
  const wait = options.wait ?? sleep;
  return async (request) => {
    for (let attempt = 1; ; attempt++) {
      // The body can be read once: each attempt but the last sends a copy.
      const response = await send(attempt < maxAttempts ? request.clone() : request);
      if (response.status !== 429 || attempt >= maxAttempts) return response;
      const seconds = retryAfterSeconds(response.headers.get('Retry-After'));
      if (seconds === undefined || seconds > maxWaitSeconds) return response;
      await response.body?.cancel();
      await wait(seconds * 1000);
    }
  };
}

/** The answer's data, or an ApiError with the service's status and message. */
export function dataOrThrow<T extends Record<string | number, any>, O, M extends `${string}/${string}`>(result: FetchResponse<T, O, M>): NonNullable<FetchResponse<T, O, M>['data']> {
  if (result.error !== undefined || !result.response.ok) throw new ApiError(result.response.status, result.error as ApiErrorBody | undefined);
  return result.data as NonNullable<FetchResponse<T, O, M>['data']>;
}

/** Pages through a keyset-paged list: `page(cursor)` answers its items and the next cursor (null on the last page). */
async function* keysetItems<T>(first: string | undefined, page: (cursor: string | undefined) => Promise<{ items: readonly T[]; next: string | null }>): AsyncGenerator<T, void, undefined> {
  let cursor = first;
  for (;;) {
    const { items, next } = await page(cursor);
    yield* items;
    if (!next) return;
    cursor = next;
  }
}

/** A client of the API at `baseUrl` authenticated with `apiKey`: openapi-fetch's GET/POST/... plus `paginate`. */
export function createClient(options: ClientOptions): VoiceAgentClient {
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.apiKey}` },
    fetch: retryingOn429(options.fetch ?? ((request) => globalThis.fetch(request)), options.rateLimitRetry),
  });
  if (options.idempotencyKeys === 'auto') {
    client.use({
      onRequest({ request, schemaPath }) {
        // docs/api.md: every authenticated POST under /api/v1 takes one (a hook trigger is not authenticated by a key).
        if (request.method !== 'POST' || !schemaPath.startsWith('/api/v1/') || schemaPath.startsWith('/api/v1/hooks/')) return undefined;
        if (!request.headers.has('Idempotency-Key')) request.headers.set('Idempotency-Key', globalThis.crypto.randomUUID());
        return request;
      },
    });
  }

  const paginate: Paginators = {
    calls: (query = {}) =>
      keysetItems(query.cursor, async (cursor) => {
        const data = dataOrThrow(await client.GET('/api/v1/calls', { params: { query: { ...query, cursor } } }));
        return { items: data.calls, next: data.meta.next_cursor };
      }),
    doNotCall: (query = {}) =>
      keysetItems(query.cursor, async (cursor) => {
        const data = dataOrThrow(await client.GET('/api/v1/do-not-call', { params: { query: { ...query, cursor } } }));
        return { items: data.entries, next: data.meta.next_cursor };
      }),
    webhookDeliveries: (query = {}) =>
      keysetItems(query.cursor, async (cursor) => {
        const data = dataOrThrow(await client.GET('/api/v1/webhook-deliveries', { params: { query: { ...query, cursor } } }));
        return { items: data.deliveries, next: data.meta.next_cursor };
      }),
    listContacts: (listId, query = {}) =>
      keysetItems(query.cursor, async (cursor) => {
        const data = dataOrThrow(await client.GET('/api/v1/lists/{list_id}', { params: { path: { list_id: listId }, query: { ...query, cursor } } }));
        return { items: data.list.contacts, next: data.meta.next_cursor };
      }),
  };
  return Object.assign(client, { paginate });
}
