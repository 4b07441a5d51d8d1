/**
 * Where recordings live: one interface, a store of local files (the default) and an
 * S3-compatible one (RECORDINGS_STORE=s3). Keys are `<team_id>/<call_id>.wav` (keys.ts).
 */
import type { Readable } from 'node:stream';

/** One byte range as HTTP asks for it: `bytes=start-end`, `bytes=start-` or `bytes=-suffix`. */
export type ByteRange = { start: number; end?: number } | { suffix: number };

/** An object read from a store, whole or one range of it. */
export interface StoredObject {
  stream: Readable;
  /** Total bytes of the object. */
  size: number;
  /** First and last byte of the object in `stream` (inclusive); end is start - 1 for an empty object. */
  start: number;
  end: number;
  /** True when a range was asked for and answered (HTTP 206). */
  partial: boolean;
  contentType: string;
}

/** Options of one write. */
export interface PutOptions {
  /**
   * Write only if no object has the key, atomically: a call's recording is never overwritten.
   * A taken key fails the write with RecordingExistsError (S3 answers If-None-Match: * with
   * 412 PreconditionFailed) and leaves the object as it was.
   */
  ifAbsent?: boolean;
}

export interface RecordingStore {
  readonly kind: 'local' | 's3';
  /**
   * Writes the object whole or not at all (a reader never sees half of it). A stream body
   * should come with its `size` in bytes: the S3 store then streams it; without one it is
   * read into memory first.
   */
  put(key: string, body: Buffer | Readable, contentType: string, size?: number, options?: PutOptions): Promise<void>;
  /** The object (or one range of it); undefined when there is no such key. */
  get(key: string, range?: ByteRange): Promise<StoredObject | undefined>;
  exists(key: string): Promise<boolean>;
  /** Removes the object; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
}

/** A write with `ifAbsent` found the key taken. */
export class RecordingExistsError extends Error {
  constructor(readonly key: string) {
    super(`recording ${key} already exists`);
    this.name = 'RecordingExistsError';
  }
}

/** The range asked for lies outside the object (HTTP 416). */
export class RangeNotSatisfiableError extends Error {
  constructor(readonly size: number) {
    super(`range not satisfiable: the object has ${size} bytes`);
    this.name = 'RangeNotSatisfiableError';
  }
}

/** The inclusive byte positions `range` names in an object of `size` bytes (RFC 9110 §14.1.2). */
export function resolveRange(range: ByteRange, size: number): { start: number; end: number } {
  if ('suffix' in range) {
    if (range.suffix <= 0 || size === 0) throw new RangeNotSatisfiableError(size);
    return { start: Math.max(0, size - range.suffix), end: size - 1 };
  }
  if (range.start >= size || (range.end !== undefined && range.end < range.start)) throw new RangeNotSatisfiableError(size);
  return { start: range.start, end: Math.min(range.end ?? size - 1, size - 1) };
}

/** The Range header value of `range`. */
export function rangeHeader(range: ByteRange): string {
  return 'suffix' in range ? `bytes=-${range.suffix}` : `bytes=${range.start}-${range.end ?? ''}`;
}
