import { defineRoute } from '../route.js';
import { idempotentId } from '../middleware/idempotency.js';
import { objectView, upsertObject } from '../../services/objects.js';
import { upsertObjectBody, upsertObjectResponse } from './schemas.js';

export const objectRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/upsert-object',
    operationId: 'upsertObject',
    summary: 'Create or update an object',
    description:
      'Finds the object of the type by upsert_key (or, without one, by $.external_ids.<system>.property_id in data, then $.id) and replaces its data, or creates it. 201 created, 200 updated. unique_key: another object of the type with that value at that path answers 409.',
    tags: ['Objects'],
    auth: 'apiKey',
    request: { body: upsertObjectBody, bodyRequired: true },
    responses: {
      200: { description: 'Updated', schema: upsertObjectResponse },
      201: { description: 'Created', schema: upsertObjectResponse },
      400: { description: 'Missing or invalid field, malformed JSON path, data failing a strict type' },
      404: { description: 'Object type or parent_id not found' },
      409: { description: 'unique_key matches another object of the type' },
    },
    handler: async ({ body, auth, ctx }, deps) => {
      const result = await upsertObject(deps.pool, auth.teamId, body, idempotentId(ctx));
      return {
        status: result.action === 'created' ? 201 : 200,
        body: { success: true, object_id: result.object.id, object: objectView(result.object), action: result.action, upsert_key: result.upsert_key },
      };
    },
  }),
];
