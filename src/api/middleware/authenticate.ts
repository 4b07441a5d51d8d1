import type { Middleware } from 'koa';
import { apiKeyPrefix } from '../../domain/apiKeys.js';
import { digestsEqual, hashSecret } from '../../domain/digests.js';
import { findApiKeyByPrefix } from '../../db/repositories/apiKeys.js';
import { dependencyUnavailable, unreachableDependency } from '../dependencyOutage.js';
import { forbidden, unauthorized } from '../errors.js';
import type { AppDeps } from '../deps.js';

export interface AuthContext {
  teamId: string;
  keyId: string;
}

/** The bearer token of the Authorization header, or the documented 401 for its absence. */
export function bearerToken(header: string | undefined): string {
  // HTTP strips trailing whitespace from header values, so "Bearer " arrives as "Bearer".
  if (header !== undefined && /^bearer\s*$/i.test(header)) throw unauthorized('API key is empty');
  if (!header || !/^bearer /i.test(header)) throw unauthorized('Missing or malformed Authorization header');
  const token = header.slice('Bearer '.length).trim();
  if (token === '') throw unauthorized('API key is empty');
  return token;
}

/** API-key authentication exactly as the table of docs/api.md "Authentication"; attaches ctx.state.auth. */
export function authenticateApiKey(deps: AppDeps): Middleware {
  return async (ctx, next) => {
    const apiKey = bearerToken(ctx.get('Authorization') || undefined);
    const prefix = apiKeyPrefix(apiKey);
    if (!prefix) throw unauthorized('Invalid API key');
    let record;
    try {
      record = await findApiKeyByPrefix(deps.pool, prefix);
    } catch (err) {
      // A database that cannot be reached says nothing about the key: 503, so the client retries.
      if (unreachableDependency(err) === 'database') throw dependencyUnavailable('database');
      ctx.state.log?.error({ err }, 'API key lookup failed');
      throw unauthorized('Authentication failed');
    }
    if (!record || !digestsEqual(record.key_hash, hashSecret(apiKey))) throw unauthorized('Invalid API key');
    if (record.revoked_at) throw forbidden('API key has been revoked');
    ctx.state.auth = { teamId: record.team_id, keyId: record.id } satisfies AuthContext;
    deps.keyUsage.touch(record.id);
    return next();
  };
}

/** The media edge's shared secret (MEDIA_EDGE_SECRET, docs/api.md "Authentication") for the /internal/v1 API. */
export function authenticateMediaEdge(deps: AppDeps): Middleware {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('Authorization') || undefined);
    const expected = deps.config.MEDIA_EDGE_SECRET;
    if (!expected) throw unauthorized('Media edge access is not configured');
    if (!digestsEqual(hashSecret(token), hashSecret(expected))) throw unauthorized('Invalid media edge secret');
    return next();
  };
}
