import type { Context } from 'koa';
import { RangeNotSatisfiableError, type ByteRange, type StoredObject } from '../../recordings/store.js';
import { SynthesisBusyError } from '../../recordings/synthesisPool.js';
import {
  createRecordingLink,
  openLinkedRecording,
  openTeamRecording,
  recordingSynthesisBusy,
  type RecordingServiceDeps,
} from '../../services/recordings.js';
import { isUseCaseError } from '../../services/errors.js';
import type { AppDeps } from '../deps.js';
import { ApiError, forbidden } from '../errors.js';
import { defineRoute, type RouteResult } from '../route.js';
import { audioBody, recordingLinkQuery, recordingLinkResponse, recordingParams } from './schemas.js';

/**
 * The one byte range of a Range header (`bytes=a-b`, `bytes=a-`, `bytes=-n`). Anything else
 * (several ranges, other units, nonsense) is ignored and the whole recording is sent, as
 * HTTP allows.
 */
export function parseRange(header: string | undefined): ByteRange | undefined {
  const m = header ? /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header) : null;
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  const [start, end] = [m[1] === '' ? undefined : Number(m[1]), m[2] === '' ? undefined : Number(m[2])];
  if ((start !== undefined && !Number.isSafeInteger(start)) || (end !== undefined && !Number.isSafeInteger(end))) return undefined;
  if (start === undefined) return { suffix: end! };
  if (end !== undefined && end < start) return undefined;
  return { start, end };
}

function serviceDeps(deps: AppDeps): RecordingServiceDeps {
  if (!deps.recordings || !deps.synthesisPool) throw new Error('AppDeps.recordings or synthesisPool is missing: build the app with createApp()');
  return { pool: deps.pool, config: deps.config, recordings: deps.recordings, speech: deps.speech, synthesisPool: deps.synthesisPool, logger: deps.logger };
}

/** Opens the recording, answering 416 for a range outside it and 503 when a simulated call's recording cannot be made now. */
async function opened(ctx: Context, open: (range?: ByteRange) => Promise<StoredObject>): Promise<StoredObject> {
  try {
    return await open(parseRange(ctx.get('Range') || undefined));
  } catch (err) {
    if (err instanceof RangeNotSatisfiableError) {
      throw new ApiError(416, `Range not satisfiable: the recording has ${err.size} bytes`, {}, { 'Content-Range': `bytes */${err.size}` });
    }
    if (err instanceof SynthesisBusyError) {
      throw new ApiError(503, recordingSynthesisBusy(err.retryAfterSeconds), {}, { 'Retry-After': String(err.retryAfterSeconds) });
    }
    throw err;
  }
}

/** The audio answer: 200 whole, or 206 with Content-Range; streamed from the store. */
function audio(callId: string, object: StoredObject, cacheControl: string): RouteResult {
  const headers: Record<string, string> = {
    'Content-Type': object.contentType,
    'Content-Length': String(object.end - object.start + 1),
    'Accept-Ranges': 'bytes',
    'Cache-Control': cacheControl,
    'Content-Disposition': `inline; filename="${callId}.wav"`,
    'X-Content-Type-Options': 'nosniff',
  };
  if (object.partial) headers['Content-Range'] = `bytes ${object.start}-${object.end}/${object.size}`;
  return { status: object.partial ? 206 : 200, body: object.stream, headers };
}

/** The 503 of the two reads: a simulated call's first read when the synthesis pool is full. */
const synthesisBusy = {
  description:
    'Too many recordings of simulated calls are being synthesised: the first read of such a call found every synthesis slot busy and the queue full (RECORDING_SYNTHESIS_CONCURRENCY, RECORDING_SYNTHESIS_MAX_QUEUED). Nothing was made; retry after Retry-After seconds.',
  headers: { 'Retry-After': { description: 'Whole seconds to wait before reading again.', schema: { type: 'integer' as const, minimum: 1 } } },
};

const rangeNote =
  'Send `Range: bytes=<start>-<end>` (or `<start>-`, `-<suffix>`) for part of it: 206 with Content-Range; a range outside the recording is 416 with `Content-Range: bytes */<size>`.';

