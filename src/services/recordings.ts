/**
 * Call recordings (docs/media-edge.md, "Recordings"): reading a team's recording, and signed
 * short-lived links that play it without the API key.
 *
 * A recording is the object `<team_id>/<call_id>.wav` of the recording store. The media edge
 * writes it when a call it carried ends. A simulated call has no audio, so the first read of
 * an answered one speaks its transcript (offline synthesis) and stores the result; from then
 * on it is served like any other.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { publicApiUrl, type Config } from '../config/index.js';
import type { Pool } from '../db/pool.js';
import { findCallById, findTeamCall, type CallRecord } from '../db/repositories/calls.js';
import type { Logger } from '../logging/logger.js';
import { recordingKey } from '../recordings/keys.js';
import { synthesiseConversation } from '../recordings/simulated.js';
import type { ByteRange, RecordingStore, StoredObject } from '../recordings/store.js';
import { SynthesisUnavailableError, text2waveSynthesis, type SpeechSynthesis } from '../recordings/synthesis.js';
import type { SynthesisPool } from '../recordings/synthesisPool.js';
import { notConfigured, notFound, unauthenticated } from './errors.js';

export interface RecordingServiceDeps {
  pool: Pool;
  config: Config;
  recordings: RecordingStore;
  /** Speaks the transcripts of simulated calls; default festival's text2wave. */
  speech?: SpeechSynthesis;
  /** Bounds how many of those are spoken at once and wait (a full pool throws SynthesisBusyError). */
  synthesisPool: SynthesisPool;
  logger?: Logger;
}

export const RECORDING_NOT_FOUND = 'Recording not found';
export const RECORDING_LINKS_NOT_CONFIGURED = 'Recording links are not configured for this environment';
export const RECORDING_LINK_INVALID = 'Recording link is invalid';
export const RECORDING_LINK_EXPIRED = 'Recording link has expired';
export const SIMULATED_RECORDINGS_UNAVAILABLE = 'Recordings of simulated calls cannot be synthesised in this environment';
/** The answer (503, with the same Retry-After) when the synthesis pool and its queue are full. */
export const recordingSynthesisBusy = (retryAfterSeconds: number) =>
  `Too many recordings of simulated calls are being synthesised right now; retry in ${retryAfterSeconds} seconds`;

/** The path of a call's recording. */
export const recordingPath = (callId: string) => `/api/v1/recordings/${callId}`;

/** A call's recording_url: the recording endpoint on PUBLIC_API_URL. */
export function recordingUrl(config: Pick<Config, 'PUBLIC_API_URL' | 'PORT'>, callId: string): string {
  return `${publicApiUrl(config)}${recordingPath(callId)}`;
}

/**
 * Whether the call is a simulated one whose recording is made on first read: answered
 * (it has a transcript) and analysed with a recording_url, as analysis sets for it.
 */
export function isSynthesisedRecording(call: Pick<CallRecord, 'provider' | 'analysed_at' | 'recording_url' | 'conversation'>): boolean {
  return call.provider === 'simulator' && call.analysed_at !== null && call.recording_url !== null && call.conversation.length > 0;
}

let defaultSpeech: SpeechSynthesis | undefined;
/** Syntheses under way or waiting in the pool, by key: concurrent first reads of one call make it once and take one place. */
const synthesising = new Map<string, Promise<void>>();

async function synthesise(deps: RecordingServiceDeps, call: CallRecord, key: string): Promise<void> {
  let pending = synthesising.get(key);
  if (!pending) {
    const speech = deps.speech ?? (defaultSpeech ??= text2waveSynthesis());
    pending = deps.synthesisPool
      .run(async () => deps.recordings.put(key, await synthesiseConversation(call.conversation, speech), 'audio/wav'))
      .finally(() => synthesising.delete(key));
    synthesising.set(key, pending);
  }
  try {
    await pending;
  } catch (err) {
    if (err instanceof SynthesisUnavailableError) {
      deps.logger?.error({ err: err.message, callId: call.id }, 'simulated recording not synthesised');
      throw notConfigured(SIMULATED_RECORDINGS_UNAVAILABLE);
    }
    throw err;
  }
}

