/**
 * Metrics of the calls and of the work around them (docs/observability.md), counted where it
 * happens: in the service layer and in activities (never in workflow code, which replays).
 * Both the API process (create-phone-call, cancel-call, inbound calls) and the worker
 * (batches, hooks, the call workflow's activities) count into this registry, and each serves
 * its own counts: Prometheus adds the processes up.
 */
import { Counter, Histogram, Registry } from 'prom-client';

export const callRegistry = new Registry();
const registers = [callRegistry];

export const callsCreated = new Counter({
  name: 'voice_agent_calls_created_total',
  help: 'Calls created (a repeated create that finds its call is not counted), by type: outbound, web or inbound.',
  labelNames: ['type'] as const,
  registers,
});

export const callsEnded = new Counter({
  name: 'voice_agent_calls_ended_total',
  help: 'Calls that reached their one terminal status, by status and end reason.',
  labelNames: ['status', 'end_reason'] as const,
  registers,
});

export const callStartLateness = new Histogram({
  name: 'voice_agent_call_start_lateness_seconds',
  help: 'actual_time - scheduled_time of calls as they start (in-progress): how far behind schedule calls go out.',
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
  registers,
});

export const dialPacingWaits = new Counter({
  name: 'voice_agent_dial_pacing_waits_total',
  help: 'Dials that waited for a dial token of their caller number (carrier pacing, DIAL_RATE_PER_NUMBER).',
  registers,
});

export const callAnalysisDuration = new Histogram({
  name: 'voice_agent_call_analysis_duration_seconds',
  help: 'Time the post-call analysis of one call took (the analyseCall activity).',
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers,
});

export const webhookDeliveries = new Counter({
  name: 'voice_agent_webhook_deliveries_total',
  help: 'Event webhook delivery attempts, by outcome: succeeded, retrying (failed, another attempt is scheduled) or failed (given up).',
  labelNames: ['outcome'] as const,
  registers,
});

export const webhookDeliveryLatency = new Histogram({
  name: 'voice_agent_webhook_delivery_latency_seconds',
  help: "Time an event webhook receiver took to answer one attempt (or to fail it).",
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers,
});

export const hookRuns = new Counter({
  name: 'voice_agent_hook_runs_total',
  help: 'Hook runs finished, by outcome: call_scheduled, contact_added or failed.',
  labelNames: ['outcome'] as const,
  registers,
});

/** Counts a call that has just reached its terminal status (the write that changed it, not a repeat). */
export function countCallEnded(call: { status: string; end_reason: string | null }): void {
  callsEnded.inc({ status: call.status, end_reason: call.end_reason ?? 'none' });
}
