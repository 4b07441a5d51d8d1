import type { Middleware } from 'koa';
import { ZodError } from 'zod';
import { WorkflowNotFoundError } from '@temporalio/client';
import { UseCaseError, type UseCaseErrorKind } from '../../services/errors.js';
import { dependencyUnavailable, unreachableDependency } from '../dependencyOutage.js';
import { ApiError, validationError } from '../errors.js';

const PG_UNIQUE_VIOLATION = '23505';

/** The HTTP status of each kind of use-case error. */
const STATUS_OF_KIND: Record<UseCaseErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  not_found: 404,
  conflict: 409,
  gone: 410,
  too_many: 429,
  not_configured: 500,
};

/** Maps every error to the { success: false, message } body of docs/api.md; unknown ones to 500. */
export function errorHandler(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        ctx.status = 404;
        ctx.body = { success: false, message: 'Not found' };
      }
    } catch (err) {
      const apiError = toApiError(err);
      if (apiError.status >= 500) ctx.state.log?.error({ err }, 'request failed');
      ctx.status = apiError.status;
      for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
      ctx.body = { success: false, message: apiError.message, ...apiError.extra };
    }
  };
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof UseCaseError) return new ApiError(STATUS_OF_KIND[err.kind], err.message, err.extra);
  if (err instanceof ZodError) return validationError(err, 'body');
  if (err instanceof WorkflowNotFoundError) return new ApiError(404, 'Not found');
  if ((err as { code?: string })?.code === PG_UNIQUE_VIOLATION) return new ApiError(409, 'Resource already exists');
  const unreachable = unreachableDependency(err);
  if (unreachable) return dependencyUnavailable(unreachable);
  return new ApiError(500, 'Internal server error');
}
