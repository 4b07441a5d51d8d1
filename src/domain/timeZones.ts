/**
 * Time-zone arithmetic on the IANA time-zone database, through Intl (ICU's copy of the
 * database), never through fixed offsets: daylight-saving changes come from the database.
 * Pure and deterministic for a given ICU, so the call workflow uses it with workflow time.
 */

/** A wall-clock reading of an instant in a zone. `weekday`: 0 = Monday … 6 = Sunday. */
export interface ZonedParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  weekday: number;
}

const WEEKDAY_INDEX: Record<string, number> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4, Sat: 5, Sun: 6 };

// Formatters are costly to build and immutable: one per zone.
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
      era: 'short',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The wall clock of `epochMs` in `timeZone`. */
export function zonedParts(epochMs: number, timeZone: string): ZonedParts {
  const out: Record<string, string> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(epochMs))) out[part.type] = part.value;
  const year = Number(out.year);
  return {
    year: out.era === 'BC' ? 1 - year : year,
    month: Number(out.month),
    day: Number(out.day),
    hour: Number(out.hour),
    minute: Number(out.minute),
    second: Number(out.second),
    weekday: WEEKDAY_INDEX[out.weekday],
  };
}

/** Local wall time minus UTC at `epochMs`, in milliseconds (whole seconds). */
export function offsetMs(epochMs: number, timeZone: string): number {
  const p = zonedParts(epochMs, timeZone);
  const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return wall - (epochMs - (((epochMs % 1000) + 1000) % 1000));
}

/** What an IANA zone name looks like (also the OpenAPI pattern of `timezone`); whether it exists is Intl's to say. */
export const TIME_ZONE_NAME_PATTERN = /^(?:[A-Za-z][A-Za-z0-9_+-]*)(?:\/[A-Za-z0-9_+-]+){0,2}$/;

/**
 * An IANA zone name as stored: the database's spelling when only the letter case differs
 * (`europe/paris` → `Europe/Paris`), an alias as given (`Asia/Kolkata`, `US/Eastern`), or
 * undefined when the name is no zone. Offsets such as `+02:00` are not zone names.
 */
export function canonicalTimeZone(name: string): string | undefined {
  if (typeof name !== 'string' || name.length > 64 || !TIME_ZONE_NAME_PATTERN.test(name)) return undefined;
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    return resolved.toLowerCase() === name.toLowerCase() ? resolved : name;
  } catch {
    return undefined;
  }
}

export function isTimeZone(name: string): boolean {
  return canonicalTimeZone(name) !== undefined;
}

/**
 * The instant at which the wall clock of `timeZone` reads `minutes` past midnight on the
 * given civil date. A wall time that occurs twice (clocks turned back) is its first
 * occurrence; one that never occurs (clocks turned forward over it) is the instant the gap
 * ends, the first moment at or after that wall time.
 */
export function zonedInstant(year: number, month: number, day: number, minutes: number, timeZone: string): number {
  const wall = Date.UTC(year, month - 1, day, 0, minutes);
  const day_ = 24 * 60 * 60 * 1000;
  const before = offsetMs(wall - day_, timeZone);
  const after = offsetMs(wall + day_, timeZone);
  const candidates = [wall - before, wall - after].filter((t) => t + offsetMs(t, timeZone) === wall);
  if (candidates.length) return Math.min(...candidates);
  // In a gap: the transition lies between the two readings; find its first instant.
  let lo = Math.min(wall - before, wall - after);
  let hi = Math.max(wall - before, wall - after);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (mid + offsetMs(mid, timeZone) >= wall) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The civil date `days` after the given one (calendar arithmetic, no zone involved). */
export function addDays(year: number, month: number, day: number, days: number): { year: number; month: number; day: number; weekday: number } {
  const d = new Date(Date.UTC(year, month - 1, day + days));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), weekday: (d.getUTCDay() + 6) % 7 };
}
