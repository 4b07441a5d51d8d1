/**
 * Web calls (docs/web-calls.md): minting single-use
 * web sessions, redeeming their tokens (the media edge), and the direct create-web-call.
 *
 * A session takes one slot of the team's concurrency ceiling when it is minted (exact
 * under concurrency: tryAcquireSessionSlot locks the team row), passes it to its call at
 * redemption, and gives it back at expiry; the call gives it back when it ends.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowIdReusePolicy, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { webCallingConfigured, type Config } from '../config/index.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { releaseSlot, transferSessionSlotToCall, tryAcquireSessionSlot } from '../db/repositories/concurrencySlots.js';
import { findCallTraceparent } from '../db/repositories/callTraces.js';
import { findContactById, getOrCreateSharedWebContact } from '../db/repositories/contacts.js';
import { findTeamPhoneNumber } from '../db/repositories/phoneNumbers.js';
import { findTeamScript } from '../db/repositories/scripts.js';
import { findWebSessionById, findWebSessionByTokenHash, insertWebSession, markWebSessionExpired } from '../db/repositories/webSessions.js';
import { hashSecret } from '../domain/digests.js';
import { mintWebCallToken, WEB_CALL_CONNECT_MS } from '../domain/webCallTokens.js';
import type { Logger } from '../logging/logger.js';
import { TEAM_ID, WEB_SESSION_ID } from '../temporal/searchAttributes.js';
import { startWorkflowOnce } from '../temporal/startOnce.js';
import {
  redeemWebSessionUpdate,
  webSessionWorkflowId,
  WEB_SESSION_ALREADY_USED,
  WEB_SESSION_EXPIRED,
  WEB_SESSION_TTL_MS,
  WEB_SESSION_WORKFLOW_TYPE,
  type WebSessionRedemption,
  type WebSessionWorkflowInput,
} from '../../workflows/contracts.js';
import { CONTACT_NOT_FOUND, DID_NOT_FOUND, SCRIPT_NOT_FOUND, scheduleCall } from './calls.js';
import { conflict, gone, notConfigured, notFound, tooMany } from './errors.js';
import { normalizePhoneField } from './contacts.js';
import { linkObjectsToContact, validateObjectsMap, type ObjectsMap } from './objects.js';

export interface WebSessionServiceDeps {
  pool: Pool;
  temporal: Client;
  config: Config;
  logger?: Logger;
}

export const WEB_CALLING_NOT_CONFIGURED = 'The web-call path is not configured for this environment';
export const SESSION_TOKEN_NOT_FOUND = 'Session token not found';
export const SESSION_TOKEN_USED = 'Session token has already been used';
export const SESSION_TOKEN_EXPIRED = 'Session token has expired';
export const ceilingMessage = (maxConcurrent: number) => `Team is at its concurrent call limit of ${maxConcurrent}`;

/**
 * A session's slot row outlives the session by this much. The workflow frees it at expiry;
 * the row's own expiry only matters if the workflow is lost, and the margin keeps a
 * redemption admitted just before the deadline from finding its slot already reclaimed.
 */
export const SESSION_SLOT_GRACE_MS = 60_000;
/** The SIP headers of web calls (docs/web-calls.md); the browser forwards each one verbatim. */
export const WEB_CALL_HEADERS = {
  sessionToken: 'X-Session-Token',
  sessionId: 'X-Session-Id',
  callId: 'X-Call-Id',
  callToken: 'X-Call-Token',
  scriptId: 'X-Script-Id',
  contactId: 'X-Contact-Id',
  did: 'X-Did',
  participantIdentity: 'X-Participant-Identity',
} as const;

/** The connection bootstrap of every web-call response, read from configuration. */
export interface WebCallBootstrap {
  ws_url: string;
  sip_domain: string;
  sip_username: string;
  sip_password: string;
  target: string;
}

