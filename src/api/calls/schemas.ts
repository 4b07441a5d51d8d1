import { CLOCK_TIME_PATTERN, parseClockTime, WEEKDAYS } from '../../domain/callingWindows.js';
import { CALL_PROGRESS, CALL_STATUSES, CALL_TYPES, END_REASONS } from '../../domain/calls.js';
import { MAX_RETRY_ATTEMPTS, MAX_RETRY_DELAY_SECONDS, MIN_RETRY_DELAY_SECONDS, RETRY_POLICY_STATUSES } from '../../domain/retryPolicy.js';
import { contactUpsertBody } from '../contacts/schemas.js';
import { objectsMapSchema } from '../objects/schemas.js';
import { cursorOrEmptyDocument, pageLimitQuery, phoneNumberDocument, z } from '../schemas.js';

const str = (field: string) => z.string({ message: `${field} must be a string` });

/**
 * An ISO 8601 date-time (a date alone means its midnight; no zone means UTC), normalised to
 * `YYYY-MM-DDTHH:MM:SS.sssZ`. Anything else, or an impossible date, is a 400 naming the field.
 */
const dateTime = (field: string) =>
  z
    .string({ message: `${field} must be an ISO 8601 date-time string` })
    .transform((v, ctx) => {
      const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(v.trim());
      const [, y, mo, d, h = '00', mi = '00', sec = '00', frac = '', zone = 'Z'] = m ?? [];
      const iso = `${y}-${mo}-${d}T${h}:${mi}:${sec}${frac.slice(0, 4)}${zone.toUpperCase() === 'Z' ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone}`;
      const time = m ? Date.parse(iso) : NaN;
      // Date.parse rolls 2026-02-30 over to March; a real date keeps its day.
      if (Number.isNaN(time) || !sameDay(iso, time, zone)) {
        ctx.addIssue({ code: 'custom', message: `${field} must be an ISO 8601 date-time such as 2026-01-01T12:00:00Z` });
        return z.NEVER;
      }
      return new Date(time).toISOString();
    })
    .openapi({ type: 'string', format: 'date-time', example: '2026-01-01T12:00:00Z' });

/** Whether the calendar date written in `iso` exists (checked in the written zone). */
function sameDay(iso: string, time: number, zone: string): boolean {
  const offsetMinutes = zone.toUpperCase() === 'Z' ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(-2)));
  const local = new Date(time + offsetMinutes * 60_000);
  return local.getUTCDate() === Number(iso.slice(8, 10)) && local.getUTCMonth() + 1 === Number(iso.slice(5, 7));
}

/** A type error's message, except for a missing value: that one keeps the default (`<field> is required`). */
const unlessMissing = (message: string) => ({ error: (issue: { input?: unknown }) => (issue.input === undefined ? undefined : message) });

/** A calling window (docs/calls.md, "Calling windows"), in the callee's local time. */
export const callingWindowSchema = z
  .strictObject({
    days: z
      .array(z.enum(WEEKDAYS, { message: `must be one of ${WEEKDAYS.join(', ')}` }), unlessMissing('must be an array of days'))
      .min(1, 'must name at least one day')
      .max(7, 'must name each day at most once')
      .refine((days) => new Set(days).size === days.length, 'must name each day at most once')
      .openapi({ uniqueItems: true }),
    start: z
      .string(unlessMissing('must be a time HH:MM'))
      .refine((v) => parseClockTime(v) !== undefined, 'must be a time HH:MM from 00:00 to 23:59')
      .openapi({ pattern: CLOCK_TIME_PATTERN.source }),
    end: z
      .string(unlessMissing('must be a time HH:MM'))
      .refine((v) => parseClockTime(v, true) !== undefined, 'must be a time HH:MM from 00:00 to 24:00')
      .openapi({ pattern: `^24:00$|${CLOCK_TIME_PATTERN.source}` }),
  })
  .superRefine((w, ctx) => {
    if (w.start === w.end) ctx.addIssue({ code: 'custom', path: ['end'], message: 'must differ from start' });
  })
  .openapi('CallingWindow', {
    description: 'The days and hours a call may start, in the callee’s local time. An end earlier than the start closes the next day; 24:00 is midnight.',
    example: { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '20:00' },
  });

