/**
 * Date-like values as callers say them and records store them, normalised to YYYY-MM-DD
 * (Auth Check rule 3). Pure: no clock, no I/O, so workflows may use it.
 *
 * Parsing works on the *canonical* form of a value: case-folded, with every whitespace,
 * comma and full stop removed. That makes "3 April 1985", "3april,1985" and "3 APRIL 1985."
 * the same date, so whatever ignores those characters for text also ignores them for dates.
 * Formats understood (years always have four digits):
 *   1985-04-03, 1985/4/3, 1985-04-03T10:00:00Z,           year first
 *   1985-04-03 10:00:00 (SQL style)
 *   03/04/1985, 3-4-1985                                    the region's order (MDY in the US)
 *   3 April 1985, 3rd of April 1985, Wednesday 3 Apr. 1985  day, month name, year
 *   April 3rd, 1985, Apr 3 1985, April the 3rd 1985         month name, day, year
 * Dotted numeric dates (03.04.1985) lose their dots and are not dates; they compare as text.
 */

const MONTHS: Record<string, number> = {
  january: 1, jan: 1, february: 2, feb: 2, march: 3, mar: 3, april: 4, apr: 4, may: 5, june: 6, jun: 6,
  july: 7, jul: 7, august: 8, aug: 8, september: 9, sept: 9, sep: 9, october: 10, oct: 10,
  november: 11, nov: 11, december: 12, dec: 12,
};
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const MONTH_RE = Object.keys(MONTHS).sort((a, b) => b.length - a.length).join('|');
const WEEKDAY_RE = '(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thu|fri|sat|sun)';
const ORDINAL_RE = '(?:st|nd|rd|th)';

/** Regions that write numeric dates month first (03/04/1985 = March 4). Every other region is day first. */
const MONTH_FIRST_REGIONS = new Set(['US', 'PR', 'GU', 'VI', 'AS', 'MP', 'UM', 'PH', 'FM', 'MH', 'PW', 'BZ']);

export type DateOrder = 'MDY' | 'DMY';

export function dateOrderForRegion(region: string): DateOrder {
  return MONTH_FIRST_REGIONS.has(region.toUpperCase()) ? 'MDY' : 'DMY';
}

/** Case-folded, with whitespace, commas and full stops removed: what exact matching compares. */
export function canonicalText(value: string): string {
  return value.normalize('NFKC').toUpperCase().toLowerCase().replace(/[\s,.]+/gu, '');
}

// Patterns over the canonical form; each yields year, month, day (strings).
// A time may follow a year-first date after a T or (SQL style) a space, which the canonical form has dropped.
const ISO_CANON = /^(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?:t[\d:]*(?:z|[+-][\d:]+)?|\d{1,2}:[\d:]*(?:z|[+-][\d:]+)?)?$/;
const NUMERIC_CANON = /^(\d{1,2})([-/])(\d{1,2})\2(\d{4})$/;
const DAY_MONTH_CANON = new RegExp(`^${WEEKDAY_RE}?(?:the)?(\\d{1,2})${ORDINAL_RE}?(?:of)?(${MONTH_RE})(\\d{4})$`);
const MONTH_DAY_CANON = new RegExp(`^${WEEKDAY_RE}?(${MONTH_RE})(?:the)?(\\d{1,2})${ORDINAL_RE}?(\\d{4})$`);

interface DateParts {
  year: number;
  month: number;
  day: number;
}

function partsOfCanonical(canon: string, order: DateOrder): DateParts | undefined {
  let m = ISO_CANON.exec(canon);
  if (m) return { year: Number(m[1]), month: Number(m[3]), day: Number(m[4]) };
  m = NUMERIC_CANON.exec(canon);
  if (m) {
    const [first, second] = [Number(m[1]), Number(m[3])];
    return order === 'MDY' ? { year: Number(m[4]), month: first, day: second } : { year: Number(m[4]), month: second, day: first };
  }
  m = DAY_MONTH_CANON.exec(canon);
  if (m) return { year: Number(m[3]), month: MONTHS[m[2]], day: Number(m[1]) };
  m = MONTH_DAY_CANON.exec(canon);
  if (m) return { year: Number(m[3]), month: MONTHS[m[1]], day: Number(m[2]) };
  return undefined;
}

function isRealDate({ year, month, day }: DateParts): boolean {
  if (year < 1000 || month < 1 || month > 12 || day < 1) return false;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return day <= days;
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** True when the value has the shape of a date in one of the formats above, even an impossible one (31/02/1985). */
export function looksLikeDate(value: string, region = 'US'): boolean {
  return partsOfCanonical(canonicalText(value), dateOrderForRegion(region)) !== undefined;
}

/** The value as YYYY-MM-DD when it is a real calendar date in one of the formats above; otherwise undefined. */
export function normalizeDate(value: string, region = 'US'): string | undefined {
  const parts = partsOfCanonical(canonicalText(value), dateOrderForRegion(region));
  if (!parts || !isRealDate(parts)) return undefined;
  return `${pad(parts.year, 4)}-${pad(parts.month, 2)}-${pad(parts.day, 2)}`;
}

// The same formats inside free text (what a caller says), with the separators people use.
const TEXT_PATTERNS = [
  /\b\d{4}[-/]\d{1,2}[-/]\d{1,2}\b/g,
  /\b\d{1,2}[-/]\d{1,2}[-/]\d{4}\b/g,
  new RegExp(`\\b(?:the\\s+)?\\d{1,2}${ORDINAL_RE}?(?:\\s+of)?[\\s,.]+(?:${MONTH_RE})\\.?,?\\s+\\d{4}\\b`, 'g'),
  new RegExp(`\\b(?:${MONTH_RE})\\.?\\s+(?:the\\s+)?\\d{1,2}${ORDINAL_RE}?,?\\s+\\d{4}\\b`, 'g'),
];

/**
 * The last real date mentioned in free text ("It's April 3rd, 1985, I think"): the words as
 * said and their YYYY-MM-DD form; undefined when the text names no date.
 */
export function findDateInText(text: string, region = 'US'): { text: string; iso: string } | undefined {
  const lower = text.toLowerCase();
  let best: { index: number; text: string; iso: string } | undefined;
  for (const pattern of TEXT_PATTERNS) {
    for (const m of lower.matchAll(pattern)) {
      const iso = normalizeDate(m[0], region);
      if (!iso) continue;
      const index = m.index ?? 0;
      if (!best || index > best.index) best = { index, text: text.slice(index, index + m[0].length), iso };
    }
  }
  return best && { text: best.text, iso: best.iso };
}

/** How a person says a YYYY-MM-DD date: "April 3rd, 1985". */
export function spokenDate(iso: string): string {
  const [year, month, day] = iso.split('-').map(Number);
  const suffix = day % 10 === 1 && day !== 11 ? 'st' : day % 10 === 2 && day !== 12 ? 'nd' : day % 10 === 3 && day !== 13 ? 'rd' : 'th';
  return `${MONTH_NAMES[month - 1]} ${day}${suffix}, ${year}`;
}
