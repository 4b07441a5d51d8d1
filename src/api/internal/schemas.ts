import { z } from '../schemas.js';
import { EDGE_NOTE_KINDS } from '../../services/callEvents.js';

export const redeemWebSessionBody = z
  .object({
    session_token: z
      .string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') })
      .min(1, 'must not be empty')
      .max(512, 'must be at most 512 characters')
      .openapi({ description: 'The X-Session-Token header of the browser’s INVITE' }),
  })
  .openapi('RedeemWebSessionRequest');

/** The call's trace for the edge's requests about it (docs/observability.md, "Traces"). */
const callTraceparent = z
  .string()
  .regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)
  .optional()
  .openapi({ description: 'W3C traceparent of the call’s trace, when it was created with tracing on: the media edge sends it with the call’s events', example: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });

export const redeemWebSessionResponse = z
  .object({ success: z.literal(true), call_id: z.string().uuid(), script_id: z.string().uuid(), contact_id: z.string().uuid(), traceparent: callTraceparent })
  .openapi('RedeemWebSessionResponse');

export const webCallIdParams = z.object({ call_id: z.string().openapi({ description: 'The web call id (UUID), the INVITE’s X-Call-Id' }) });

export const webCallClaimBody = z
  .object({
    claim_id: z
      .string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') })
      .uuid('must be a UUID')
      .openapi({ description: 'Chosen by the media edge for this INVITE; its release names it' }),
  })
  .openapi('WebCallClaimRequest');

export const webCallClaimResponse = z
  .object({ success: z.literal(true), call_id: z.string().uuid(), team_id: z.string().uuid(), script_id: z.string().uuid(), contact_id: z.string().uuid(), traceparent: callTraceparent })
  .openapi('WebCallClaimResponse');

export const webCallReleaseResponse = z
  .object({ success: z.literal(true), call_id: z.string().uuid(), released: z.boolean().openapi({ description: 'false when the claim was not held (released already, or another’s)' }) })
  .openapi('WebCallReleaseResponse');

export const edgeNoteBody = z
  .object({
    kind: z.enum(EDGE_NOTE_KINDS, { error: (issue) => (issue.input === undefined ? undefined : `must be one of ${EDGE_NOTE_KINDS.join(', ')}`) }),
    text: z
      .string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') })
      .min(1, 'must not be empty')
      .max(1000, 'must be at most 1000 characters'),
  })
  .openapi('EdgeSystemNoteRequest');

export const edgeNoteResponse = z
  .object({ success: z.literal(true), call_id: z.string().uuid(), added: z.boolean().openapi({ description: 'false when the call already had a note of this kind' }) })
  .openapi('EdgeSystemNoteResponse');

export const phoneCallIdParams = z.object({ call_id: z.string().openapi({ description: 'The outbound call id (UUID)' }) });

export const phoneDialClaimBody = z
  .object({
    claim_id: z
      .string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') })
      .uuid('must be a UUID')
      .openapi({ description: 'The claiming media edge instance (the same for every retry on that edge)' }),
    media_task_queue: z
      .string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') })
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .openapi({ description: 'The claiming edge’s own task queue (the call’s speech runs there once answered)' }),
  })
  .openapi('PhoneDialClaimRequest');

export const phoneDialClaimResponse = z
  .object({
    success: z.literal(true),
    call_id: z.string().uuid(),
    team_id: z.string().uuid(),
    first: z.boolean().openapi({ description: 'true when this request took the claim (the edge sends the INVITE); false for a repeat of the same claim' }),
  })
  .openapi('PhoneDialClaimResponse');