export const recordingRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/recordings/{call_id}',
    operationId: 'getRecording',
    summary: 'The recording of a call (WAV)',
    description: [
      'The recording `recording_url` of get-call-result names: 16-bit PCM WAV, 16 kHz, stereo with the caller on the left and the agent on the right. A simulated call that was answered has one, spoken from its transcript on first request.',
      rangeNote,
    ].join('\n\n'),
    tags: ['Recordings'],
    auth: 'apiKey',
    request: { params: recordingParams },
    responses: {
      200: { description: 'The whole recording', contentType: 'audio/wav', schema: audioBody },
      206: { description: 'The requested range of the recording', contentType: 'audio/wav', schema: audioBody },
      400: { description: 'call_id is not a UUID' },
      404: { description: 'Recording not found: the call is unknown, another team’s, or has no recording' },
      416: { description: 'The range lies outside the recording' },
      503: synthesisBusy,
    },
    handler: async ({ params, auth, ctx }, deps) => {
      const callId = params.call_id.toLowerCase();
      const object = await opened(ctx, (range) => openTeamRecording(serviceDeps(deps), auth.teamId, callId, range));
      return audio(callId, object, 'private, no-cache');
    },
  }),

  defineRoute({
    method: 'post',
    path: '/api/v1/recordings/{call_id}/link',
    operationId: 'createRecordingLink',
    summary: 'A signed, short-lived link that plays the recording without the API key',
    description:
      'For an `<audio>` element or a download in a browser. The link expires after RECORDING_LINK_TTL_SECONDS (default 15 minutes); a tampered or expired link answers 403.',
    tags: ['Recordings'],
    auth: 'apiKey',
    request: { params: recordingParams },
    responses: {
      200: { description: 'The link and when it expires', schema: recordingLinkResponse },
      400: { description: 'call_id is not a UUID' },
      404: { description: 'Recording not found: the call is unknown, another team’s, or has no recording' },
      500: { description: 'Recording links are not configured (RECORDING_LINK_SECRET unset)' },
    },
    handler: async ({ params, auth }, deps) => {
      const link = await createRecordingLink(serviceDeps(deps), auth.teamId, params.call_id.toLowerCase());
      return { body: { success: true, url: link.url, expires_at: link.expiresAt.toISOString() } };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/api/v1/recordings/{call_id}/audio',
    operationId: 'getRecordingByLink',
    summary: 'The recording, through a signed link (no API key)',
    description: ['Made by POST /api/v1/recordings/{call_id}/link; the query is the link’s and is checked as a whole.', rangeNote].join('\n\n'),
    tags: ['Recordings'],
    auth: 'public',
    request: { params: recordingParams, query: recordingLinkQuery },
    responses: {
      200: { description: 'The whole recording', contentType: 'audio/wav', schema: audioBody },
      206: { description: 'The requested range of the recording', contentType: 'audio/wav', schema: audioBody },
      400: { description: 'call_id, expires or signature malformed or missing' },
      403: { description: 'Recording link is invalid (signature does not match) or has expired' },
      404: { description: 'Recording not found' },
      416: { description: 'The range lies outside the recording' },
      500: { description: 'Recording links are not configured (RECORDING_LINK_SECRET unset)' },
      503: synthesisBusy,
    },
    handler: async ({ params, query, ctx }, deps) => {
      const callId = params.call_id.toLowerCase();
      const link = { expires: Number(query.expires), signature: query.signature };
      try {
        const object = await opened(ctx, (range) => openLinkedRecording(serviceDeps(deps), callId, link, range));
        // A link is good until it expires; a browser may keep what it fetched that long.
        return audio(callId, object, `private, max-age=${Math.max(0, link.expires - Math.floor(Date.now() / 1000))}`);
      } catch (err) {
        // A link is a credential presented without an API key: refusing it is 403, as for a presigned URL.
        if (isUseCaseError(err, 'unauthenticated')) throw forbidden(err.message);
        throw err;
      }
    },
  }),
];