const retryRule = z
  .strictObject({
    max_attempts: z
      .number(unlessMissing(`must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}`))
      .int(`must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}`)
      .min(1, `must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}`)
      .max(MAX_RETRY_ATTEMPTS, `must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}`)
      .openapi({ description: 'Attempts in all, the first call included' }),
    delay_seconds: z
      .number(unlessMissing(`must be a whole number from ${MIN_RETRY_DELAY_SECONDS} to ${MAX_RETRY_DELAY_SECONDS}`))
      .int(`must be a whole number from ${MIN_RETRY_DELAY_SECONDS} to ${MAX_RETRY_DELAY_SECONDS}`)
      .min(MIN_RETRY_DELAY_SECONDS, `must be a whole number from ${MIN_RETRY_DELAY_SECONDS} to ${MAX_RETRY_DELAY_SECONDS}`)
      .max(MAX_RETRY_DELAY_SECONDS, `must be a whole number from ${MIN_RETRY_DELAY_SECONDS} to ${MAX_RETRY_DELAY_SECONDS}`)
      .openapi({ description: 'From the end of an attempt to the scheduled time of the next' }),
  })
  .openapi('RetryRule');

/** A retry policy (docs/calls.md, "Retries"): terminal status → rule. */
export const retryPolicySchema = z
  .strictObject(Object.fromEntries(RETRY_POLICY_STATUSES.map((s) => [s, retryRule.optional()])) as Record<(typeof RETRY_POLICY_STATUSES)[number], z.ZodOptional<typeof retryRule>>)
  .openapi('RetryPolicy', {
    description: `Keys: the retryable terminal statuses (${RETRY_POLICY_STATUSES.join(', ')}). A retry is a new call of the same chain; cancelling a call stops its chain.`,
    example: { 'rang-out': { max_attempts: 3, delay_seconds: 3600 }, voicemail: { max_attempts: 2, delay_seconds: 7200 } },
  });

export const createPhoneCallBody = z
  .object({
    from_number: str('from_number').min(1, 'from_number must not be empty').openapi(phoneNumberDocument('One of the team’s numbers, the caller id of the call')),
    script_id: str('script_id').min(1, 'script_id must not be empty'),
    contact: contactUpsertBody,
    scheduled_time: dateTime('scheduled_time').nullish(),
    objects: objectsMapSchema.nullish(),
    calling_window: callingWindowSchema.nullable().optional().openapi({ description: 'Overrides the team’s default window; null = any time; absent = the team’s.' }),
    retry_policy: retryPolicySchema.nullable().optional().openapi({ description: 'Overrides the team’s default retry policy; null = no retries; absent = the team’s.' }),
  })
  .openapi('CreatePhoneCallRequest');

export const createPhoneCallResponse = z
  .object({ success: z.literal(true), call_id: z.string(), contact_id: z.string(), status: z.literal('scheduled') })
  .openapi('CreatePhoneCallResponse');

export const callIdParams = z.object({ call_id: z.string().openapi({ description: 'The call id (UUID)' }) });

const nullableDate = z.string().nullable().openapi({ format: 'date-time' });

