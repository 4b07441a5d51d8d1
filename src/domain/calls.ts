/**
 * The call lifecycle (docs/calls.md): statuses, progress values, end reasons and the rules
 * that say which call may be cancelled or retried. Pure: imported by the API, activities
 * and the call workflow alike.
 */

export const CALL_TYPES = ['outbound', 'inbound', 'web'] as const;
export type CallType = (typeof CALL_TYPES)[number];

export const TERMINAL_STATUSES = [
  'completed',
  'voicemail',
  'dropout',
  'hang-up',
  'rang-out',
  'failed',
  'cancelled',
  'User rejected',
  'User unavailable',
] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

export const CALL_STATUSES = ['scheduled', 'in-progress', ...TERMINAL_STATUSES] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

export function isTerminalStatus(status: string): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

/**
 * Where a call is within its status (the `progress` field):
 * - scheduled: `waiting_for_scheduled_time`, `waiting_for_window` (due outside its calling
 *   window), `waiting_for_slot` (due, queued under the team ceiling), or
 *   `waiting_for_connection` (a web call waiting for the browser);
 * - in-progress: `waiting_for_dial_slot` (holding its slot, waiting for a dial token of its
 *   number: carrier pacing), `dialling`, `ringing`, `in_conversation`;
 * - terminal: `analysing` (post-call analysis pending), then `done`.
 */
export const CALL_PROGRESS = [
  'waiting_for_scheduled_time',
  'waiting_for_window',
  'waiting_for_slot',
  'waiting_for_dial_slot',
  'waiting_for_connection',
  'dialling',
  'ringing',
  'in_conversation',
  'analysing',
  'done',
] as const;
export type CallProgress = (typeof CALL_PROGRESS)[number];

/**
 * Every end_reason the service writes, with the terminal status it belongs to (docs/calls.md).
 * The long-standing literals `agent_hangup` and `User Hangup` are kept as they are.
 */
export const END_REASONS = {
  agent_hangup: 'completed',
  // The script handed the caller to a person (a transfer step: REFER accepted, or a bridge that ended).
  transferred: 'completed',
  'User Hangup': 'hang-up',
  voicemail: 'voicemail',
  no_answer: 'rang-out',
  busy: 'User rejected',
  declined: 'User rejected',
  unreachable: 'User unavailable',
  connection_lost: 'dropout',
  provider_error: 'failed',
  not_connected: 'failed',
  call_timeout: 'failed',
  workflow_lost: 'failed',
  do_not_call: 'failed',
  // Phone calls through a SIP trunk (docs/telephony.md, "Outbound calls").
  invalid_number: 'failed',
  trunk_error: 'failed',
  no_media_edge: 'failed',
  media_edge_lost: 'failed',
  cancelled: 'cancelled',
} as const satisfies Record<string, TerminalStatus>;
export type EndReason = keyof typeof END_REASONS;

export function isEndReason(value: string): value is EndReason {
  return Object.prototype.hasOwnProperty.call(END_REASONS, value);
}

/** A terminal call other than completed whose type is not web. */
export function isRetryable(call: { status: string; type: string }): boolean {
  return isTerminalStatus(call.status) && call.status !== 'completed' && call.type !== 'web';
}

/** One line of a conversation. */
export interface ConversationTurn {
  role: 'agent' | 'user';
  text: string;
}

/** A System Note written by the script runtime (shown as system_notes on the result). */
export interface SystemNote {
  at: string;
  kind: string;
  text: string;
  data?: unknown;
}

/** Role-prefixed plain-text transcript: "Agent: ..." / "User: ..." lines. */
export function transcriptText(turns: readonly ConversationTurn[]): string {
  return turns.map((t) => `${t.role === 'agent' ? 'Agent' : 'User'}: ${t.text}`).join('\n');
}
