/**
 * Dialing policy (docs/calls.md, "Dialing policy"): a team's defaults, set by the operator,
 * and what a call resolves when it is scheduled: the calling window it waits for, the zone
 * that window is read in, its retry policy, and the first instant it may be dialled.
 */
import type { Queryable } from '../db/pool.js';
import { findTeamDialingPolicy, updateTeamDialingPolicy, type DialingPolicyChanges, type TeamDialingPolicy } from '../db/repositories/dialingPolicies.js';
import { findTeam } from '../db/repositories/teams.js';
import { callingWindowProblems, nextWindowOpening, normalizeCallingWindow, type CallingWindow } from '../domain/callingWindows.js';
import { timeZoneOfPhoneNumber } from '../domain/phoneTimeZones.js';
import { retryPolicyProblems, type RetryPolicy } from '../domain/retryPolicy.js';
import { canonicalTimeZone } from '../domain/timeZones.js';
import { invalid, notFound } from './errors.js';

export type { TeamDialingPolicy };

/** The zone used when neither the contact, its number nor the team names one. */
export const FALLBACK_TIME_ZONE = 'UTC';

export async function getTeamDialingPolicy(db: Queryable, teamId: string): Promise<TeamDialingPolicy> {
  if (!(await findTeam(db, teamId))) throw notFound('Team not found');
  return findTeamDialingPolicy(db, teamId);
}

/**
 * Sets parts of a team's policy (null clears a part; parts not given keep their value).
 * Invalid parts are refused naming the part, before anything is written.
 */
export async function setTeamDialingPolicy(db: Queryable, teamId: string, changes: DialingPolicyChanges): Promise<TeamDialingPolicy> {
  const problems: string[] = [];
  const next: DialingPolicyChanges = { ...changes };
  if (changes.calling_window) {
    for (const [field, message] of callingWindowProblems(changes.calling_window)) problems.push(`calling_window.${field} ${message}`);
    if (problems.length === 0) next.calling_window = normalizeCallingWindow(changes.calling_window);
  }
  if (changes.timezone) {
    const zone = canonicalTimeZone(changes.timezone);
    if (!zone) problems.push('timezone must be an IANA time zone such as Europe/Paris');
    else next.timezone = zone;
  }
  if (changes.retry_policy) for (const [field, message] of retryPolicyProblems(changes.retry_policy)) problems.push(`retry_policy${field ? `.${field}` : ''} ${message}`);
  if (changes.dial_rate !== undefined && changes.dial_rate !== null && !(Number.isFinite(changes.dial_rate) && changes.dial_rate > 0 && changes.dial_rate <= 1000)) {
    problems.push('dial_rate must be a number of calls per second above 0, at most 1000');
  }
  if (problems.length) throw invalid(`Invalid request: ${problems.join('; ')}`);
  if (!(await findTeam(db, teamId))) throw notFound('Team not found');
  return updateTeamDialingPolicy(db, teamId, next);
}

/**
 * The zone a callee's window is read in, first found: the contact's own `timezone`, the
 * zone their number's region keeps (src/domain/phoneTimeZones.ts), the team's default, UTC.
 */
export function resolveTimeZone(contact: { timezone?: string | null; phone_number?: string | null }, team: Pick<TeamDialingPolicy, 'timezone'>): string {
  return contact.timezone || (contact.phone_number ? timeZoneOfPhoneNumber(contact.phone_number) : undefined) || team.timezone || FALLBACK_TIME_ZONE;
}

/** Per call or per batch: a value overrides the team's default, null means none, undefined takes the default. */
export interface PolicyOverrides {
  callingWindow?: CallingWindow | null;
  retryPolicy?: RetryPolicy | null;
}

export interface ResolvedCallPolicy {
  callingWindow: CallingWindow | null;
  timezone: string;
  retryPolicy: RetryPolicy | null;
  /** The first instant at or after the scheduled time when the window is open. */
  dialAfter: Date;
}

/** What a new call keeps of the dialing policy (stored on its row; its workflow gets it as input). */
export function resolveCallPolicy(
  team: TeamDialingPolicy,
  contact: { timezone?: string | null; phone_number?: string | null },
  overrides: PolicyOverrides,
  scheduledTime: Date,
): ResolvedCallPolicy {
  const chosen = overrides.callingWindow === undefined ? team.calling_window : overrides.callingWindow;
  const callingWindow = chosen && normalizeCallingWindow(chosen);
  const retryPolicy = overrides.retryPolicy === undefined ? team.retry_policy : overrides.retryPolicy;
  const timezone = resolveTimeZone(contact, team);
  return { callingWindow, timezone, retryPolicy, dialAfter: dialAfter(callingWindow, timezone, scheduledTime) };
}

/** When a call scheduled at `scheduledTime` may first be dialled. */
export function dialAfter(window: CallingWindow | null, timezone: string, scheduledTime: Date): Date {
  return window ? new Date(nextWindowOpening(scheduledTime.getTime(), window, timezone)) : scheduledTime;
}
