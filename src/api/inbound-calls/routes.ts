import { acceptInboundCall, type InboundRefusal } from '../../services/inboundCalls.js';
import { UseCaseError } from '../../services/errors.js';
import { defineRoute } from '../route.js';
import { inboundCallBody, inboundCallResponse, inboundRefusalResponse } from './schemas.js';

/**
 * The SIP final response the media edge answers a refused INVITE with (docs/telephony.md,
 * "Inbound calls"). The edge answers what the body says, so the mapping lives here, once.
 */
const SIP_STATUS_OF: Record<InboundRefusal, number> = {
  unknown_number: 404,
  no_inbound_script: 480,
  at_ceiling: 486,
  caller_number_invalid: 433,
};

/** The media edge's question when an INVITE arrives from the SIP trunk. */
export const inboundCallRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/inbound-calls',
    operationId: 'acceptInboundCall',
    summary: 'Take an incoming phone call (media edge)',
    description:
      'Internal (Bearer MEDIA_EDGE_SECRET). Sent by the media edge for an INVITE from the SIP trunk, before it answers: the number called decides the team and its inbound script, and the team’s concurrent-call ceiling whether the call may start now. A taken call is `type: "inbound"`, in progress, holding a slot; its workflow `call-<call_id>` waits for the edge’s `answered` event (POST /internal/v1/calls/{call_id}/events) and runs the script through the edge. A refusal records nothing and names the SIP answer in `sip_status`: 404 unknown number, 480 a number without an inbound script, 486 the team at its ceiling, 433 a caller without a usable number. One call per `sip_call_id`: a repeated request answers the same call.',
    tags: ['Internal'],
    auth: 'mediaEdge',
    request: { body: inboundCallBody, bodyRequired: true },
    responses: {
      201: { description: 'The call now exists: the edge answers the INVITE', schema: inboundCallResponse },
      200: { description: 'The call this Call-ID made already (a retransmitted INVITE, a retried request)', schema: inboundCallResponse },
      400: { description: 'Malformed body (the message names the field), or the caller’s number is not a phone number (`sip_status` 433)' },
      401: { description: 'Missing or wrong media edge secret' },
      404: { description: 'No team has the number (`sip_status` 404)', schema: inboundRefusalResponse },
      409: { description: 'The number has no inbound script (`sip_status` 480); or the Call-ID names another call', schema: inboundRefusalResponse },
      429: { description: 'The team is at its concurrent-call ceiling (`sip_status` 486, with `max_concurrent`); nothing is recorded', schema: inboundRefusalResponse },
    },
    handler: async ({ body }, deps) => {
      try {
        const call = await acceptInboundCall(deps, { toNumber: body.to_number, fromNumber: body.from_number, sipCallId: body.sip_call_id });
        return {
          status: call.created ? 201 : 200,
          body: { success: true, call_id: call.callId, team_id: call.teamId, script_id: call.scriptId, contact_id: call.contactId, status: call.status, created: call.created },
        };
      } catch (err) {
        if (err instanceof UseCaseError && err.code && err.code in SIP_STATUS_OF) {
          const code = err.code as InboundRefusal;
          throw new UseCaseError(err.kind, err.message, { ...err.extra, code, sip_status: SIP_STATUS_OF[code] }, code);
        }
        throw err;
      }
    },
  }),
];
