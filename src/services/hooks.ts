// Webhook hooks (docs/webhooks.md): accepting a request on
// POST /api/v1/hooks/{token}, creating / listing / revoking hooks for the operator CLI, and
// the automations a hook run performs.
import { createHash, randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { digestsEqual, hashSecret } from '../domain/apiKeys.js';
import type { HookAutomation, MappedContact } from '../domain/hookAutomation.js';
import { webhookSignatureValid } from '../domain/hookSignature.js';
import { generateHookToken, hookPath } from '../domain/hookTokens.js';
import { withTransaction, type Pool, type Queryable } from '../db/pool.js';
import { upsertContactByPhone } from '../db/repositories/contacts.js';
import { claimHookDelivery, markHookDeliveryStarted } from '../db/repositories/hookDeliveries.js';
import { addExistingContactsToList, lockLiveList } from '../db/repositories/lists.js';
import { findHookByTokenHash, insertHook, listTeamHooks, revokeHook, type HookRecord } from '../db/repositories/hooks.js';
import type { Logger } from '../logging/logger.js';
import { HOOK_ID, TEAM_ID } from '../temporal/searchAttributes.js';
import { scheduleCall, type CallServiceDeps } from './calls.js';
import { invalid, notFound, unauthenticated, UseCaseError } from './errors.js';
import { notifyListContactsAdded } from './lists.js';
import {
  HOOK_CALL_REJECTED_FAILURE,
  HOOK_LIST_NOT_FOUND_FAILURE,
  HOOK_RUN_WORKFLOW_TYPE,
  hookRunWorkflowId,
  type HookRunInput,
} from '../../workflows/contracts.js';

export const WEBHOOK_NOT_FOUND = 'Webhook not found';
export const INVALID_WEBHOOK_SIGNATURE = 'Invalid webhook signature';
export const INVALID_DELIVERY_ID = 'X-Webhook-Id must be 1 to 255 printable ASCII characters';
/** X-Webhook-Id: the sender's delivery id (docs/webhooks.md "Idempotent delivery: X-Webhook-Id"). */
const DELIVERY_ID_RE = /^[\x20-\x7e]{1,255}$/;

export interface HookServiceDeps {
  config: Pick<Config, 'DEFAULT_PHONE_REGION' | 'TEMPORAL_TASK_QUEUE'>;
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
}

export interface AcceptedHookRequest {
  runId: string;
  /** The X-Webhook-Id was seen on this hook within 24 hours: no new run was started. */
  duplicate: boolean;
  hookId: string;
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
 * Authenticates a webhook request (token, then signature when the hook has a secret),
 * checks and claims its X-Webhook-Id and starts the run's workflow. A duplicate delivery
 * answers the first run's id. Until the first request has confirmed the start, a
 * duplicate starts the same workflow id too (USE_EXISTING, REJECT_DUPLICATE: a no-op if it
 * exists), which completes a first request that died between the claim and the start.
 */
export async function acceptHookRequest(deps: HookServiceDeps, request: HookRequest): Promise<AcceptedHookRequest> {
  const hook = await authenticateHookToken(deps.pool, request.token);
  if (hook.secret !== null && !webhookSignatureValid(hook.secret, request.rawBody, request.signature)) {
    throw unauthenticated(INVALID_WEBHOOK_SIGNATURE);
  }
  if (request.deliveryId !== undefined && !DELIVERY_ID_RE.test(request.deliveryId)) throw invalid(INVALID_DELIVERY_ID);
  let claim = { runId: randomUUID() as string, duplicate: false, started: false };
  if (request.deliveryId !== undefined) {
    claim = await claimHookDelivery(deps.pool, { hookId: hook.id, deliveryId: request.deliveryId, runId: claim.runId });
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
    deliveryId: request.deliveryId ?? null,
    receivedAt: new Date().toISOString(),
  };
  try {
    await deps.temporal.workflow.start(HOOK_RUN_WORKFLOW_TYPE, {
      taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
      workflowId: hookRunWorkflowId(runId),
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [
        { key: HOOK_ID, value: hook.id },
        { key: TEAM_ID, value: hook.team_id },
      ],
    });
  } catch (err) {
    // The run already finished: this is a duplicate delivery and must not run again.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
  if (request.deliveryId !== undefined) await markHookDeliveryStarted(deps.pool, hook.id, request.deliveryId, runId);
  return { runId, duplicate, hookId: hook.id };
}

export interface CreatedHook {
  id: string;
  /** Shown once; only its hash is stored. */
  token: string;
  path: string;
  secret: string | null;
  automation: HookAutomation;
}

/** A new hook for a team (ownership of script, number or list checked by the caller). */
export async function createHook(db: Queryable, hook: { teamId: string; secret: string | null; automation: HookAutomation }): Promise<CreatedHook> {
  const { token, hash } = generateHookToken();
  const record = await insertHook(db, { teamId: hook.teamId, tokenHash: hash, secret: hook.secret, automation: hook.automation });
  return { id: record.id, token, path: hookPath(token), secret: record.secret, automation: record.automation };
}

/** What an operator may see of a hook: never its token (not stored) nor its secret. */
export interface HookSummary {
  id: string;
  automation: HookAutomation;
  signed: boolean;
  created_at: string;
  revoked_at: string | null;
}

export function hookSummary(hook: HookRecord): HookSummary {
  return {
    id: hook.id,
    automation: hook.automation,
    signed: hook.secret !== null,
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

/**
 * A UUID determined by `name` (SHA-256, shaped as an RFC 9562 version-8 UUID): the same
 * run always gets the same call id, so a retried activity never makes a second call.
 */
export function deterministicUuid(name: string): string {
  const bytes = createHash('sha256').update(name).digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x80;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The call a schedule_call run makes. */
export const hookRunCallId = (runId: string) => deterministicUuid(`hook-run-call:${runId}`);

export interface HookContactAdded {
  contactId: string;
  contactCreated: boolean;
  /** False when the contact was already in the list. */
  added: boolean;
}

/**
 * add_to_list: upserts the contact (fields sent overwrite stored ones, as create-phone-call
 * does) and adds it to the list, in one transaction that holds the list against a
 * concurrent delete, then tells the list's listeners (a batch's intake). Idempotent: a
 * retry finds the contact and the membership in place.
 */
export async function addHookContactToList(
  deps: { pool: Pool; logger?: Logger },
  run: { teamId: string; listId: string; contact: MappedContact },
): Promise<HookContactAdded> {
  const result = await withTransaction(deps.pool, async (db) => {
    if (!(await lockLiveList(db, run.teamId, run.listId))) {
      throw new UseCaseError('not_found', `List ${run.listId} of this hook no longer exists; the contact was not added`, {}, HOOK_LIST_NOT_FOUND_FAILURE);
    }
    const { contact, created } = await upsertContactByPhone(db, run.teamId, run.contact);
    const added = await addExistingContactsToList(db, run.teamId, run.listId, [contact.id]);
    return { contactId: contact.id, contactCreated: created, addedContactIds: added.addedContactIds };
  });
  await notifyListContactsAdded({ teamId: run.teamId, listId: run.listId, contactIds: result.addedContactIds }, deps.logger);
  return { contactId: result.contactId, contactCreated: result.contactCreated, added: result.addedContactIds.length > 0 };
}

export interface HookCallScheduled {
  callId: string;
  contactId: string;
}

/**
 * schedule_call: the create-phone-call path (scheduleCall: ownership checks, contact upsert,
 * call row, call workflow) with a call id derived from the run, so a retried activity
 * finds the same call instead of making a second one. A refusal of that path (script or
 * number no longer the team's) is permanent.
 */
export async function scheduleHookCall(
  deps: CallServiceDeps,
  run: { runId: string; teamId: string; scriptId: string; fromNumber: string; contact: MappedContact },
): Promise<HookCallScheduled> {
  try {
    const call = await scheduleCall(deps, {
      teamId: run.teamId,
      scriptId: run.scriptId,
      fromNumber: run.fromNumber,
      contact: run.contact,
      callId: hookRunCallId(run.runId),
    });
    return { callId: call.callId, contactId: call.contactId };
  } catch (err) {
    if (err instanceof UseCaseError) {
      throw new UseCaseError(err.kind, `The call could not be scheduled: ${err.message}`, {}, HOOK_CALL_REJECTED_FAILURE);
    }
    throw err;
  }
}
