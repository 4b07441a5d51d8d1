/**
 * The public shapes of a call, built from its row: what get-call-status, get-call-result and
 * the list answer, and what call.* event webhooks carry as `data.call`.
 */
import type { CallRecord } from '../db/repositories/calls.js';
import { modelUsageFromNotes } from '../domain/scripts/modelUsage.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** get-call-status: the reduced call. */
export function callStatusView(c: CallRecord) {
  return {
    id: c.id,
    status: c.status,
    end_reason: c.end_reason,
    duration: c.duration,
    scheduled_time: c.scheduled_time.toISOString(),
    actual_time: iso(c.actual_time),
    end_time: iso(c.end_time),
    modified_at: c.modified_at.toISOString(),
  };
}

/** The call as the list endpoint shows it. Analysis fields stay empty until analysed. */
export function callListView(c: CallRecord) {
  const analysed = c.analysed_at !== null;
  return {
    id: c.id,
    team_id: c.team_id,
    contact_id: c.contact_id,
    script_id: c.script_id,
    type: c.type,
    status: c.status,
    progress: c.progress,
    scheduled_time: c.scheduled_time.toISOString(),
    actual_time: iso(c.actual_time),
    end_time: iso(c.end_time),
    duration: c.duration,
    end_reason: c.end_reason,
    call_summary: analysed ? (c.call_summary ?? '') : '',
    structured_data: analysed ? (c.structured_data ?? {}) : {},
    transcript: analysed ? (c.transcript ?? '') : '',
    recording_url: analysed ? c.recording_url : null,
    objectives: analysed ? (c.objectives ?? []) : [],
  };
}

/** get-call-result: the full call. */
export function callResultView(c: CallRecord) {
  const analysed = c.analysed_at !== null;
  return {
    ...callListView(c),
    transcript_json: analysed ? (c.transcript_json ?? []) : [],
    rating: c.rating ?? null,
    post_call_actions: c.post_call_actions ?? [],
    system_notes: c.system_notes ?? [],
    // The call's language-model use, converse steps and LLM analysis (docs/agents.md, "Usage"); null when none.
    usage: modelUsageFromNotes(c.system_notes),
    original_call_id: c.original_call_id,
    attempt: c.attempt,
    next_attempt_call_id: c.next_attempt_call_id,
    calling_window: c.calling_window,
    timezone: c.timezone,
    retry_policy: c.retry_policy,
    from_number: c.from_number,
    to_number: c.to_number,
    created_at: c.created_at.toISOString(),
    modified_at: c.modified_at.toISOString(),
  };
}
