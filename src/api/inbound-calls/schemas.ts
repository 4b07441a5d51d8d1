import { z } from '../schemas.js';

const text = (max: number, description: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .openapi({ description });

export const inboundCallBody = z
  .object({
    to_number: text(64, 'The number called: the user part of the INVITE’s Request-URI (E.164 or local format)'),
    from_number: text(64, 'The caller’s number: the user part of the INVITE’s From (E.164 or local format)'),
    sip_call_id: text(256, 'The INVITE’s Call-ID: one call per Call-ID, ever'),
  })
  .openapi('InboundCallRequest');

export const inboundCallResponse = z
  .object({
    success: z.literal(true),
    call_id: z.string().uuid(),
    team_id: z.string().uuid(),
    script_id: z.string().uuid(),
    contact_id: z.string().uuid(),
    status: z.string().openapi({ description: '`in-progress` for a call the edge may answer; a repeated request for a call that has ended since names its terminal status' }),
    created: z.boolean().openapi({ description: 'false when the Call-ID had its call already (a retransmitted INVITE, a retried request)' }),
  })
  .openapi('InboundCallResponse');

export const inboundRefusalResponse = z
  .object({
    success: z.literal(false),
    message: z.string(),
    code: z.enum(['unknown_number', 'no_inbound_script', 'at_ceiling', 'caller_number_invalid']),
    sip_status: z.number().int().openapi({ description: 'The SIP final response the edge answers the INVITE with' }),
    max_concurrent: z.number().int().optional().openapi({ description: 'With at_ceiling: the team’s ceiling' }),
  })
  .openapi('InboundCallRefusal');
