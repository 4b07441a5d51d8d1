/**
 * The one error of the use cases: what went wrong (a kind) and a stable message, in no
 * transport's terms. Each adapter says it in its own protocol, once: the API's error
 * middleware as an HTTP status, the activity factory as a typed non-retryable
 * ApplicationFailure, the CLI as an operator error.
 */
export type UseCaseErrorKind =
  /** The input cannot be used as given. */
  | 'invalid'
  /** The caller could not be authenticated. */
  | 'unauthenticated'
  /** Something named by the input does not exist for this caller. */
  | 'not_found'
  /** The state of what was named does not allow the change. */
  | 'conflict'
  /** What was named existed and is used up for good. */
  | 'gone'
  /** A limit of the team is reached; trying later may work. */
  | 'too_many'
  /** The environment lacks configuration the use case needs. */
  | 'not_configured';

export class UseCaseError extends Error {
  constructor(
    readonly kind: UseCaseErrorKind,
    message: string,
    /** Facts shown beside the message, e.g. the status that forbade a change. */
    readonly extra: Record<string, unknown> = {},
    /** A stable name finer than the kind, for callers that name failures (a hook run's failure type). */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'UseCaseError';
  }
}

export const invalid = (message: string) => new UseCaseError('invalid', message);
export const unauthenticated = (message: string) => new UseCaseError('unauthenticated', message);
export const notFound = (message: string) => new UseCaseError('not_found', message);
export const conflict = (message: string, extra: Record<string, unknown> = {}) => new UseCaseError('conflict', message, extra);
export const gone = (message: string) => new UseCaseError('gone', message);
export const tooMany = (message: string, extra: Record<string, unknown> = {}) => new UseCaseError('too_many', message, extra);
export const notConfigured = (message: string) => new UseCaseError('not_configured', message);

/** Whether `err` is a use-case error of one of `kinds`. */
export function isUseCaseError(err: unknown, ...kinds: UseCaseErrorKind[]): err is UseCaseError {
  return err instanceof UseCaseError && kinds.includes(err.kind);
}
