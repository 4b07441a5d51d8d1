import { createHash, randomUUID } from 'node:crypto';
import type { RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { Context, Middleware } from 'koa';
import { secretBox } from '../../config/index.js';
import type { Pool } from '../../db/pool.js';
import { nameBasedUuid } from '../../domain/ids.js';
import type { SecretBox } from '../../secrets/secretBox.js';
import {
  findIdempotencyKey,
  pruneExpiredIdempotencyKeys,
  releaseIdempotencyKey,
  runIdempotencyBatch,
  type ClaimedKey,
  type IdempotencyClaim,
  type IdempotencyCompletion,
  type IdempotencyKeyRef,
  type IdempotencyRecord,
} from '../../db/repositories/idempotency.js';
import type { AppDeps } from '../deps.js';
import { badRequest, conflict, unprocessable } from '../errors.js';
import { idempotencyConflicts, idempotentReplays } from '../../metrics/apiMetrics.js';
import { endpointKey, type RouteDefinition } from '../route.js';
import { z } from '../schemas.js';
import type { AuthContext } from './authenticate.js';
import { toApiError } from './errorHandler.js';

// Idempotent requests. See docs/idempotency.md.

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** How long a kept response is replayed. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

export const INVALID_KEY_MESSAGE = 'Idempotency-Key must be 1 to 255 printable ASCII characters';
export const DIFFERENT_BODY_MESSAGE = 'Idempotency-Key was already used with a different request body';
export const IN_PROGRESS_MESSAGE = 'A request with this Idempotency-Key is still in progress';

const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;
/** Answers never kept: the client fixes the request (or waits) and sends the same key again. */
const NEVER_KEPT = new Set([400, 401, 403, 429]);
// Expired rows are deleted in small batches, at most once a minute per process, off the
// request's critical path; a full batch schedules the next one at the next request.
const PRUNE_INTERVAL_MS = 60_000;
const PRUNE_BATCH = 1000;
// Headers never stored with a kept response: recomputed, or belonging to the replay itself.
const UNKEPT_HEADERS = new Set(['content-length', 'x-request-id', IDEMPOTENT_REPLAYED_HEADER.toLowerCase()]);

/** What the middleware keeps on ctx.state.idempotency while it owns a key. */
export interface IdempotencyState extends IdempotencyKeyRef {
  attemptId: string;
  recordCreatedAt: Date;
  /** Set by markChanged(): a 5xx after a durable change is kept, not released. */
  changed: boolean;
}

/** Whether a route takes the Idempotency-Key header: every API-key POST under /api/v1. */
export function idempotencyApplies(route: Pick<RouteDefinition, 'auth' | 'method' | 'path'>): boolean {
  return route.auth === 'apiKey' && route.method === 'post' && route.path.startsWith('/api/v1/');
}

/**
 * A UUID (version-8 shape) derived from team, endpoint, key and the creation time of the
 * key's record (and an optional purpose, for a second resource of the same request). Every
 * run under one record gets the same id: a retry after a released failure, and the
 * take-over of a crashed run, so a create that died half-way cannot create a second
 * resource or start a second workflow. A key reused after its record expired gets a new
 * record, hence a new id.
 */
export function deriveIdempotentId(ref: IdempotencyKeyRef, recordCreatedAt: Date, purpose?: string): string {
  return nameBasedUuid(JSON.stringify(['idempotency', ref.teamId, ref.endpoint, ref.key, recordCreatedAt.getTime(), purpose ?? null]));
}

/**
 * The deterministic resource id of this request when it carries an Idempotency-Key,
 * otherwise undefined (use a random id then): `idempotentId(req.ctx) ?? randomUUID()`.
 * Pass a purpose when one request creates more than one resource.
 */
export function idempotentId(ctx: Context, purpose?: string): string | undefined {
  const state = ctx.state.idempotency as IdempotencyState | undefined;
  if (!state) return undefined;
  return purpose === undefined ? (ctx.state.idempotentId as string) : deriveIdempotentId(state, state.recordCreatedAt, purpose);
}

/**
 * Tells the middleware the request has made a durable change: should it then fail with a
 * 5xx, that answer is kept and replayed instead of letting a retry run again. Needed only
 * where re-running after a partial change would not be safe on its own.
 */
export function markChanged(ctx: Context): void {
  const state = ctx.state.idempotency as IdempotencyState | undefined;
  if (state) state.changed = true;
}

/** JSON with object keys sorted at every level: equal after parsing means equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const fields = Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`);
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The hash a replay is compared on: path parameters, query and parsed body (key order and
 * whitespace do not matter). An empty body differs from `{}`.
 */
export function requestFingerprint(request: { params: unknown; query: unknown; body: unknown }): string {
  const body = request.body === undefined ? [] : [request.body];
  return createHash('sha256').update(canonicalJson([request.params ?? {}, request.query ?? {}, body])).digest('hex');
}

function keeps(status: number, changed: boolean): boolean {
  if (NEVER_KEPT.has(status)) return false;
  if (status >= 500) return changed;
  return true;
}

function headerSnapshot(ctx: Context): Record<string, string> {
  const snapshot: Record<string, string> = {};
  for (const [name, value] of Object.entries(ctx.response.headers)) {
    if (value !== undefined) snapshot[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return snapshot;
}

/** The headers the route itself set (Content-Type, Location, ...), not those of earlier steps such as rate limits. */
function routeHeaders(before: Record<string, string>, ctx: Context): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headerSnapshot(ctx))) {
    if (before[name] !== value && !UNKEPT_HEADERS.has(name)) kept[name] = value;
  }
  return kept;
}

