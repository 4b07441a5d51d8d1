import type { ZodError } from 'zod';

/**
 * An error with an HTTP status and a stable, client-facing message. Everything a handler
 * throws on purpose is one of these; anything else becomes 500 Internal server error.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra top-level fields of the error body (for example maxBytes, max_concurrent). */
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string) => new ApiError(400, message);
export const unauthorized = (message: string) => new ApiError(401, message);
export const forbidden = (message: string) => new ApiError(403, message);
export const notFound = (message: string) => new ApiError(404, message);
export const conflict = (message: string, extra: Record<string, unknown> = {}) => new ApiError(409, message, extra);
export const gone = (message: string) => new ApiError(410, message);
export const payloadTooLarge = (maxBytes: number) =>
  new ApiError(413, `Request body exceeds the limit of ${maxBytes} bytes`, { maxBytes });
export const unprocessable = (message: string) => new ApiError(422, message);
export const tooManyRequests = (message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  new ApiError(429, message, extra, headers);
export const internalError = (message = 'Internal server error') => new ApiError(500, message);

/** "body.contact.phone_number" style path of a zod issue, without the leading location. */
function issuePath(path: PropertyKey[]): string {
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[');
}

/**
 * One readable message naming every offending field, e.g.
 * "Invalid request: first_name is required; phone_number must be a string".
 */
export function validationMessage(error: ZodError, location: 'body' | 'query' | 'path'): string {
  const parts = error.issues.slice(0, 5).map((issue) => {
    const field = issuePath(issue.path) || (location === 'body' ? 'body' : location);
    if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message)) return `${field} is required`;
    if (issue.code === 'unrecognized_keys') {
      const keys = (issue as { keys: string[] }).keys.join(', ');
      return field === 'body' ? `unknown field ${keys}` : `${field} has unknown field ${keys}`;
    }
    const message = issue.message.replace(/^Invalid input: /, '');
    // Schemas that already name their field ("limit must be an integer ...") are kept as is.
    return message.startsWith(`${field} `) ? message : `${field}: ${message}`;
  });
  return `Invalid request: ${parts.join('; ')}`;
}

export function validationError(error: ZodError, location: 'body' | 'query' | 'path'): ApiError {
  return badRequest(validationMessage(error, location));
}
