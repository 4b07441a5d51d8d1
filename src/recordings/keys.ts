/**
 * Object keys of recordings: `<team_id>/<call_id>.wav`. Every store accepts only keys made
 * of path segments that start with a letter or digit and contain letters, digits, `.`, `_`
 * and `-`, so a key can never climb out of its folder (`..`) or name an absolute path.
 */
const SEGMENT = '[A-Za-z0-9][A-Za-z0-9._-]{0,199}';
const KEY_RE = new RegExp(`^${SEGMENT}(/${SEGMENT}){0,7}$`);
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class InvalidRecordingKeyError extends Error {
  constructor(key: string) {
    super(`invalid recording key ${JSON.stringify(key.slice(0, 300))}`);
    this.name = 'InvalidRecordingKeyError';
  }
}

/** Throws InvalidRecordingKeyError unless `key` is a safe store key. */
export function assertRecordingKey(key: string): void {
  if (typeof key !== 'string' || !KEY_RE.test(key)) throw new InvalidRecordingKeyError(String(key));
}

/** The key of a call's recording. */
export function recordingKey(teamId: string, callId: string): string {
  if (!UUID_RE.test(teamId) || !UUID_RE.test(callId)) throw new InvalidRecordingKeyError(`${teamId}/${callId}`);
  return `${teamId.toLowerCase()}/${callId.toLowerCase()}.wav`;
}

/** The content type the local store answers for a key (it keeps no metadata beside the file). */
export function contentTypeOfKey(key: string): string {
  return key.endsWith('.wav') ? 'audio/wav' : 'application/octet-stream';
}
