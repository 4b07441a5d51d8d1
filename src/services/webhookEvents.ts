/**
 * Recording event webhooks where their cause is recorded, and starting their deliveries
 * (docs/event-webhooks.md, "Durability").
 *
 * A change that fires an event runs in one transaction with the event's insert
 * (withWebhookEvents): the event row, with its id derived from the entity and the type, and
 * one delivery row per subscribed endpoint. After the commit, each new delivery's workflow
 * `webhook-delivery-<id>` is started off the caller's path (a call never waits for it). If
 * that start is lost (the process dies, Temporal is down), the sweeper workflow starts it
 * later from the row: the same workflow id, so never twice.
 */
import { WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../db/pool.js';
import type { BatchRecord } from '../db/repositories/batches.js';
import type { CallRecord } from '../db/repositories/calls.js';
import {
  failDelivery,
  findDeliveriesWithoutWorkflow,
  findStaleDeliveries,
  insertWebhookEvent,
  markDeliveryWorkflowsStarted,
  type DeliveryToStart,
} from '../db/repositories/webhookDeliveries.js';
import type { WebSessionRecord } from '../db/repositories/webSessions.js';
import { webhookEventId, type WebhookEventType } from '../domain/webhookEvents.js';
import type { Logger } from '../logging/logger.js';
import { CALL_ID, TEAM_ID, WEBHOOK_ENDPOINT_ID, WEBHOOK_EVENT_TYPE } from '../temporal/searchAttributes.js';
import { startWorkflowOnce } from '../temporal/startOnce.js';
import {
  WEBHOOK_DELIVERY_SWEEPER_WORKFLOW_ID,
  WEBHOOK_DELIVERY_SWEEPER_WORKFLOW_TYPE,
  WEBHOOK_DELIVERY_WORKFLOW_TYPE,
  webhookDeliveryWorkflowId,
  webhookTaskQueue,
  type BatchProgress,
  type WebhookDeliveryInput,
} from '../../workflows/contracts.js';
import { callResultView } from './callViews.js';

export interface WebhookDispatchDeps {
  pool: Pool;
  temporal: Client;
  config: Pick<Config, 'TEMPORAL_TASK_QUEUE'>;
  logger?: Logger;
}

/** An event before it is recorded: its payload is `{ id, type, created_at, team_id, data }`. */
export interface WebhookEvent {
  id: string;
  type: WebhookEventType;
  teamId: string;
  callId: string | null;
  createdAt: Date;
  data: Record<string, unknown>;
}

function event(type: WebhookEventType, entityId: string, teamId: string, createdAt: Date, data: Record<string, unknown>, callId: string | null = null): WebhookEvent {
  return { id: webhookEventId(type, entityId), type, teamId, callId, createdAt, data };
}

/** A call.* event; `data.call` is the get-call-result shape of the row as the change left it. */
export function callEvent(type: 'call.scheduled' | 'call.started' | 'call.ended' | 'call.analyzed', call: CallRecord): WebhookEvent {
  return event(type, call.id, call.team_id, type === 'call.scheduled' ? call.created_at : call.modified_at, { call: callResultView(call) }, call.id);
}

/** web_session.redeemed or web_session.expired, from the session row as the change left it. */
export function webSessionEvent(type: 'web_session.redeemed' | 'web_session.expired', session: WebSessionRecord): WebhookEvent {
  const at = (type === 'web_session.redeemed' ? session.used_at : session.expired_at) ?? new Date();
  return event(type, session.id, session.team_id, at, {
    web_session: {
      id: session.id,
      script_id: session.script_id,
      contact_id: session.contact_id,
      call_id: session.call_id,
      expires_at: session.expires_at.toISOString(),
      status: session.status,
    },
  });
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** batch.completed: the batch and its progress. */
export function batchCompletedEvent(batch: BatchRecord, progress: BatchProgress): WebhookEvent {
  return event('batch.completed', batch.id, batch.team_id, batch.ended_at ?? new Date(), {
    batch: {
      id: batch.id,
      team_id: batch.team_id,
      list_id: batch.list_id,
      script_id: batch.script_id,
      from_number: batch.from_number,
      status: batch.status,
      end_reason: batch.end_reason,
      start_at: batch.start_at.toISOString(),
      started_at: iso(batch.started_at),
      ended_at: iso(batch.ended_at),
      created_at: batch.created_at.toISOString(),
      progress,
    },
  });
}

/** hook_run.failed: the run of a webhook trigger that ended failed, with its reason. */
export function hookRunFailedEvent(run: { runId: string; hookId: string; teamId: string; error: string }): WebhookEvent {
  return event('hook_run.failed', run.runId, run.teamId, new Date(), { hook_run: { id: run.runId, hook_id: run.hookId, status: 'failed', error: run.error } });
}

/** The body every delivery of the event sends. */
export function webhookPayload(e: WebhookEvent): string {
  return JSON.stringify({ id: e.id, type: e.type, created_at: e.createdAt.toISOString(), team_id: e.teamId, data: e.data });
}

/** Records the events in `tx` (each once, whatever calls this again); returns the deliveries made now. */
export async function recordWebhookEvents(tx: Queryable, events: WebhookEvent[]): Promise<DeliveryToStart[]> {
  const deliveries: DeliveryToStart[] = [];
  for (const e of events) {
    deliveries.push(...(await insertWebhookEvent(tx, { id: e.id, teamId: e.teamId, type: e.type, callId: e.callId, payload: webhookPayload(e), createdAt: e.createdAt })));
  }
  return deliveries;
}

/**
 * Runs `change` in one transaction together with the events it reports, then starts their
 * deliveries in the background. Returns what `change` returned.
 */
export async function withWebhookEvents<T>(deps: WebhookDispatchDeps, change: (tx: PoolClient) => Promise<{ result: T; events: WebhookEvent[] }>): Promise<T> {
  const { result, deliveries } = await withTransaction(deps.pool, async (tx) => {
    const changed = await change(tx);
    return { result: changed.result, deliveries: changed.events.length ? await recordWebhookEvents(tx, changed.events) : [] };
  });
  dispatchWebhookDeliveries(deps, deliveries);
  return result;
}

/** Starts the deliveries' workflows without making the caller wait; the sweeper starts any that fail here. */
export function dispatchWebhookDeliveries(deps: WebhookDispatchDeps, deliveries: DeliveryToStart[]): void {
  if (deliveries.length === 0) return;
  void startWebhookDeliveries(deps, deliveries).catch((err) => deps.logger?.warn({ err }, 'webhook deliveries not started yet; the sweeper will start them'));
}

/** Starts the workflow of each delivery (a no-op for one that exists) and marks the rows. Returns how many started. */
export async function startWebhookDeliveries(deps: WebhookDispatchDeps, deliveries: DeliveryToStart[]): Promise<number> {
  const results = await Promise.allSettled(deliveries.map((d) => startDeliveryWorkflow(deps, d)));
  const started = deliveries.filter((_, i) => results[i].status === 'fulfilled').map((d) => d.id);
  await markDeliveryWorkflowsStarted(deps.pool, started);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
  return started.length;
}

/**
 * Delivery workflow starts in flight at once from this process: a burst of events (a batch
 * ending, a team with many endpoints) queues here instead of swamping Temporal with starts.
 */
const MAX_STARTS_IN_FLIGHT = 32;
let startsInFlight = 0;
const waitingForStart: (() => void)[] = [];

async function startSlot(): Promise<void> {
  if (startsInFlight < MAX_STARTS_IN_FLIGHT) {
    startsInFlight += 1;
    return;
  }
  // The slot is handed over by the start that finishes (releaseStartSlot).
  await new Promise<void>((resolve) => waitingForStart.push(resolve));
}

function releaseStartSlot(): void {
  const next = waitingForStart.shift();
  if (next) next();
  else startsInFlight -= 1;
}

async function startDeliveryWorkflow(deps: WebhookDispatchDeps, d: DeliveryToStart): Promise<void> {
  await startSlot();
  try {
    await startDeliveryWorkflowNow(deps, d);
  } finally {
    releaseStartSlot();
  }
}

async function startDeliveryWorkflowNow(deps: WebhookDispatchDeps, d: DeliveryToStart): Promise<void> {
  const input: WebhookDeliveryInput = { deliveryId: d.id, teamId: d.team_id, endpointId: d.endpoint_id, eventId: d.event_id, eventType: d.event_type };
  await startWorkflowOnce(deps.temporal, WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
    workflowId: webhookDeliveryWorkflowId(d.id),
    taskQueue: webhookTaskQueue(deps.config.TEMPORAL_TASK_QUEUE),
    args: [input],
    // A delivery runs once; sending again is a redelivery, a new delivery id.
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    typedSearchAttributes: [
      { key: TEAM_ID, value: d.team_id },
      { key: WEBHOOK_ENDPOINT_ID, value: d.endpoint_id },
      { key: WEBHOOK_EVENT_TYPE, value: d.event_type },
      ...(d.call_id ? [{ key: CALL_ID, value: d.call_id }] : []),
    ],
  });
}

export interface SweepReport {
  started: number;
  failed: number;
}

/**
 * One sweeper pass: starts the workflow of every open delivery older than `startAfterMs`
 * without a confirmed one, and fails the open deliveries whose workflow no longer runs
 * (terminated by an operator), so none stays pending for ever.
 */
export async function sweepWebhookDeliveries(deps: WebhookDispatchDeps, opts: { startAfterMs: number; staleAfterMs: number; limit?: number }): Promise<SweepReport> {
  const limit = opts.limit ?? 500;
  const report: SweepReport = { started: 0, failed: 0 };
  const unstarted = await findDeliveriesWithoutWorkflow(deps.pool, opts.startAfterMs, limit);
  if (unstarted.length) {
    try {
      report.started = await startWebhookDeliveries(deps, unstarted);
    } catch (err) {
      deps.logger?.warn({ err }, 'sweeper could not start every webhook delivery');
    }
  }
  for (const { id } of await findStaleDeliveries(deps.pool, opts.staleAfterMs, limit)) {
    let running: boolean;
    try {
      running = (await deps.temporal.workflow.getHandle(webhookDeliveryWorkflowId(id)).describe()).status.name === 'RUNNING';
    } catch (err) {
      if ((err as Error).name !== 'WorkflowNotFoundError') continue;
      running = false;
    }
    if (running) continue;
    await failDelivery(deps.pool, id, 'The delivery workflow no longer runs');
    report.failed += 1;
  }
  return report;
}

/** Starts the sweeper singleton unless it runs already (called at worker start-up). */
export async function ensureWebhookDeliverySweeper(deps: Pick<WebhookDispatchDeps, 'temporal' | 'config'>): Promise<void> {
  await startWorkflowOnce(deps.temporal, WEBHOOK_DELIVERY_SWEEPER_WORKFLOW_TYPE, {
    workflowId: WEBHOOK_DELIVERY_SWEEPER_WORKFLOW_ID,
    taskQueue: webhookTaskQueue(deps.config.TEMPORAL_TASK_QUEUE),
    args: [{}],
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
  });
}
