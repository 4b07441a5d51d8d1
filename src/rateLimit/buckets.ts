// The nine rate-limit buckets (docs/rate-limits.md): which of them a request meets,
// their store keys and their limits. Pure: no I/O, no clock.
import { createHash } from 'node:crypto';
import type { Config } from '../config/index.js';

/** Every bucket is a rolling window of this length: 60 seconds. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

export type BucketName =
  | 'ip'
  | 'ipEndpoint'
  | 'ipEndpointWrite'
  | 'tokenEndpoint'
  | 'ipWebhook'
  | 'key'
  | 'keyWrite'
  | 'team'
  | 'teamWrite';

export type BucketLimits = Record<BucketName, number>;

/** One bucket a request is checked against: a store key and its limit per window. */
export interface BucketCheck {
  name: BucketName;
  key: string;
  limit: number;
}

/** Who may call a route, as in src/api/route.ts RouteAuth. */
export type LimitedAuth = 'apiKey' | 'mediaEdge' | 'hookToken' | 'public';

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** POST, PUT, PATCH and DELETE count in the write buckets; GET, HEAD and OPTIONS do not. */
export function isWriteMethod(method: string): boolean {
  return WRITE_METHODS.has(method.toUpperCase());
}

/** The configured limits (defaults: the numbers of docs/rate-limits.md). */
export function bucketLimits(config: Config): BucketLimits {
  return {
    ip: config.RATE_LIMIT_PER_IP,
    ipEndpoint: config.RATE_LIMIT_PER_IP_ENDPOINT,
    ipEndpointWrite: config.RATE_LIMIT_PER_IP_ENDPOINT_WRITES,
    tokenEndpoint: config.RATE_LIMIT_PER_TOKEN_ENDPOINT,
    ipWebhook: config.RATE_LIMIT_PER_IP_WEBHOOK,
    key: config.RATE_LIMIT_PER_KEY,
    keyWrite: config.RATE_LIMIT_PER_KEY_WRITES,
    team: config.RATE_LIMIT_PER_TEAM,
    teamWrite: config.RATE_LIMIT_PER_TEAM_WRITES,
  };
}

/** The bearer token's bucket identity: a hash, so neither Redis nor memory holds a usable key. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

export interface PreAuthRequest {
  auth: LimitedAuth;
  method: string;
  /** "METHOD /route/:template" (endpointKey of src/api/route.ts). */
  endpoint: string;
  ip: string;
  /** tokenHash() of the bearer token, when the Authorization header carries one. */
  tokenHash?: string;
}

/**
 * The buckets checked before authentication. API-key routes meet all four IP/token
 * buckets (the token one only when a bearer token is sent); public routes (health,
 * OpenAPI) only the IP ones; webhook triggers only per-IP and per-IP-webhook; the
 * internal media-edge API none (it is not public and carries every call's events).
 */
export function preAuthBuckets(limits: BucketLimits, req: PreAuthRequest): BucketCheck[] {
  if (req.auth === 'mediaEdge') return [];
  const ip: BucketCheck = { name: 'ip', key: `ip:${req.ip}`, limit: limits.ip };
  if (req.auth === 'hookToken') return [ip, { name: 'ipWebhook', key: `hook:${req.ip}`, limit: limits.ipWebhook }];
  const buckets: BucketCheck[] = [ip, { name: 'ipEndpoint', key: `ipe:${req.ip}:${req.endpoint}`, limit: limits.ipEndpoint }];
  if (isWriteMethod(req.method)) buckets.push({ name: 'ipEndpointWrite', key: `ipew:${req.ip}:${req.endpoint}`, limit: limits.ipEndpointWrite });
  if (req.auth === 'apiKey' && req.tokenHash) {
    buckets.push({ name: 'tokenEndpoint', key: `tok:${req.tokenHash}:${req.endpoint}`, limit: limits.tokenEndpoint });
  }
  return buckets;
}

export interface PostAuthRequest {
  method: string;
  keyId: string;
  teamId: string;
}

/** The buckets checked once the API key is known: per key and per team, all and writes. */
export function postAuthBuckets(limits: BucketLimits, req: PostAuthRequest): BucketCheck[] {
  const write = isWriteMethod(req.method);
  const buckets: BucketCheck[] = [{ name: 'key', key: `key:${req.keyId}`, limit: limits.key }];
  if (write) buckets.push({ name: 'keyWrite', key: `keyw:${req.keyId}`, limit: limits.keyWrite });
  buckets.push({ name: 'team', key: `team:${req.teamId}`, limit: limits.team });
  if (write) buckets.push({ name: 'teamWrite', key: `teamw:${req.teamId}`, limit: limits.teamWrite });
  return buckets;
}