function serialisedBody(body: unknown): string | undefined {
  if (body === undefined || body === null) return '';
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  if (typeof (body as { pipe?: unknown }).pipe === 'function') return undefined; // a stream cannot be kept
  return JSON.stringify(body);
}

/**
 * What a kept body is sealed to: its record. Every kept body is stored encrypted, as it may
 * carry a session token, a call token, a webhook secret or a signed link (docs/idempotency.md,
 * "Kept answers are encrypted").
 */
function keptBodyContext(ref: IdempotencyKeyRef): string {
  return `idempotency:${JSON.stringify([ref.teamId, ref.endpoint, ref.key])}`;
}

function replay(ctx: Context, record: IdempotencyRecord, box: SecretBox, ref: IdempotencyKeyRef): void {
  // Opened first: an answer that cannot be read (a wrong key) is a 500, never a half-set replay.
  const body = box.open(record.response_body!, keptBodyContext(ref));
  ctx.status = record.response_status!;
  for (const [name, value] of Object.entries(record.response_headers)) ctx.set(name, value);
  ctx.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
  ctx.body = body;
}

const PG_DEADLOCK_DETECTED = '40P01';

/**
 * Group commit: the claims and completions of concurrent requests go to the database
 * together, one call per batch, so the header costs a share of one round trip and commit
 * rather than two whole ones. With nothing in flight an item is sent at once, so a lone
 * request waits for nobody; while a batch is in flight, arrivals gather for the next one
 * (one in flight gave the largest batches and the best throughput in bench/idempotency.ts;
 * a batch is a few primary-key statements that never wait on anything but other batches).
 * A batch never holds one key twice (a second use waits for the next batch).
 */
class GroupCommit<I, O> {
  private queue: Array<{ item: I; resolve: (out: O) => void; reject: (err: unknown) => void }> = [];
  private inFlight = 0;

  constructor(
    private readonly send: (items: I[]) => Promise<O[]>,
    private readonly keyOf: (item: I) => string,
    private readonly maxBatch = 200,
    private readonly maxInFlight = 1,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch: typeof this.queue = [];
      const rest: typeof this.queue = [];
      const keys = new Set<string>();
      for (const entry of this.queue) {
        const key = this.keyOf(entry.item);
        if (batch.length < this.maxBatch && !keys.has(key)) {
          keys.add(key);
          batch.push(entry);
        } else {
          rest.push(entry);
        }
      }
      this.queue = rest;
      this.inFlight += 1;
      this.sendWithRetry(batch.map((e) => e.item))
        .then(
          (results) => batch.forEach((e, i) => e.resolve(results[i])),
          (err) => batch.forEach((e) => e.reject(err)),
        )
        .finally(() => {
          this.inFlight -= 1;
          this.pump();
        });
    }
  }

  // Batches of two processes locking the same rows in opposite orders deadlock; Postgres aborts one, which is simply sent again.
  private async sendWithRetry(items: I[]): Promise<O[]> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.send(items);
      } catch (err) {
        if ((err as { code?: string }).code !== PG_DEADLOCK_DETECTED || attempt >= 3) throw err;
      }
    }
  }
}

type BatchItem = { claim: IdempotencyClaim } | { completion: IdempotencyCompletion };
type BatchOutcome = ClaimedKey | boolean | undefined;

const itemKey = (item: BatchItem) => {
  const ref = 'claim' in item ? item.claim : item.completion;
  return JSON.stringify([ref.teamId, ref.endpoint, ref.key]);
};