/** The call's recording (or one range of it): stored, or synthesised now for a simulated call. */
async function openRecordingOf(deps: RecordingServiceDeps, call: CallRecord, range?: ByteRange): Promise<StoredObject> {
  const key = recordingKey(call.team_id, call.id);
  const stored = await deps.recordings.get(key, range);
  if (stored) return stored;
  if (!isSynthesisedRecording(call)) throw notFound(RECORDING_NOT_FOUND);
  await synthesise(deps, call, key);
  const made = await deps.recordings.get(key, range);
  if (!made) throw notFound(RECORDING_NOT_FOUND);
  return made;
}

/**
 * The team's recording of a call. Another team's call, an unknown one and a call without a
 * recording are all not found, with one message. A range outside the recording throws
 * RangeNotSatisfiableError.
 */
export async function openTeamRecording(deps: RecordingServiceDeps, teamId: string, callId: string, range?: ByteRange): Promise<StoredObject> {
  const call = await findTeamCall(deps.pool, teamId, callId);
  if (!call) throw notFound(RECORDING_NOT_FOUND);
  return openRecordingOf(deps, call, range);
}

function linkSecret(config: Config): string {
  if (!config.RECORDING_LINK_SECRET) throw notConfigured(RECORDING_LINKS_NOT_CONFIGURED);
  return config.RECORDING_LINK_SECRET;
}

/** base64url HMAC-SHA256 of `recording:<call_id>:<expires>` under RECORDING_LINK_SECRET. */
export function recordingLinkSignature(secret: string, callId: string, expires: number): string {
  return createHmac('sha256', secret).update(`recording:${callId.toLowerCase()}:${expires}`).digest('base64url');
}

export interface RecordingLink {
  url: string;
  expiresAt: Date;
}

/**
 * A link that plays the team's recording without the API key until it expires
 * (RECORDING_LINK_TTL_SECONDS): `<PUBLIC_API_URL>/api/v1/recordings/<call_id>/audio?expires=<unix>&signature=<sig>`.
 */
export async function createRecordingLink(deps: RecordingServiceDeps, teamId: string, callId: string, now = Date.now()): Promise<RecordingLink> {
  const secret = linkSecret(deps.config);
  const call = await findTeamCall(deps.pool, teamId, callId);
  if (!call) throw notFound(RECORDING_NOT_FOUND);
  const exists = isSynthesisedRecording(call) || (await deps.recordings.exists(recordingKey(call.team_id, call.id)));
  if (!exists) throw notFound(RECORDING_NOT_FOUND);
  const expires = Math.floor(now / 1000) + deps.config.RECORDING_LINK_TTL_SECONDS;
  const signature = recordingLinkSignature(secret, call.id, expires);
  return {
    url: `${recordingUrl(deps.config, call.id)}/audio?expires=${expires}&signature=${signature}`,
    expiresAt: new Date(expires * 1000),
  };
}

/**
 * The recording a signed link names. The signature is checked before anything is read, and
 * is what authorises the read: it was made for this call's team, so the call is looked up
 * by id alone. A forged or altered link is invalid; a genuine one past its time expired.
 */
export async function openLinkedRecording(
  deps: RecordingServiceDeps,
  callId: string,
  link: { expires: number; signature: string },
  range?: ByteRange,
  now = Date.now(),
): Promise<StoredObject> {
  const expected = Buffer.from(recordingLinkSignature(linkSecret(deps.config), callId, link.expires));
  const given = Buffer.from(link.signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw unauthenticated(RECORDING_LINK_INVALID);
  if (link.expires * 1000 <= now) throw unauthenticated(RECORDING_LINK_EXPIRED);
  const call = await findCallById(deps.pool, callId.toLowerCase());
  if (!call) throw notFound(RECORDING_NOT_FOUND);
  return openRecordingOf(deps, call, range);
}

/**
 * Waits briefly for a recording the media edge may still be writing: asks the store now and
 * after each delay. True as soon as it exists.
 */
export async function awaitRecording(store: RecordingStore, key: string, delaysMs: readonly number[]): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    if (await store.exists(key)) return true;
    if (attempt >= delaysMs.length) return false;
    await new Promise((resolve) => setTimeout(resolve, delaysMs[attempt]));
  }
}
