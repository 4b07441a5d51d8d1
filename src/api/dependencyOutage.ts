// Errors that say a dependency is unreachable (Postgres down or restarting, Temporal
// unavailable) rather than that the request or the code is wrong: the API answers them
// 503 with Retry-After, so clients retry instead of treating them as a bug (docs/reliability.md).
import { isGrpcServiceError, NamespaceNotFoundError } from '@temporalio/client';
import { ApiError } from './errors.js';

export type Dependency = 'database' | 'temporal';

/** Whole seconds a client waits before retrying while a dependency is down. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/** Socket errors of a connection that could not be made or was cut. */
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** SQLSTATEs of a server that is shutting down, starting up or lost the connection (classes 08 and 57P). */
const PG_UNAVAILABLE_STATES = /^(08\d{3}|57P0[1-4])$/;
/** What node-postgres throws when a connection ends, or none frees up, without a SQLSTATE. */
const PG_CONNECTION_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Client was closed and is not queryable)/;
/** gRPC UNAVAILABLE and DEADLINE_EXCEEDED: Temporal did not answer. */
const GRPC_UNAVAILABLE = new Set([14, 4]);

/** The dependency `err` says is unreachable, or undefined when it says something else. */
export function unreachableDependency(err: unknown): Dependency | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && GRPC_UNAVAILABLE.has(e.code)) return 'temporal';
    // The service's own namespace exists (start-up waits for it): a server that says otherwise
    // cannot read its store (the dev server under load, minutes at a time), and a retry later works.
    if (e instanceof NamespaceNotFoundError) return 'temporal';
    const { code, message, name } = e as { code?: unknown; message?: unknown; name?: unknown };
    // A Temporal client call that fails to connect wraps the gRPC error as its cause.
    if (name === 'ServiceError') continue;
    if (typeof code === 'string' && (PG_UNAVAILABLE_STATES.test(code) || CONNECTION_ERROR_CODES.has(code))) return 'database';
    if (typeof message === 'string' && PG_CONNECTION_MESSAGES.test(message)) return 'database';
  }
  return undefined;
}

const PART_NAMES: Record<Dependency, string> = { database: 'the database', temporal: 'the workflow engine (Temporal)' };

/** The 503 of a request that found `dependency` down. */
export function dependencyUnavailable(dependency: Dependency): ApiError {
  return new ApiError(
    503,
    `Service unavailable: ${PART_NAMES[dependency]} cannot be reached; retry after Retry-After seconds`,
    {},
    { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
  );
}