// One pipe per pool and stale time (several apps with different settings can share a pool in tests).
const pipes = new WeakMap<Pool, Map<number, GroupCommit<BatchItem, BatchOutcome>>>();

function pipeOf(pool: Pool, staleAfterSeconds: number): GroupCommit<BatchItem, BatchOutcome> {
  let byStale = pipes.get(pool);
  if (!byStale) pipes.set(pool, (byStale = new Map()));
  let pipe = byStale.get(staleAfterSeconds);
  if (!pipe) {
    const timing = { ttlSeconds: IDEMPOTENCY_TTL_SECONDS, staleAfterSeconds };
    pipe = new GroupCommit<BatchItem, BatchOutcome>(async (items) => {
      const claims = items.flatMap((i) => ('claim' in i ? [i.claim] : []));
      const completions = items.flatMap((i) => ('completion' in i ? [i.completion] : []));
      const result = await runIdempotencyBatch(pool, { claims, completions }, timing);
      return items.map((i) => ('claim' in i ? result.claimed.get(i.claim.attemptId) : result.kept.has(i.completion.attemptId)));
    }, itemKey);
    byStale.set(staleAfterSeconds, pipe);
  }
  return pipe;
}

const lastPrune = new WeakMap<object, number>();

/** Starts a bounded prune of expired keys, at most once per interval; never awaited. */
function maybePrune(deps: AppDeps): void {
  const now = Date.now();
  if (now - (lastPrune.get(deps.pool) ?? 0) < PRUNE_INTERVAL_MS) return;
  lastPrune.set(deps.pool, now);
  pruneExpiredIdempotencyKeys(deps.pool, PRUNE_BATCH).then(
    (deleted) => {
      if (deleted >= PRUNE_BATCH) lastPrune.set(deps.pool, 0);
    },
    (err) => deps.logger.warn({ err }, 'could not prune expired idempotency keys'),
  );
}

/**
 * The idempotency step of a route's chain, placed after authentication and the JSON body
 * and before validation: [] for routes it does not apply to. Without the header the
 * request runs as usual. With it, the first request claims the key, runs, and its answer
 * is kept (or the key released for 400/401/403/429 and unchanged 5xx); later requests
 * replay the kept answer, or get 409 while it runs and 422 for a different request.
 */
export function idempotency(route: RouteDefinition, deps: AppDeps): Middleware[] {
  if (!idempotencyApplies(route)) return [];
  const endpoint = endpointKey(route);
  const staleAfterSeconds = deps.config.IDEMPOTENCY_STALE_AFTER_SECONDS;
  const box = secretBox(deps.config);
  const step: Middleware = async (ctx, next) => {
    const key = ctx.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
    if (key === undefined) return next();
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) throw badRequest(INVALID_KEY_MESSAGE);
    const auth = ctx.state.auth as AuthContext;
    const ref: IdempotencyKeyRef = { teamId: auth.teamId, endpoint, key };
    const requestHash = requestFingerprint({ params: ctx.params, query: ctx.query, body: ctx.state.body });
    const attemptId = randomUUID();
    maybePrune(deps);

    // A record seen as existing can vanish or be released before it is read: claim again.
    let claimed: ClaimedKey | undefined;
    for (let attempt = 0; !claimed; attempt += 1) {
      claimed = (await pipeOf(deps.pool, staleAfterSeconds).submit({ claim: { ...ref, requestHash, attemptId } })) as ClaimedKey | undefined;
      if (claimed) break;
      const existing = await findIdempotencyKey(deps.pool, ref);
      if (existing && existing.state !== 'released') {
        if (existing.request_hash !== requestHash) {
          idempotencyConflicts.inc({ route: route.path, reason: 'different_request' });
          throw unprocessable(DIFFERENT_BODY_MESSAGE);
        }
        if (existing.state === 'in_progress') {
          idempotencyConflicts.inc({ route: route.path, reason: 'in_progress' });
          throw conflict(IN_PROGRESS_MESSAGE);
        }
        replay(ctx, existing, box, ref);
        idempotentReplays.inc({ route: route.path });
        return;
      }
      if (attempt >= 2) {
        idempotencyConflicts.inc({ route: route.path, reason: 'in_progress' });
        throw conflict(IN_PROGRESS_MESSAGE);
      }
    }
    if (claimed.reclaimed) ctx.state.log?.info({ endpoint, recordCreatedAt: claimed.createdAt }, 'claimed an idempotency key again (its earlier run was released or went stale)');

    const state: IdempotencyState = { ...ref, attemptId, recordCreatedAt: claimed.createdAt, changed: false };
    ctx.state.idempotency = state;
    ctx.state.idempotentId = deriveIdempotentId(ref, claimed.createdAt);
    const release = async () => {
      try {
        await releaseIdempotencyKey(deps.pool, { ...ref, attemptId });
      } catch (err) {
        // The key stays in progress until it goes stale and is taken over.
        ctx.state.log?.warn({ err, endpoint }, 'could not release an idempotency key');
      }
    };

    const headersBefore = headerSnapshot(ctx);
    try {
      await next();
    } catch (err) {
      const apiError = toApiError(err);
      if (!keeps(apiError.status, state.changed)) {
        await release();
        throw err;
      }
      // Kept errors are rendered here, exactly as the error handler would, so that the
      // stored text is the text sent.
      if (apiError.status >= 500) ctx.state.log?.error({ err }, 'request failed');
      ctx.status = apiError.status;
      for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
      ctx.body = { success: false, message: apiError.message, ...apiError.extra };
    }

    const body = serialisedBody(ctx.body);
    if (!keeps(ctx.status, state.changed) || body === undefined) return release();
    ctx.body = body;
    try {
      const sealed = box.seal(body, keptBodyContext(ref));
      await pipeOf(deps.pool, staleAfterSeconds).submit({ completion: { ...ref, attemptId, status: ctx.status, body: sealed, headers: routeHeaders(headersBefore, ctx) } });
    } catch (err) {
      // The request itself succeeded: answer it. The key goes stale and the next retry
      // runs again, where the deterministic id and the endpoint's own uniqueness hold.
      ctx.state.log?.error({ err, endpoint }, 'could not keep an idempotent response');
    }
  };
  return [step];
}

