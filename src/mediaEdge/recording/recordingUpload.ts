/**
 * A call's recording after the call: written to the store, retried with a doubling delay
 * while the store fails, and after the last attempt discarded, so a store that is down or a
 * full disk never leaves spool files (up to ~460 MB a call) and open handles behind. A lost
 * recording is logged at error level and noted on the call (a `recording_lost` System Note).
 * A key that is already taken is never overwritten: that recording is dropped at once.
 */
import type { Logger } from '../../logging/logger.js';
import type { CallRecorder, RecordingResult } from './callRecorder.js';
import { recordingUploadFailures } from '../../metrics/edgeMetrics.js';

export interface RecordingRetryPolicy {
  /** Writes tried in all, the first included (at least 1). */
  attempts: number;
  /** Wait before the second attempt; each later wait doubles, up to maxDelayMs. */
  firstDelayMs: number;
  maxDelayMs: number;
}

/** Six attempts over about a minute (2, 4, 8, 16, 32 s between them). */
export const DEFAULT_RECORDING_RETRY: RecordingRetryPolicy = { attempts: 6, firstDelayMs: 2000, maxDelayMs: 60_000 };

/** The wait after failed attempt `attempt` (1-based). */
export const retryDelayMs = (policy: RecordingRetryPolicy, attempt: number): number =>
  Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(attempt - 1, 30));

export type RecordingUpload =
  | { outcome: 'stored'; recording: RecordingResult; attempts: number }
  /** The key held a recording already (this one is dropped; the other is kept). */
  | { outcome: 'exists'; attempts: number; error: unknown }
  /** Every attempt failed: the audio is discarded. */
  | { outcome: 'lost'; attempts: number; error: unknown };

export interface RecordingUploadOptions {
  policy?: RecordingRetryPolicy;
  logger: Logger;
  /** Adds the System Note of a lost recording to the call; must not reject. */
  noteLost?: (text: string) => Promise<void>;
  /** Waits between attempts (tests shorten nothing else). */
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Stores the call's recording as described above; never rejects. */
export async function uploadRecording(recorder: CallRecorder, options: RecordingUploadOptions): Promise<RecordingUpload> {
  const policy = options.policy ?? DEFAULT_RECORDING_RETRY;
  const sleep = options.sleep ?? defaultSleep;
  const log = options.logger;
  const attempts = Math.max(1, policy.attempts);
  let error: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      const recording = await recorder.finish();
      log.info({ durationMs: recording.durationMs, bytes: recording.bytes, attempts: attempt }, 'recording stored');
      return { outcome: 'stored', recording, attempts: attempt };
    } catch (err) {
      error = err;
    }
    // A failed write of a taken key (or one whose answer was lost after it landed) is final.
    if (await recorder.stored().catch(() => false)) {
      await recorder.discard();
      log.error({ err: error, key: recorder.key, attempts: attempt }, 'recording not stored: its key already holds a recording, which is kept (never overwritten)');
      return { outcome: 'exists', attempts: attempt, error };
    }
    if (attempt < attempts) {
      recordingUploadFailures.inc({ result: 'retried' });
      const delayMs = retryDelayMs(policy, attempt);
      log.warn({ err: error, attempt, attempts, delayMs }, 'recording could not be stored: trying again');
      await sleep(delayMs);
    }
  }
  await recorder.discard();
  recordingUploadFailures.inc({ result: 'lost' });
  log.error({ err: error, key: recorder.key, attempts }, 'recording lost: the store failed every attempt and the spooled audio was discarded');
  await options.noteLost?.(lostNoteText(attempts));
  return { outcome: 'lost', attempts, error };
}

/** The System Note of a lost recording (the store's error stays in the edge's log: it may name hosts and paths). */
export function lostNoteText(attempts: number): string {
  return `The call's recording could not be stored after ${attempts} attempt${attempts === 1 ? '' : 's'} and was discarded.`;
}