/** The bootstrap values, or not configured when the web-call path is not (docs/web-calls.md). */
export function webCallBootstrap(config: Config): WebCallBootstrap {
  if (!webCallingConfigured(config)) throw notConfigured(WEB_CALLING_NOT_CONFIGURED);
  const domain = config.MEDIA_EDGE_SIP_DOMAIN!;
  return {
    ws_url: config.MEDIA_EDGE_WS_URL!,
    sip_domain: domain,
    sip_username: config.MEDIA_EDGE_SIP_USERNAME,
    sip_password: config.MEDIA_EDGE_SIP_PASSWORD,
    target: config.MEDIA_EDGE_TARGET ?? `sip:agent@${domain}`,
  };
}

/** A new session token: `wst_` and 32 random bytes (base64url). Only its SHA-256 is stored. */
export function generateSessionToken(): string {
  return `wst_${randomBytes(32).toString('base64url')}`;
}

export const hashSessionToken = (token: string): string => hashSecret(token);

/**
 * The X-Call-Token of a create-web-call call (src/domain/webCallTokens.ts): valid until the
 * end of the call's connect window, an HMAC under MEDIA_EDGE_SECRET that the media edge
 * checks before it asks the service for the call's state.
 */
export function webCallToken(secret: string, callId: string, expiresAt: Date): string {
  return mintWebCallToken(secret, callId, expiresAt);
}

interface FixedChoices {
  scriptId: string;
  /** Undefined: the team's shared web contact. */
  contactId?: string;
  /** The team number (E.164) used as the AI-side identity, or null for a browser-only call. */
  didNumber: string | null;
  objects?: ObjectsMap;
}

interface ChoiceInput {
  teamId: string;
  scriptId: string;
  contactId?: string | null;
  did?: string | null;
  objects?: ObjectsMap | null;
}

/** Not found for a foreign or unknown script, contact or did; invalid for a bad did or objects map. Writes nothing. */
async function resolveChoices(deps: WebSessionServiceDeps, input: ChoiceInput, browserOnlyDid?: string): Promise<FixedChoices> {
  const did = input.did && input.did !== browserOnlyDid ? normalizePhoneField(input.did, deps.config.DEFAULT_PHONE_REGION, 'did') : null;
  const [script, contact, number] = await Promise.all([
    findTeamScript(deps.pool, input.teamId, input.scriptId),
    input.contactId ? findContactById(deps.pool, input.teamId, input.contactId) : Promise.resolve(undefined),
    did ? findTeamPhoneNumber(deps.pool, input.teamId, did) : Promise.resolve(undefined),
  ]);
  if (!script) throw notFound(SCRIPT_NOT_FOUND);
  if (input.contactId && !contact) throw notFound(CONTACT_NOT_FOUND);
  if (did && !number) throw notFound(DID_NOT_FOUND);
  const objects = input.objects && Object.keys(input.objects).length > 0 ? input.objects : undefined;
  if (objects) await validateObjectsMap(deps.pool, input.teamId, objects);
  return { scriptId: script.id, contactId: contact?.id, didNumber: did, objects };
}

function ceilingReached(maxConcurrent: number) {
  return tooMany(ceilingMessage(maxConcurrent), { max_concurrent: maxConcurrent });
}

export interface CreateWebSessionInput extends ChoiceInput {
  participantIdentity?: string | null;
  /** Makes a retried request (Idempotency-Key) reuse the session id. */
  sessionId?: string;
}

export interface CreatedWebSession extends WebCallBootstrap {
  success: true;
  session_id: string;
  session_token: string;
  expires_at: string;
  script_id: string;
  contact_id: string;
  did: string | null;
  max_concurrent: number;
  headers: Record<string, string>;
}

/**
 * create-web-session: checks the fixed choices (not found / invalid), takes a slot under
 * the team ceiling (too many at the ceiling), links the objects to the contact, stores the
 * session with its hashed token and starts its workflow. No call exists yet.
 */