const idempotencyKeyHeader = z.object({
  [IDEMPOTENCY_KEY_HEADER]: z
    .string()
    .min(1)
    .max(255)
    .regex(KEY_PATTERN)
    .optional()
    .openapi({
      description:
        'Makes the request safe to retry: the first request with a key runs, and for 24 hours a request with the same key and the same body answers the kept status and body with Idempotent-Replayed: true. 1 to 255 printable ASCII characters, scoped to the team and the route.',
      example: '5f0c8a7e-2c1b-4d7e-9a51-0d3b8f6e4c21',
    }),
});

const replayedHeader = {
  [IDEMPOTENT_REPLAYED_HEADER]: {
    description: '`true` when this is the kept answer of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string' as const, enum: ['true'] },
  },
};

function withExtraDescription(response: RouteConfig['responses'][string] | undefined, description: string): RouteConfig['responses'][string] {
  if (!response) return { description, content: undefined };
  if ('$ref' in response) return response;
  return { ...response, description: `${response.description}; or ${description.charAt(0).toLowerCase()}${description.slice(1)}` };
}

/**
 * Adds the Idempotency-Key request header, the 409/422 answers and the
 * Idempotent-Replayed response header to a route's OpenAPI operation where it applies.
 */
export function documentIdempotency(route: RouteDefinition, operation: RouteConfig, errorSchema: z.ZodType): RouteConfig {
  if (!idempotencyApplies(route)) return operation;
  const responses: RouteConfig['responses'] = { ...operation.responses };
  const errorContent = { 'application/json': { schema: errorSchema } };
  const invalid = withExtraDescription(responses[400], INVALID_KEY_MESSAGE);
  responses[400] = '$ref' in invalid ? invalid : { ...invalid, content: invalid.content ?? errorContent };
  const inProgress = withExtraDescription(responses[409], IN_PROGRESS_MESSAGE);
  responses[409] = '$ref' in inProgress ? inProgress : { ...inProgress, content: inProgress.content ?? errorContent };
  const different = withExtraDescription(responses[422], DIFFERENT_BODY_MESSAGE);
  responses[422] = '$ref' in different ? different : { ...different, content: different.content ?? errorContent };
  for (const [status, response] of Object.entries(responses)) {
    if ('$ref' in response || !keeps(Number(status), true)) continue;
    responses[status] = { ...response, headers: { ...(response.headers as object | undefined), ...replayedHeader } };
  }
  const existingHeaders = operation.request?.headers;
  const headers = existingHeaders === undefined ? idempotencyKeyHeader : Array.isArray(existingHeaders) ? [...existingHeaders, idempotencyKeyHeader] : [existingHeaders, idempotencyKeyHeader];
  return { ...operation, request: { ...operation.request, headers }, responses };
}
