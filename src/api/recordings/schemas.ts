import { isUuid } from '../../domain/ids.js';
import { z } from '../schemas.js';

export const recordingParams = z.object({
  call_id: z.string().refine(isUuid, 'call_id must be a UUID').openapi({ format: 'uuid', description: 'The call id' }),
});

export const recordingLinkQuery = z.object({
  expires: z.string().regex(/^\d{1,12}$/, 'expires must be a Unix time in seconds').openapi({ description: 'Unix time (seconds) the link stops working' }),
  signature: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'signature must be base64url').openapi({ description: 'base64url HMAC-SHA256 made by the service' }),
});

export const recordingLinkResponse = z
  .object({
    success: z.literal(true),
    url: z.string().openapi({ format: 'uri', description: 'Plays the recording without the API key until expires_at' }),
    expires_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('RecordingLink');

export const audioBody = z.string().openapi({ format: 'binary', description: '16-bit PCM WAV, 16 kHz, stereo: caller left, agent right' });
