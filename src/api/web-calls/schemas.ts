import { isUuid } from '../../domain/ids.js';
import { objectsMapSchema } from '../objects/schemas.js';
import { BROWSER_ONLY_DID } from '../../services/webSessions.js';
import { phoneNumberDocument, z } from '../schemas.js';

// A missing value keeps zod's own message (reported as "<field> is required").
const str = z.string({ error: (issue) => (issue.input === undefined ? undefined : 'must be a string') });

const uuidField = (description: string) =>
  str.refine(isUuid, 'must be a UUID').openapi({ format: 'uuid', description });

/** Forwarded verbatim as a SIP header value: printable, one line. */
const participantIdentity = str
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[^\x00-\x1f\x7f]*$/, 'must not contain control characters or line breaks')
  .openapi({ description: 'Label of the visitor, carried into the transcript and the X-Participant-Identity header' });

const webCallFields = {
  script_id: uuidField('The script the agent follows; must belong to the team'),
  contact_id: uuidField('The contact of the call; omitted means the team’s shared web contact').nullish(),
  participant_identity: participantIdentity.nullish(),
  objects: objectsMapSchema.nullish(),
};

export const createWebSessionBody = z
  .object({
    ...webCallFields,
    did: str.min(1, 'must not be empty').nullish().openapi(phoneNumberDocument('One of the team’s numbers (AI-side number identity on the call record); omitted means a browser-only call')),
  })
  .openapi('CreateWebSessionRequest');

/** create-web-call's did: `web` or a phone number (whose pattern it extends). */
function didOfWebCallDocument() {
  const phone = phoneNumberDocument('One of the team’s numbers (AI-side number identity)');
  return {
    ...phone,
    pattern: `^${BROWSER_ONLY_DID}$|${phone.pattern}`,
    description: `\`${BROWSER_ONLY_DID}\` (the default: a browser-only call), or ${phone.description.charAt(0).toLowerCase()}${phone.description.slice(1)}`,
    examples: [BROWSER_ONLY_DID, ...phone.examples],
  };
}

export const createWebCallBody = z
  .object({
    ...webCallFields,
    did: str
      .min(1, 'must not be empty')
      .nullish()
      .openapi(didOfWebCallDocument()),
  })
  .openapi('CreateWebCallRequest');

const headers = z
  .record(z.string(), z.string())
  .openapi({
    description: 'Call metadata: forward every entry unchanged as an extra SIP header of the INVITE (docs/web-calls.md)',
    example: { 'X-Session-Token': 'wst_…', 'X-Session-Id': '…', 'X-Script-Id': '…', 'X-Contact-Id': '…' },
  });

const bootstrap = {
  ws_url: z.string().openapi({ description: 'Secure WebSocket URL of the media edge (read it from each response; it can change)' }),
  sip_domain: z.string(),
  sip_username: z.string(),
  sip_password: z.string().openapi({ description: 'Connection bootstrap: grants nothing without the session token' }),
  target: z.string().openapi({ description: 'SIP URI the browser dials', example: 'sip:agent@edge.example.com' }),
  headers,
};

export const createWebSessionResponse = z
  .object({
    success: z.literal(true),
    session_id: z.string().uuid(),
    session_token: z.string().openapi({ description: 'Single-use; also inside headers as X-Session-Token' }),
    expires_at: z.string().openapi({ format: 'date-time', description: 'Two minutes after minting' }),
    script_id: z.string().uuid(),
    contact_id: z.string().uuid(),
    did: z.string().nullable(),
    max_concurrent: z.number().int().openapi({ description: 'The team’s concurrent-call ceiling, shared by web and phone calls' }),
    ...bootstrap,
  })
  .openapi('CreateWebSessionResponse');

export const createWebCallResponse = z
  .object({
    success: z.literal(true),
    call_id: z.string().uuid(),
    contact_id: z.string().uuid(),
    status: z.literal('scheduled'),
    script_id: z.string().uuid(),
    did: z.string().nullable(),
    ...bootstrap,
  })
  .openapi('CreateWebCallResponse');

export const concurrencyCeilingResponse = z
  .object({ success: z.literal(false), message: z.string(), max_concurrent: z.number().int() })
  .openapi('ConcurrencyCeilingReached', {
    description: 'Team is at its concurrent call limit of <n> (max_concurrent present); a rate-limit 429 has no max_concurrent',
  });
