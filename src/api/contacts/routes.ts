import { defineRoute } from '../route.js';
import { createContact, getContactByPhone, normalizeContactInput, normalizePhoneField } from '../../services/contacts.js';
import { contactIdResponse, createContactBody, getContactParams, getContactResponse } from './schemas.js';

export const contactRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/create-contact',
    operationId: 'createContact',
    summary: 'Create a contact',
    description: 'The phone number is normalised to E.164 and is unique per team: a second contact with the same normalised number answers 409.',
    tags: ['Contacts'],
    auth: 'apiKey',
    request: { body: createContactBody, bodyRequired: true },
    responses: {
      201: { description: 'Created', schema: contactIdResponse },
      400: { description: 'Missing or invalid field, invalid phone number' },
      409: { description: 'Contact already exists (the body carries its contact_id)' },
    },
    handler: async ({ body, auth }, deps) => {
      const fields = normalizeContactInput(body, deps.config.DEFAULT_PHONE_REGION);
      const contact = await createContact(deps.pool, auth.teamId, fields);
      return { status: 201, body: { success: true, contact_id: contact.id } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/get-contact/{phone_number}',
    operationId: 'getContact',
    summary: 'Get a contact by phone number',
    tags: ['Contacts'],
    auth: 'apiKey',
    request: { params: getContactParams },
    responses: {
      200: { description: 'The contact with every field and its linked objects', schema: getContactResponse },
      400: { description: 'Invalid phone number' },
      404: { description: 'The team has no contact with that number' },
    },
    handler: async ({ params, auth }, deps) => {
      const e164 = normalizePhoneField(params.phone_number, deps.config.DEFAULT_PHONE_REGION);
      return { body: { success: true, contact: await getContactByPhone(deps.pool, auth.teamId, e164) } };
    },
  }),
];
