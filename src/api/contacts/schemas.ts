import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from '../../domain/storableText.js';
import { canonicalTimeZone, TIME_ZONE_NAME_PATTERN } from '../../domain/timeZones.js';
import { phoneNumberDocument, z } from '../schemas.js';

const text = (max: number) => z.string().max(max, `must be at most ${max} characters`).refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);
const optionalText = (max: number) => text(max).nullable().optional();
// zod's own email pattern as a regex check, so the document says exactly it (format email would admit more, or less).
const emailField = z
  .string({ message: 'must be an email address' })
  .regex(z.regexes.email, 'must be an email address')
  .max(320, 'must be at most 320 characters');

/** The optional contact fields (docs/contacts-and-lists.md "Contacts"); null is accepted and means "not sent". */
export const contactOptionalFields = {
  last_name: optionalText(200),
  email: emailField.nullable().optional(),
  address: optionalText(1000),
  location: optionalText(500),
  gender: optionalText(50),
  age: z.number({ message: 'must be a number' }).int('must be a whole number').min(0, 'must be between 0 and 150').max(150, 'must be between 0 and 150').nullable().optional(),
  title: optionalText(200),
  timezone: z
    .string({ message: 'must be an IANA time zone such as Europe/Paris' })
    .transform((v, ctx) => {
      const zone = canonicalTimeZone(v.trim());
      if (!zone) {
        ctx.addIssue({ code: 'custom', message: 'must be an IANA time zone such as Europe/Paris' });
        return z.NEVER;
      }
      return zone;
    })
    .nullable()
    .optional()
    .openapi({
      type: ['string', 'null'],
      pattern: TIME_ZONE_NAME_PATTERN.source,
      maxLength: 64,
      examples: ['Europe/Paris', 'America/New_York'],
      description: 'IANA time zone of the contact, one the service’s time-zone database has (which a pattern cannot say); without it, the zone is derived from the number, else the team default (docs/calls.md)',
    }),
};

export const phoneNumberField = z
  .string()
  .min(1, 'must not be empty')
  .max(40, 'must be at most 40 characters')
  .openapi(phoneNumberDocument('The phone number, normalised to E.164'));

/** create-contact: phone_number and first_name required. */
export const createContactBody = z
  .strictObject({
    phone_number: phoneNumberField,
    first_name: text(200).min(1, 'must not be empty'),
    ...contactOptionalFields,
  })
  .openapi('CreateContactRequest');

/**
 * A contact given by its fields where a number alone identifies it (add-to-list, and the
 * `contact` of create-phone-call): only phone_number is required.
 */
export const contactUpsertBody = z
  .strictObject({
    phone_number: phoneNumberField,
    first_name: optionalText(200),
    ...contactOptionalFields,
  })
  .openapi('ContactFields');

export type ContactUpsertBody = z.infer<typeof contactUpsertBody>;

export const contactIdResponse = z.object({ success: z.literal(true), contact_id: z.string().uuid() }).openapi('ContactCreated');

const nullableString = z.string().nullable();

export const listContact = z
  .object({
    id: z.string().uuid(),
    team_id: z.string().uuid(),
    phone_number: nullableString,
    first_name: nullableString,
    last_name: nullableString,
    full_name: nullableString,
    email: nullableString,
    timezone: nullableString.openapi({ description: 'IANA time zone, null when not set (calls then derive one)' }),
    object_data: z.record(z.string(), z.unknown()).openapi({
      description: 'Objects linked to the contact by type name: the object data for a unique_by_contact type, an array of object data otherwise',
    }),
  })
  .openapi('ListContact');

export const contact = listContact
  .extend({
    address: nullableString,
    location: nullableString,
    gender: nullableString,
    age: z.number().int().nullable(),
    title: nullableString,
    created_at: z.string().datetime(),
    updated_at: z.string().datetime(),
  })
  .openapi('Contact');

export const getContactParams = z.object({
  phone_number: z.string().openapi(phoneNumberDocument('The phone number; its leading + percent-encoded as %2B in the path')),
});

export const getContactResponse = z.object({ success: z.literal(true), contact }).openapi('GetContactResponse');
