/**
 * Retries by outcome (docs/calls.md, "Retries"): which terminal statuses a call may be
 * retried after, how often and how long after. Pure: the API validates with it and the
 * call workflow decides its next attempt with it.
 */
import type { TerminalStatus } from './calls.js';

/**
 * The statuses a retry policy may name: the retryable terminal statuses, except
 * `cancelled` (cancelling a call stops its chain).
 */
export const RETRY_POLICY_STATUSES = ['rang-out', 'voicemail', 'User rejected', 'User unavailable', 'hang-up', 'dropout', 'failed'] as const satisfies readonly TerminalStatus[];
export type RetryPolicyStatus = (typeof RETRY_POLICY_STATUSES)[number];

export interface RetryRule {
  /** Attempts in all, the first call included. */
  max_attempts: number;
  /** From the end of one attempt to the scheduled time of the next. */
  delay_seconds: number;
}

export type RetryPolicy = Partial<Record<RetryPolicyStatus, RetryRule>>;

export const MAX_RETRY_ATTEMPTS = 10;
export const MIN_RETRY_DELAY_SECONDS = 60;
export const MAX_RETRY_DELAY_SECONDS = 604_800;

/**
 * End reasons that never retry, whatever the policy: the callee is on the do-not-call list, or
 * the number does not exist (the trunk answered 404 or 484): redialling it reaches no one.
 */
const FINAL_END_REASONS = new Set(['do_not_call', 'invalid_number']);

/**
 * What is wrong with a policy, as `[field, message]` pairs (field relative to the policy:
 * `rang-out.max_attempts`); empty when it is valid.
 */
export function retryPolicyProblems(policy: unknown): [string, string][] {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) return [['', 'must be an object of status → { max_attempts, delay_seconds }']];
  const problems: [string, string][] = [];
  for (const [status, rule] of Object.entries(policy)) {
    if (!(RETRY_POLICY_STATUSES as readonly string[]).includes(status)) {
      problems.push([status, `is not a retryable status (one of ${RETRY_POLICY_STATUSES.join(', ')})`]);
      continue;
    }
    if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
      problems.push([status, 'must be { max_attempts, delay_seconds }']);
      continue;
    }
    const { max_attempts, delay_seconds, ...rest } = rule as Record<string, unknown>;
    for (const key of Object.keys(rest)) problems.push([status, `has unknown field ${key}`]);
    if (!Number.isInteger(max_attempts) || (max_attempts as number) < 1 || (max_attempts as number) > MAX_RETRY_ATTEMPTS) {
      problems.push([`${status}.max_attempts`, `must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}`]);
    }
    if (!Number.isInteger(delay_seconds) || (delay_seconds as number) < MIN_RETRY_DELAY_SECONDS || (delay_seconds as number) > MAX_RETRY_DELAY_SECONDS) {
      problems.push([`${status}.delay_seconds`, `must be a whole number from ${MIN_RETRY_DELAY_SECONDS} to ${MAX_RETRY_DELAY_SECONDS}`]);
    }
  }
  return problems;
}

/**
 * Seconds until the next attempt of a chain whose attempt number `attempt` ended with
 * `status` / `endReason`, or undefined when the chain ends here.
 */
export function retryDelaySeconds(policy: RetryPolicy | null | undefined, outcome: { status: string; endReason: string | null; attempt: number }): number | undefined {
  if (!policy || (outcome.endReason && FINAL_END_REASONS.has(outcome.endReason))) return undefined;
  const rule = (policy as Record<string, RetryRule | undefined>)[outcome.status];
  if (!rule || outcome.attempt >= rule.max_attempts) return undefined;
  return rule.delay_seconds;
}
