/**
 * Calling windows (docs/calls.md, "Calling windows"): the days and hours, in the callee's
 * local time, when a call may start. Pure: the API validates with it, the services store
 * the next opening, and the call workflow waits with it on workflow time.
 *
 * `{ days: ["mon", …], start: "HH:MM", end: "HH:MM" }`: the window opens at `start` on
 * each of `days` and closes at `end`; an `end` earlier than `start` closes the next day
 * (a window across midnight belongs to the day it opens), and `end` may be `24:00`.
 */
import { addDays, zonedInstant, zonedParts } from './timeZones.js';

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface CallingWindow {
  days: Weekday[];
  start: string;
  end: string;
}

/** HH:MM from 00:00 to 23:59 (also the OpenAPI pattern of a window's start and end). */
export const CLOCK_TIME_PATTERN = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** Minutes past midnight of `HH:MM` (`24:00` allowed when `allowEndOfDay`); undefined when malformed. */
export function parseClockTime(value: string, allowEndOfDay = false): number | undefined {
  if (allowEndOfDay && value === '24:00') return 24 * 60;
  const m = CLOCK_TIME_PATTERN.exec(value);
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

/**
 * What is wrong with a window, as `[field, message]` pairs (field relative to the window:
 * `days`, `start`, `end`); empty when it is valid.
 */
export function callingWindowProblems(window: { days?: unknown; start?: unknown; end?: unknown }): [string, string][] {
  const problems: [string, string][] = [];
  if (!Array.isArray(window.days) || window.days.length === 0) problems.push(['days', `must be a non-empty array of ${WEEKDAYS.join(', ')}`]);
  else if (window.days.some((d) => !WEEKDAYS.includes(d as Weekday))) problems.push(['days', `must contain only ${WEEKDAYS.join(', ')}`]);
  const start = typeof window.start === 'string' ? parseClockTime(window.start) : undefined;
  const end = typeof window.end === 'string' ? parseClockTime(window.end, true) : undefined;
  if (start === undefined) problems.push(['start', 'must be a time HH:MM from 00:00 to 23:59']);
  if (end === undefined) problems.push(['end', 'must be a time HH:MM from 00:00 to 24:00']);
  if (start !== undefined && end !== undefined && start === end) {
    problems.push(['end', 'must differ from start']);
  }
  return problems;
}

/** The window with its days deduplicated and in week order. */
export function normalizeCallingWindow(window: CallingWindow): CallingWindow {
  return { days: WEEKDAYS.filter((d) => window.days.includes(d)), start: window.start, end: window.end };
}

/**
 * Days written the operator's way: `mon-fri`, `sat,sun`, `mon-wed,fri`, `fri-mon` (a range
 * wraps over the weekend), `daily`. Undefined when malformed.
 */
export function parseDaysSpec(spec: string): Weekday[] | undefined {
  const text = spec.trim().toLowerCase();
  if (text === 'daily' || text === 'all') return [...WEEKDAYS];
  const days = new Set<Weekday>();
  for (const item of text.split(',')) {
    const [from, to, extra] = item.trim().split('-');
    const a = WEEKDAYS.indexOf(from as Weekday);
    if (a < 0 || extra !== undefined) return undefined;
    if (to === undefined) {
      days.add(WEEKDAYS[a]);
      continue;
    }
    const b = WEEKDAYS.indexOf(to as Weekday);
    if (b < 0) return undefined;
    for (let i = a; ; i = (i + 1) % 7) {
      days.add(WEEKDAYS[i]);
      if (i === b) break;
    }
  }
  return days.size ? WEEKDAYS.filter((d) => days.has(d)) : undefined;
}

function bounds(window: CallingWindow): { start: number; end: number; days: Set<number> } {
  return {
    start: parseClockTime(window.start)!,
    end: parseClockTime(window.end, true)!,
    days: new Set(window.days.map((d) => WEEKDAYS.indexOf(d))),
  };
}

/** Whether the window is open at `epochMs` in `timeZone` (minute precision: 08:59:59 is before 09:00). */
export function isWindowOpen(epochMs: number, window: CallingWindow, timeZone: string): boolean {
  const { start, end, days } = bounds(window);
  const p = zonedParts(epochMs, timeZone);
  const minute = p.hour * 60 + p.minute;
  if (start < end) return days.has(p.weekday) && minute >= start && minute < end;
  // Across midnight: the evening part belongs to today's window, the early hours to yesterday's.
  return (days.has(p.weekday) && minute >= start) || (days.has((p.weekday + 6) % 7) && minute < end);
}

/**
 * The first instant at or after `epochMs` when the window is open: `epochMs` itself when it
 * is open now, else the next `start` on one of its days (local time, daylight-saving
 * changes included). A `start` that a spring-forward skips opens when the gap ends.
 */
export function nextWindowOpening(epochMs: number, window: CallingWindow, timeZone: string): number {
  if (isWindowOpen(epochMs, window, timeZone)) return epochMs;
  const { start, days } = bounds(window);
  const today = zonedParts(epochMs, timeZone);
  // Eight days cover every weekday after today's opening has passed.
  for (let i = 0; i <= 8; i += 1) {
    const date = addDays(today.year, today.month, today.day, i);
    if (!days.has(date.weekday)) continue;
    const opens = zonedInstant(date.year, date.month, date.day, start, timeZone);
    if (opens > epochMs && isWindowOpen(opens, window, timeZone)) return opens;
  }
  throw new Error('calling window never opens');
}

/**
 * The first instant after `epochMs` at which the window is closed: `epochMs` itself when it
 * is closed now, Infinity for a window that never closes (every day, 00:00 to 24:00).
 */
export function nextWindowClosing(epochMs: number, window: CallingWindow, timeZone: string): number {
  if (!isWindowOpen(epochMs, window, timeZone)) return epochMs;
  const { start, end, days } = bounds(window);
  const today = zonedParts(epochMs, timeZone);
  // The open stretch began today or yesterday (across midnight); back-to-back days extend it.
  for (let i = -1; i <= 8; i += 1) {
    const date = addDays(today.year, today.month, today.day, i);
    if (!days.has(date.weekday)) continue;
    const endDate = start < end ? date : addDays(date.year, date.month, date.day, 1);
    const closes = zonedInstant(endDate.year, endDate.month, endDate.day, end, timeZone);
    if (closes > epochMs && !isWindowOpen(closes, window, timeZone)) return closes;
  }
  return Number.POSITIVE_INFINITY;
}
