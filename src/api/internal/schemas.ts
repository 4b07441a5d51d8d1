import { z } from '../schemas.js';

export const redeemWebSessionBody = z
  .object({
    session_token: z
      .string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') })
      .min(1, 'must not be empty')
      .max(512, 'must be at most 512 characters')
      .openapi({ description: 'The X-Session-Token header of the browser’s INVITE' }),
  })
  .openapi('RedeemWebSessionRequest');

export const redeemWebSessionResponse = z
  .object({ success: z.literal(true), call_id: z.string().uuid(), script_id: z.string().uuid(), contact_id: z.string().uuid() })
  .openapi('RedeemWebSessionResponse');
