import { parseClockTime, parseDaysSpec, type CallingWindow } from '../../domain/callingWindows.js';
import { retryPolicyProblems, type RetryPolicy } from '../../domain/retryPolicy.js';
import { canonicalTimeZone } from '../../domain/timeZones.js';
import type { DialingPolicyChanges } from '../../db/repositories/dialingPolicies.js';
import { getTeamDialingPolicy, setTeamDialingPolicy, type TeamDialingPolicy } from '../../services/dialingPolicy.js';
import { CliError, requiredString, type CliCommand, type OptionSpec } from '../command.js';
import { requireTeam } from './core.js';

type Options = Record<string, string | boolean | undefined>;

/** The calling-window options, shared by `teams set-policy` and `batches create`. */
export const WINDOW_OPTIONS: OptionSpec = {
  'window-days': { type: 'string', description: 'days the window opens: mon-fri, sat,sun, fri-mon, daily (with --window-start and --window-end)' },
  'window-start': { type: 'string', description: "opening time HH:MM in the callee's local time" },
  'window-end': { type: 'string', description: 'closing time HH:MM (24:00 = midnight; earlier than the start = the next day)' },
};

/** The calling window the options describe; undefined when none of them is given. */
export function windowOption(options: Options): CallingWindow | undefined {
  const [days, start, end] = ['window-days', 'window-start', 'window-end'].map((n) => (typeof options[n] === 'string' ? (options[n] as string).trim() : undefined));
  if (days === undefined && start === undefined && end === undefined) return undefined;
  if (days === undefined || start === undefined || end === undefined) throw new CliError('--window-days, --window-start and --window-end go together');
  const parsedDays = parseDaysSpec(days);
  if (!parsedDays) throw new CliError(`--window-days must be days such as mon-fri, sat,sun or daily: ${days}`);
  if (parseClockTime(start) === undefined) throw new CliError(`--window-start must be a time HH:MM from 00:00 to 23:59: ${start}`);
  if (parseClockTime(end, true) === undefined) throw new CliError(`--window-end must be a time HH:MM from 00:00 to 24:00: ${end}`);
  if (start === end) throw new CliError('--window-end must differ from --window-start');
  return { days: parsedDays, start, end };
}

/** The retry policy given as JSON (`{"rang-out":{"max_attempts":3,"delay_seconds":3600}}`). */
export function retryPolicyOption(options: Options, name = 'retry-policy'): RetryPolicy | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  let policy: unknown;
  try {
    policy = JSON.parse(String(value));
  } catch {
    throw new CliError(`--${name} must be JSON such as {"rang-out":{"max_attempts":3,"delay_seconds":3600}}`);
  }
  const problems = retryPolicyProblems(policy);
  if (problems.length) throw new CliError(`--${name}: ${problems.map(([field, message]) => (field ? `${field} ${message}` : message)).join('; ')}`);
  return policy as RetryPolicy;
}

const CLEARABLE = { window: 'calling_window', timezone: 'timezone', 'retry-policy': 'retry_policy', 'dial-rate': 'dial_rate' } as const;

function policyView(policy: TeamDialingPolicy) {
  return {
    team_id: policy.team_id,
    calling_window: policy.calling_window,
    timezone: policy.timezone,
    retry_policy: policy.retry_policy,
    dial_rate: policy.dial_rate,
    updated_at: policy.updated_at.getTime() === 0 ? null : policy.updated_at.toISOString(),
  };
}

function policyText(r: Record<string, unknown>): string {
  const w = r.calling_window as CallingWindow | null;
  return [
    `Team ${r.team_id}`,
    `  calling window  ${w ? `${w.days.join(',')} ${w.start}-${w.end} (callee's local time)` : 'none (any time)'}`,
    `  default zone    ${r.timezone ?? 'none (UTC when a callee has no zone)'}`,
    `  retry policy    ${r.retry_policy ? JSON.stringify(r.retry_policy) : 'none'}`,
    `  dial rate       ${r.dial_rate === null ? 'none (per number only)' : `${r.dial_rate} calls/s across the team`}`,
  ].join('\n');
}

/** A team's dialing policy (docs/calls.md, "Dialing policy"). */
export const policyCommands: CliCommand[] = [
  {
    name: 'teams set-policy',
    summary: "Set a team's dialing policy: default calling window, default time zone, retry policy, team dial rate (parts not given stay as they are)",
    options: {
      team: { type: 'string', description: 'team id', required: true },
      ...WINDOW_OPTIONS,
      timezone: { type: 'string', description: 'IANA zone of callees whose zone is neither set nor derivable from their number, e.g. Europe/Paris' },
      'retry-policy': { type: 'string', description: 'JSON: status -> { max_attempts (1-10, the first call included), delay_seconds (60-604800) }' },
      'dial-rate': { type: 'string', description: 'dial attempts per second across the team (each number is also held to DIAL_RATE_PER_NUMBER)' },
      clear: { type: 'string', description: 'parts to remove, comma-separated: window, timezone, retry-policy, dial-rate' },
    },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const changes: DialingPolicyChanges = {};
      if (typeof options.clear === 'string') {
        for (const part of options.clear.split(',').map((p) => p.trim()).filter(Boolean)) {
          const column = CLEARABLE[part as keyof typeof CLEARABLE];
          if (!column) throw new CliError(`--clear takes window, timezone, retry-policy, dial-rate: ${part}`);
          changes[column] = null;
        }
      }
      const window = windowOption(options);
      if (window) changes.calling_window = window;
      if (options.timezone !== undefined) {
        const zone = canonicalTimeZone(String(options.timezone).trim());
        if (!zone) throw new CliError(`--timezone must be an IANA time zone such as Europe/Paris: ${options.timezone}`);
        changes.timezone = zone;
      }
      const retry = retryPolicyOption(options);
      if (retry) changes.retry_policy = retry;
      if (options['dial-rate'] !== undefined) {
        const rate = Number(options['dial-rate']);
        if (!/^\s*\d+(\.\d+)?\s*$/.test(String(options['dial-rate'])) || !(rate > 0 && rate <= 1000)) {
          throw new CliError(`--dial-rate must be a number of calls per second above 0, at most 1000: ${options['dial-rate']}`);
        }
        changes.dial_rate = rate;
      }
      if (Object.keys(changes).length === 0) throw new CliError('nothing to set: give --window-days/--window-start/--window-end, --timezone, --retry-policy, --dial-rate or --clear');
      return policyView(await setTeamDialingPolicy(db, teamId, changes));
    },
    text: policyText,
  },
  {
    name: 'teams policy',
    summary: "A team's dialing policy",
    options: { team: { type: 'string', description: 'team id', required: true } },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      return policyView(await getTeamDialingPolicy(db, teamId));
    },
    text: policyText,
  },
];