export async function createWebSession(deps: WebSessionServiceDeps, input: CreateWebSessionInput): Promise<CreatedWebSession> {
  const bootstrap = webCallBootstrap(deps.config);
  const choices = await resolveChoices(deps, input);
  const sessionId = input.sessionId ?? randomUUID();
  const token = generateSessionToken();
  const mintedAt = Date.now();
  const expiresAt = new Date(mintedAt + WEB_SESSION_TTL_MS);

  const slot = await tryAcquireSessionSlot(deps.pool, input.teamId, sessionId, new Date(mintedAt + WEB_SESSION_TTL_MS + SESSION_SLOT_GRACE_MS));
  if (!slot.granted) throw ceilingReached(slot.maxConcurrent);

  let contactId: string;
  try {
    contactId = await withTransaction(deps.pool, async (tx) => {
      const id = choices.contactId ?? (await getOrCreateSharedWebContact(tx, input.teamId)).id;
      if (choices.objects) await linkObjectsToContact(tx, input.teamId, id, choices.objects);
      const stored = await insertWebSession(tx, {
        id: sessionId,
        teamId: input.teamId,
        tokenHash: hashSessionToken(token),
        scriptId: choices.scriptId,
        contactId: id,
        did: choices.didNumber,
        participantIdentity: input.participantIdentity ?? null,
        objects: choices.objects ?? null,
        expiresAt,
      });
      if (!stored) throw conflict('A web session with this id already exists');
      return id;
    });
  } catch (err) {
    await releaseSlot(deps.pool, sessionId).catch(() => {});
    throw err;
  }

  try {
    await startWebSessionWorkflow(deps, { sessionId, teamId: input.teamId, ttlMs: WEB_SESSION_TTL_MS });
  } catch (err) {
    // Without its workflow the token could never be redeemed: retire it and free the slot.
    deps.logger?.error({ err, sessionId }, 'web session workflow not started');
    await markWebSessionExpired(deps.pool, sessionId).catch(() => {});
    await releaseSlot(deps.pool, sessionId).catch(() => {});
    throw err;
  }

  const headers: Record<string, string> = {
    [WEB_CALL_HEADERS.sessionToken]: token,
    [WEB_CALL_HEADERS.sessionId]: sessionId,
    [WEB_CALL_HEADERS.scriptId]: choices.scriptId,
    [WEB_CALL_HEADERS.contactId]: contactId,
  };
  if (choices.didNumber) headers[WEB_CALL_HEADERS.did] = choices.didNumber;
  if (input.participantIdentity) headers[WEB_CALL_HEADERS.participantIdentity] = input.participantIdentity;

  return {
    success: true,
    session_id: sessionId,
    session_token: token,
    expires_at: expiresAt.toISOString(),
    script_id: choices.scriptId,
    contact_id: contactId,
    did: choices.didNumber,
    max_concurrent: slot.maxConcurrent,
    ...bootstrap,
    headers,
  };
}

/** Starts `web-session-<id>`; a second start of the same session joins the running one. */
export async function startWebSessionWorkflow(deps: Pick<WebSessionServiceDeps, 'temporal' | 'config'>, input: WebSessionWorkflowInput): Promise<void> {
  await startWorkflowOnce(deps.temporal, WEB_SESSION_WORKFLOW_TYPE, {
    workflowId: webSessionWorkflowId(input.sessionId),
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    // One workflow per session id, ever: a closed session is never minted again.
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    typedSearchAttributes: [
      { key: WEB_SESSION_ID, value: input.sessionId },
      { key: TEAM_ID, value: input.teamId },
    ],
  });
}

/** The ApplicationFailure type behind a failed Update, if any. */
function failureType(err: unknown): string | undefined {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ApplicationFailure) return e.type ?? undefined;
  }
  return undefined;
}

/**
 * POST /internal/v1/web-sessions/redeem: exactly one redemption of a minted token creates
 * the web call; an unknown token is not found, a used one a conflict, an expired one gone.
 * The session workflow's Update decides; the row only answers early for sessions already
 * settled.
 */
