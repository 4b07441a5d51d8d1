/**
 * Comparing one Record Array value with one Check Array value (Auth Check matching rules
 * 2–4 of docs/scripts.md, "Matching rules, precisely").
 */
import { canonicalText, looksLikeDate, normalizeDate } from '../dates.js';

/**
 * What exact matching compares: YYYY-MM-DD when the value is a date, otherwise the value
 * case-folded with whitespace, commas and full stops removed (rule 3).
 */
export function exactForm(value: string, region = 'US'): string {
  return normalizeDate(value, region) ?? canonicalText(value);
}

/** Rule 3. Both values must be non-empty once normalised (rule 2). */
export function exactMatch(a: string, b: string, region = 'US'): boolean {
  const [fa, fb] = [exactForm(a, region), exactForm(b, region)];
  return fa !== '' && fa === fb;
}

/**
 * How many single-character edits "nearly identical" allows for a word of this length:
 * none up to 4 characters (but see `swappedNeighbours`), 1 from 5 to 8, 2 from 9 on.
 */
export function editBudget(length: number): number {
  if (length <= 4) return 0;
  if (length <= 8) return 1;
  return 2;
}

/**
 * Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbouring characters each cost 1 (so "Jhon" is one edit from "John").
 */
export function editDistance(a: string, b: string): number {
  const [x, y] = [Array.from(a), Array.from(b)];
  const d: number[][] = Array.from({ length: x.length + 1 }, (_, i) => Array.from({ length: y.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[x.length][y.length];
}

/**
 * The same letters with exactly one pair of neighbours swapped ("jhon"/"john"): the one
 * edit a short word is allowed. A swap is a slip of typing or transcription; a changed,
 * added or dropped letter in a short word usually makes another name (Jane/Jana, Tom/Tim).
 */
export function swappedNeighbours(x: string, y: string): boolean {
  const [cx, cy] = [Array.from(x), Array.from(y)];
  if (cx.length !== cy.length) return false;
  const differ = cx.flatMap((c, i) => (c === cy[i] ? [] : [i]));
  return differ.length === 2 && differ[1] === differ[0] + 1 && cx[differ[0]] === cy[differ[1]] && cx[differ[1]] === cy[differ[0]];
}

const LETTER = /^\p{L}$/u;

/**
 * Two words (already case-folded) are close when equal, or when they start with the same
 * letter, neither is a prefix of the other (a shortened word is an abbreviation: St/Street,
 * Rob/Robert), their lengths differ by at most one, and their edit distance is within the
 * budget of the longer word (for a word of up to 4 letters: one swap of neighbours).
 */
export function closeWords(x: string, y: string): boolean {
  if (x === y) return true;
  const [cx, cy] = [Array.from(x), Array.from(y)];
  if (cx.length === 0 || cy.length === 0) return false;
  if (cx[0] !== cy[0] || !LETTER.test(cx[0])) return false;
  if (x.startsWith(y) || y.startsWith(x)) return false;
  if (Math.abs(cx.length - cy.length) > 1) return false;
  const longer = Math.max(cx.length, cy.length);
  if (editBudget(longer) === 0) return swappedNeighbours(x, y);
  return editDistance(x, y) <= editBudget(longer);
}

function words(value: string): string[] {
  return value
    .normalize('NFKC')
    .toUpperCase()
    .toLowerCase()
    .split(/[\s,.]+/u)
    .filter(Boolean);
}

/**
 * Rule 4: a semantic match. Never for date-like values (either side). The values must start
 * with the same letter (after normalisation). With the same number of words on both sides,
 * each pair of words must be close; otherwise the whole values (spaces removed) must be
 * close. Nicknames and abbreviations fail these tests by construction (Bob/Robert and
 * Liz/Elizabeth start differently; St/Street, Rob/Robert are prefixes; Mike/Michael differ
 * in length by more than one).
 */
export function semanticMatch(a: string, b: string, region = 'US'): boolean {
  if (looksLikeDate(a, region) || looksLikeDate(b, region)) return false;
  const [ca, cb] = [canonicalText(a), canonicalText(b)];
  if (ca === '' || cb === '') return false;
  const [fa, fb] = [Array.from(ca)[0], Array.from(cb)[0]];
  if (fa !== fb || !LETTER.test(fa)) return false;
  const [wa, wb] = [words(a), words(b)];
  if (wa.length > 1 && wa.length === wb.length) return wa.every((w, i) => closeWords(w, wb[i]));
  return closeWords(ca, cb);
}

export type PositionOutcome = 'exact' | 'semantic' | 'failed';
export type FailureReason = 'unpartnered' | 'missing' | 'empty' | 'mismatch';

export interface PositionComparison {
  outcome: PositionOutcome;
  reason?: FailureReason;
}

/** A value as text for comparing: numbers and booleans as written, objects as JSON; null/undefined is missing. */
export function comparableText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Rules 2–4 for one position whose both sides exist. */
export function comparePosition(record: unknown, check: unknown, opts: { semanticAllowed: boolean; region: string }): PositionComparison {
  const [r, c] = [comparableText(record), comparableText(check)];
  if (r === undefined || c === undefined) return { outcome: 'failed', reason: 'missing' };
  if (canonicalText(r) === '' || canonicalText(c) === '') return { outcome: 'failed', reason: 'empty' };
  if (exactMatch(r, c, opts.region)) return { outcome: 'exact' };
  if (opts.semanticAllowed && semanticMatch(r, c, opts.region)) return { outcome: 'semantic' };
  return { outcome: 'failed', reason: 'mismatch' };
}
