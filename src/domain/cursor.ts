/**
 * Keyset cursors that are date-times (docs/api.md "Paging": `meta.next_cursor` is a date-time or null).
 *
 * Paging newest first by a timestamp alone would skip or repeat rows that share one, so the
 * cursor also carries the row's insertion sequence. It does so inside the date-time itself:
 * RFC 3339 allows any number of fraction digits, so
 *
 *   2026-01-01T12:00:00.123456000000004711Z
 *                       ^^^^^^ microseconds of the row's timestamp
 *                             ^^^^^^^^^^^^ the row's sequence number (12 digits)
 *
 * is a valid RFC 3339 date-time and an exact position (V8's Date.parse reads such long
 * fractions loosely: the cursor is a position, not an instant to compute with). A plain
 * date-time sent as cursor means "rows strictly older than this instant".
 */

export interface KeysetPosition {
  /** ISO timestamp with microseconds, e.g. 2026-01-01T12:00:00.123456Z. */
  at: string;
  /** Tie-breaker within one timestamp; undefined for a plain date-time cursor. */
  seq?: number;
}

/** Every cursor the service reads: a date-time with a zone (the exact form above is one). Also the OpenAPI pattern of `cursor`. */
export const CURSOR_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

const EXACT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})(\d{12})Z$/;
const SEQ_DIGITS = 12;

/** The cursor for a row, from its timestamp in epoch microseconds and its sequence number. */
export function encodeCursor(epochMicros: number | bigint, seq: number | bigint): string {
  const micros = BigInt(epochMicros);
  const ms = Number(micros / 1000n);
  const subMs = Number(((micros % 1000n) + 1000n) % 1000n);
  const base = new Date(ms).toISOString().slice(0, 23); // YYYY-MM-DDTHH:MM:SS.mmm
  return `${base}${String(subMs).padStart(3, '0')}${String(seq).padStart(SEQ_DIGITS, '0')}Z`;
}

/** Parses a cursor; undefined when it is not a date-time at all. */
export function decodeCursor(cursor: string): KeysetPosition | undefined {
  const exact = EXACT.exec(cursor);
  if (exact) return { at: `${exact[1]}.${exact[2]}Z`, seq: Number(exact[3]) };
  if (!CURSOR_PATTERN.test(cursor)) return undefined;
  const time = Date.parse(cursor);
  if (Number.isNaN(time)) return undefined;
  return { at: new Date(time).toISOString() };
}