export async function redeemWebSession(deps: WebSessionServiceDeps, token: string): Promise<WebSessionRedemption & { traceparent?: string }> {
  const session = await findWebSessionByTokenHash(deps.pool, hashSessionToken(token));
  if (!session) throw notFound(SESSION_TOKEN_NOT_FOUND);
  const settled = (status: string) => {
    if (status === 'used') return conflict(SESSION_TOKEN_USED);
    if (status === 'expired') return gone(SESSION_TOKEN_EXPIRED);
    return undefined;
  };
  const early = settled(session.status);
  if (early) throw early;
  let redemption: WebSessionRedemption;
  try {
    redemption = await deps.temporal.workflow.getHandle(webSessionWorkflowId(session.id)).executeUpdate(redeemWebSessionUpdate);
  } catch (err) {
    const type = failureType(err);
    if (type === WEB_SESSION_ALREADY_USED) throw conflict(SESSION_TOKEN_USED);
    if (type === WEB_SESSION_EXPIRED) throw gone(SESSION_TOKEN_EXPIRED);
    if (err instanceof WorkflowUpdateFailedError) throw err;
    // The workflow closed between the read and the Update: it settled the row first.
    const now = await findWebSessionById(deps.pool, session.id);
    throw settled(now?.status ?? '') ?? err;
  }
  // The call's trace, for the media edge's requests about it (docs/observability.md, "Traces").
  const traceparent = await findCallTraceparent(deps.pool, redemption.callId);
  return traceparent ? { ...redemption, traceparent } : redemption;
}

export interface CreateWebCallInput extends ChoiceInput {
  participantIdentity?: string | null;
  /** Makes a retried request (Idempotency-Key) reuse the call id. */
  callId?: string;
}

export interface CreatedWebCall extends WebCallBootstrap {
  success: true;
  call_id: string;
  contact_id: string;
  status: 'scheduled';
  script_id: string;
  did: string;
  headers: Record<string, string>;
}

/** create-web-call's default did: a browser-only call. */
export const BROWSER_ONLY_DID = 'web';

/**
 * create-web-call, the direct path: the web call is created now (status scheduled) under
 * a slot of the team ceiling (too many at the ceiling, as create-web-session) and ends failed /
 * not_connected unless the browser connects within two minutes.
 */
export async function createWebCall(deps: WebSessionServiceDeps, input: CreateWebCallInput): Promise<CreatedWebCall> {
  const bootstrap = webCallBootstrap(deps.config);
  const choices = await resolveChoices(deps, input, BROWSER_ONLY_DID);
  const callId = input.callId ?? randomUUID();

  // Held as a session-kind slot keyed by the call id until the call row exists, then passed to it.
  const connectBy = new Date(Date.now() + WEB_CALL_CONNECT_MS);
  const slot = await tryAcquireSessionSlot(deps.pool, input.teamId, callId, new Date(connectBy.getTime() + SESSION_SLOT_GRACE_MS));
  if (!slot.granted) throw ceilingReached(slot.maxConcurrent);
  let contactId: string;
  try {
    const contact = choices.contactId ?? (await getOrCreateSharedWebContact(deps.pool, input.teamId)).id;
    const scheduled = await scheduleCall(deps, {
      teamId: input.teamId,
      fromNumber: choices.didNumber,
      scriptId: choices.scriptId,
      contact: { id: contact },
      objects: choices.objects,
      callId,
      type: 'web',
      participantIdentity: input.participantIdentity ?? undefined,
    });
    contactId = scheduled.contactId;
  } catch (err) {
    await releaseSlot(deps.pool, callId).catch(() => {});
    throw err;
  }
  await transferSessionSlotToCall(deps.pool, callId, callId);

  const did = choices.didNumber ?? BROWSER_ONLY_DID;
  const headers: Record<string, string> = { [WEB_CALL_HEADERS.callId]: callId };
  if (deps.config.MEDIA_EDGE_SECRET) headers[WEB_CALL_HEADERS.callToken] = webCallToken(deps.config.MEDIA_EDGE_SECRET, callId, connectBy);
  headers[WEB_CALL_HEADERS.scriptId] = choices.scriptId;
  headers[WEB_CALL_HEADERS.contactId] = contactId;
  headers[WEB_CALL_HEADERS.did] = did;
  if (input.participantIdentity) headers[WEB_CALL_HEADERS.participantIdentity] = input.participantIdentity;

  return { success: true, call_id: callId, contact_id: contactId, status: 'scheduled', script_id: choices.scriptId, did, ...bootstrap, headers };
}