export const callStatusShape = z
  .object({
    id: z.string(),
    status: z.enum(CALL_STATUSES),
    end_reason: z.string().nullable(),
    duration: z.number().int().nullable().openapi({ description: 'Whole seconds from actual_time to end_time; null until the call ends.' }),
    scheduled_time: z.string().openapi({ format: 'date-time' }),
    actual_time: nullableDate,
    end_time: nullableDate,
    modified_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('CallStatus');

const objective = z.object({ objective: z.string(), met: z.boolean() });

const callCommon = {
  id: z.string(),
  team_id: z.string(),
  contact_id: z.string(),
  script_id: z.string(),
  type: z.enum(CALL_TYPES),
  status: z.enum(CALL_STATUSES),
  progress: z.enum(CALL_PROGRESS).openapi({ description: 'Where the call is within its status (docs/calls.md).' }),
  scheduled_time: z.string().openapi({ format: 'date-time' }),
  actual_time: nullableDate,
  end_time: nullableDate,
  duration: z.number().int().nullable(),
  end_reason: z.string().nullable().openapi({ description: `One of: ${Object.keys(END_REASONS).join(', ')}.` }),
  call_summary: z.string().openapi({ description: 'Empty until post-call analysis, a few seconds after the terminal status.' }),
  structured_data: z.record(z.string(), z.unknown()),
  transcript: z.string().openapi({ description: 'Role-prefixed lines ("Agent: ...", "User: ..."). Empty until analysed.' }),
  recording_url: z.string().nullable(),
  objectives: z.array(objective),
};

export const callListItem = z.object(callCommon).openapi('CallListItem');

export const callResult = z
  .object({
    ...callCommon,
    transcript_json: z.array(z.object({ role: z.string(), text: z.string() })),
    rating: z.unknown().nullable(),
    post_call_actions: z.array(z.unknown()),
    system_notes: z.array(z.record(z.string(), z.unknown())).openapi({ description: 'Notes written by script tools (Auth Check) during the call.' }),
    usage: z
      .object({
        model_turns: z.number().int(),
        prompt_tokens: z.number().int(),
        completion_tokens: z.number().int(),
        total_tokens: z.number().int(),
      })
      .nullable()
      .openapi({ description: 'The call’s language-model use (docs/agents.md): the script’s converse steps’ turns and tokens, and the tokens of an ANALYSER=llm post-call analysis, as the model service counted them; null when the model was not used.' }),
    original_call_id: z.string().nullable().openapi({ description: 'The first call of the chain this call retries, null for a first call.' }),
    attempt: z.number().int().openapi({ description: '1 for the first call of a chain.' }),
    next_attempt_call_id: z.string().nullable().openapi({ description: 'The retry this call’s end scheduled, or null.' }),
    calling_window: callingWindowSchema.nullable().openapi({ description: 'The window the call waits for, null = any time (resolved when scheduled).' }),
    timezone: z.string().nullable().openapi({ description: 'The IANA zone the window is read in (contact, number, team default, UTC).' }),
    retry_policy: retryPolicySchema.nullable(),
    from_number: z.string().nullable(),
    to_number: z.string().nullable(),
    created_at: z.string().openapi({ format: 'date-time' }),
    modified_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('CallResult');

export const listCallsQuery = z.object({
  limit: pageLimitQuery,
  cursor: z.string().optional().openapi(cursorOrEmptyDocument),
  type: z.enum(CALL_TYPES, { message: `type must be one of ${CALL_TYPES.join(', ')}` }).optional(),
  status: z.enum(CALL_STATUSES, { message: `status must be one of ${CALL_STATUSES.join(', ')}` }).optional(),
  contact_id: z.string().uuid({ message: 'contact_id must be a UUID' }).optional(),
  original_call_id: z.string().uuid({ message: 'original_call_id must be a UUID' }).optional().openapi({ description: 'The retries of a chain: calls whose original_call_id is this (the first call itself has none).' }),
});

export const listCallsResponse = z
  .object({
    success: z.literal(true),
    calls: z.array(callListItem),
    meta: z.object({
      limit: z.number().int(),
      total: z.number().int(),
      next_cursor: z.string().nullable().openapi({ format: 'date-time', description: 'Null on the last page.' }),
    }),
  })
  .openapi('CallList');

export const cancelCallResponse = z
  .object({ success: z.literal(true), call_id: z.string(), status: z.literal('cancelled') })
  .openapi('CancelCallResponse');

export const retryCallBody = z.object({ scheduled_time: dateTime('scheduled_time').nullish() }).openapi('RetryCallRequest');

export const retryCallResponse = z
  .object({
    success: z.literal(true),
    call_id: z.string(),
    original_call_id: z.string(),
    status: z.literal('scheduled'),
    scheduled_time: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('RetryCallResponse');

const eventCommon = {
  event_id: z.string().min(1).max(200).optional().openapi({ description: 'Deduplicates redelivered events.' }),
  occurred_at: dateTime('occurred_at').optional(),
};

const mediaTaskQueue = z
  .string()
  .regex(/^media-edge-[A-Za-z0-9._-]{1,100}$/, 'media_task_queue must be media-edge-<instance id>')
  .optional();

// cancelled and do_not_call are the service's own reasons, never a provider's.
const endReasons = Object.keys(END_REASONS).filter((r) => r !== 'cancelled' && r !== 'do_not_call') as [string, ...string[]];

export const callEventBody = z
  .discriminatedUnion(
    'type',
    [
      z.object({
        type: z.literal('ringing'),
        media_task_queue: mediaTaskQueue.openapi({
          description: 'Sent by a media edge dialling the call through its SIP trunk: its own task queue, where the call workflow reaches the dial at once on cancel-call (docs/telephony.md).',
        }),
        ...eventCommon,
      }),
      z.object({
        type: z.literal('answered'),
        media_task_queue: mediaTaskQueue.openapi({ description: 'Sent by a media edge: its own task queue, where the call workflow runs the script’s speech (docs/media-edge.md).' }),
        ...eventCommon,
      }),
      z.object({ type: z.literal('transcript'), role: z.enum(['agent', 'user']), text: z.string().min(1).max(10_000), ...eventCommon }),
      z.object({ type: z.literal('ended'), reason: z.enum(endReasons, { message: `reason must be one of ${endReasons.join(', ')}` }), ...eventCommon }),
    ],
    { message: 'type must be one of ringing, answered, transcript, ended' },
  )
  .openapi('CallEvent');

export const callEventResponse = z
  .object({ success: z.literal(true), call_id: z.string(), accepted: z.literal(true), team_id: z.string().openapi({ description: 'The call’s team (the media edge keys the call’s recording by it)' }) })
  .openapi('CallEventAccepted');
