// Webhook hooks (docs/webhooks.md): accepting a request on
// POST /api/v1/hooks/{token}, and creating / listing / revoking hooks for the operator CLI.
// The automations a hook run performs are in hookAutomations.ts.
import { randomUUID } from 'node:crypto';
import { WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import { secretBox, type Config } from '../config/index.js';
import { digestsEqual, hashSecret } from '../domain/digests.js';
import type { HookAutomation } from '../domain/hookAutomation.js';
import { webhookSignatureValid, type HookSignatureScheme } from '../domain/hookSignature.js';
import { generateHookToken, hookPath } from '../domain/hookTokens.js';
import { generateWebhookSecret, isWebhookSecret, verifyStandardWebhook, type StandardWebhookHeaders } from '../domain/webhookSignatures.js';
import type { Pool, Queryable } from '../db/pool.js';
import { claimHookDelivery, markHookDeliveryStarted } from '../db/repositories/hookDeliveries.js';
import { findHookByTokenHash, insertHook, listTeamHooks, revokeHook, type HookRecord } from '../db/repositories/hooks.js';
import type { SecretBox } from '../secrets/secretBox.js';
import { HOOK_ID, TEAM_ID } from '../temporal/searchAttributes.js';
import { startWorkflowOnce } from '../temporal/startOnce.js';
import { invalid, notFound, unauthenticated } from './errors.js';
import { HOOK_RUN_WORKFLOW_TYPE, hookRunWorkflowId, type HookRunInput } from '../../workflows/contracts.js';

export const WEBHOOK_NOT_FOUND = 'Webhook not found';
export const INVALID_WEBHOOK_SIGNATURE = 'Invalid webhook signature';
export const INVALID_DELIVERY_ID = 'X-Webhook-Id must be 1 to 255 printable ASCII characters';
/** X-Webhook-Id: the sender's delivery id (docs/webhooks.md "Idempotent delivery: X-Webhook-Id"). */
const DELIVERY_ID_RE = /^[\x20-\x7e]{1,255}$/;
// Standard Webhooks (docs/webhooks.md "Standard Webhooks (timestamped)").
export const MISSING_STANDARD_WEBHOOK_HEADERS = 'Missing Standard Webhooks headers: webhook-id, webhook-timestamp and webhook-signature are required';
export const MALFORMED_WEBHOOK_TIMESTAMP = 'webhook-timestamp must be the signing time in Unix seconds';
export const staleWebhookTimestamp = (toleranceSeconds: number) => `webhook-timestamp is more than ${toleranceSeconds} seconds old: the request is stale or replayed`;
export const futureWebhookTimestamp = (toleranceSeconds: number) => `webhook-timestamp is more than ${toleranceSeconds} seconds in the future: check the sender's clock`;
export const INVALID_WEBHOOK_MESSAGE_ID = 'webhook-id must be 1 to 255 printable ASCII characters other than "."';
export const INVALID_STANDARD_WEBHOOKS_SECRET = 'A Standard Webhooks secret must be whsec_ followed by the base64 of 24 to 64 bytes';
/** webhook-id: also the delivery id; no "." (the signed content joins id, timestamp and body with "."). */
const MESSAGE_ID_RE = /^[\x20-\x2d\x2f-\x7e]{1,255}$/;

export interface HookServiceDeps {
  config: Pick<Config, 'DEFAULT_PHONE_REGION' | 'TEMPORAL_TASK_QUEUE' | 'SECRETS_ENCRYPTION_KEY' | 'SECRETS_ENCRYPTION_KEY_PREVIOUS' | 'HOOK_SIGNATURE_TOLERANCE_SECONDS'>;
  pool: Pool;
  temporal: Client;
}

export interface HookRequest {
  /** The token from the URL path. */
  token: string;
  /** The exact bytes received: what the signature covers. */
  rawBody: Buffer;
  /** The parsed JSON body. */
  body: unknown;
  /** X-Webhook-Signature, when sent. */
  signature?: string;
  /** X-Webhook-Id, when sent. */
  deliveryId?: string;
  /** webhook-id, webhook-timestamp and webhook-signature, as sent: read by hooks signed with Standard Webhooks. */
  standardWebhook?: StandardWebhookHeaders;
}

export interface AcceptedHookRequest {
  runId: string;
  /** The X-Webhook-Id was seen on this hook within 24 hours: no new run was started. */
  duplicate: boolean;
  hookId: string;
}

/** What a hook's signing secret is sealed to in the database (SecretBox): the hook, named by its token's hash. */
export function hookSecretContext(tokenHash: string): string {
  return `hook:${tokenHash}`;
}

/** The hook's signing secret in clear, or null for an unsigned hook; SecretUnreadable under a wrong key. */
export function hookSigningSecret(hook: Pick<HookRecord, 'secret' | 'token_hash'>, box: SecretBox): string | null {
  return hook.secret === null ? null : box.open(hook.secret, hookSecretContext(hook.token_hash));
}

/**
 * The live hook for a token, or not found. The lookup is by the token's SHA-256, so response time
 * does not depend on how much of a guessed token matches; the stored hash is then compared
 * in constant time as well.
 */
export async function authenticateHookToken(db: Queryable, token: string): Promise<HookRecord> {
  const tokenHash = hashSecret(token);
  const hook = await findHookByTokenHash(db, tokenHash);
  if (!hook || !digestsEqual(hook.token_hash, tokenHash) || hook.revoked_at) throw notFound(WEBHOOK_NOT_FOUND);
  return hook;
}

/**
 * The signature check of a signed hook, in the hook's scheme; answers the request's delivery
 * id: X-Webhook-Id (unsigned) for the default scheme, the signed webhook-id for Standard
 * Webhooks, whose stale or future timestamps are refused here (replays).
 */
function verifyHookSignature(deps: HookServiceDeps, hook: HookRecord, secret: string, request: HookRequest): string | undefined {
  if (hook.signature_scheme !== 'standard-webhooks') {
    if (!webhookSignatureValid(secret, request.rawBody, request.signature)) throw unauthenticated(INVALID_WEBHOOK_SIGNATURE);
    return request.deliveryId;
  }
  const tolerance = deps.config.HOOK_SIGNATURE_TOLERANCE_SECONDS;
  const verdict = verifyStandardWebhook(secret, request.standardWebhook ?? {}, request.rawBody, {
    nowSeconds: Math.floor(Date.now() / 1000),
    toleranceSeconds: tolerance,
  });
  if (verdict.ok) {
    if (!MESSAGE_ID_RE.test(verdict.id)) throw invalid(INVALID_WEBHOOK_MESSAGE_ID);
    return verdict.id;
  }
  switch (verdict.problem) {
    case 'missing_headers':
      throw unauthenticated(MISSING_STANDARD_WEBHOOK_HEADERS);
    case 'malformed_timestamp':
      throw unauthenticated(MALFORMED_WEBHOOK_TIMESTAMP);
    case 'too_old':
      throw unauthenticated(staleWebhookTimestamp(tolerance));
    case 'too_new':
      throw unauthenticated(futureWebhookTimestamp(tolerance));
    default:
      throw unauthenticated(INVALID_WEBHOOK_SIGNATURE);
  }
}

/**
 * Authenticates a webhook request (token, then signature when the hook has a secret),
 * checks and claims its delivery id and starts the run's workflow. A duplicate delivery
 * answers the first run's id. Until the first request has confirmed the start, a
 * duplicate starts the same workflow id too (USE_EXISTING, REJECT_DUPLICATE: a no-op if it
 * exists), which completes a first request that died between the claim and the start.
 */
export async function acceptHookRequest(deps: HookServiceDeps, request: HookRequest): Promise<AcceptedHookRequest> {
  const hook = await authenticateHookToken(deps.pool, request.token);
  const signingSecret = hookSigningSecret(hook, secretBox(deps.config));
  const deliveryId = signingSecret === null ? request.deliveryId : verifyHookSignature(deps, hook, signingSecret, request);
  if (deliveryId !== undefined && !DELIVERY_ID_RE.test(deliveryId)) throw invalid(INVALID_DELIVERY_ID);
  let claim = { runId: randomUUID() as string, duplicate: false, started: false };
  if (deliveryId !== undefined) {
    claim = await claimHookDelivery(deps.pool, { hookId: hook.id, deliveryId, runId: claim.runId });
  }
  const { runId, duplicate } = claim;
  // A duplicate of a delivery whose run is known to exist asks Temporal nothing: that
  // holds even once Temporal's retention has forgotten the finished run.
  if (claim.started) return { runId, duplicate, hookId: hook.id };
  const input: HookRunInput = {
    runId,
    hookId: hook.id,
    teamId: hook.team_id,
    automation: hook.automation,
    body: request.body,
    phoneRegion: deps.config.DEFAULT_PHONE_REGION,
    deliveryId: deliveryId ?? null,
    receivedAt: new Date().toISOString(),
  };
  await startWorkflowOnce(deps.temporal, HOOK_RUN_WORKFLOW_TYPE, {
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    workflowId: hookRunWorkflowId(runId),
    args: [input],
    // A run that already finished is a duplicate delivery and must not run again.
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    typedSearchAttributes: [
      { key: HOOK_ID, value: hook.id },
      { key: TEAM_ID, value: hook.team_id },
    ],
  });
  if (deliveryId !== undefined) await markHookDeliveryStarted(deps.pool, hook.id, deliveryId, runId);
  return { runId, duplicate, hookId: hook.id };
}

export interface CreatedHook {
  id: string;
  /** Shown once; only its hash is stored. */
  token: string;
  path: string;
  secret: string | null;
  automation: HookAutomation;
  signatureScheme: HookSignatureScheme;
}

export interface NewHook {
  teamId: string;
  /**
   * The signing secret in clear (stored sealed), or null for an unsigned hook. With
   * Standard Webhooks it must be a whsec_ secret, and null means one is generated.
   */
  secret: string | null;
  automation: HookAutomation;
  /** How requests are signed (default x-webhook-signature). */
  signatureScheme?: HookSignatureScheme;
}

/**
 * A new hook for a team (ownership of script, number or list checked by the caller). A
 * signed hook's secret is stored sealed by `secrets` (secretBox(config)), which only an
 * unsigned hook may omit.
 */
export async function createHook(db: Queryable, hook: NewHook, secrets?: SecretBox): Promise<CreatedHook> {
  const signatureScheme = hook.signatureScheme ?? 'x-webhook-signature';
  let secret = hook.secret;
  if (signatureScheme === 'standard-webhooks') {
    secret ??= generateWebhookSecret();
    if (!isWebhookSecret(secret)) throw invalid(INVALID_STANDARD_WEBHOOKS_SECRET);
  }
  if (secret !== null && !secrets) throw new Error('createHook: a signed hook needs the SecretBox that seals its secret');
  const { token, hash } = generateHookToken();
  const sealed = secret === null ? null : secrets!.seal(secret, hookSecretContext(hash));
  const record = await insertHook(db, { teamId: hook.teamId, tokenHash: hash, secret: sealed, automation: hook.automation, signatureScheme });
  return { id: record.id, token, path: hookPath(token), secret, automation: record.automation, signatureScheme: record.signature_scheme };
}

/** What an operator may see of a hook: never its token (not stored) nor its secret. */
export interface HookSummary {
  id: string;
  automation: HookAutomation;
  signed: boolean;
  /** How requests are signed; null for an unsigned hook. */
  signature: HookSignatureScheme | null;
  created_at: string;
  revoked_at: string | null;
}

export function hookSummary(hook: HookRecord): HookSummary {
  return {
    id: hook.id,
    automation: hook.automation,
    signed: hook.secret !== null,
    signature: hook.secret === null ? null : hook.signature_scheme,
    created_at: hook.created_at.toISOString(),
    revoked_at: hook.revoked_at ? hook.revoked_at.toISOString() : null,
  };
}

export async function listHooks(db: Queryable, teamId: string): Promise<HookSummary[]> {
  return (await listTeamHooks(db, teamId)).map(hookSummary);
}

/** Revokes a hook: the next request on its URL answers 404. Undefined when there is no such hook. */
export async function revokeHookById(db: Queryable, hookId: string): Promise<HookSummary | undefined> {
  const hook = await revokeHook(db, hookId);
  return hook ? hookSummary(hook) : undefined;
}
