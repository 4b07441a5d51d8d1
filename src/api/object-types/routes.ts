import { conflict, notFound } from '../errors.js';
import { defineRoute, type RouteDefinition } from '../route.js';
import { findObjectTypeByName, insertObjectType, listObjectTypes, type ObjectTypeRecord } from '../../db/repositories/objectTypes.js';
import { byNameParams, createObjectTypeBody, listObjectTypesQuery, objectTypeCreated, objectTypeList, objectTypeResponse } from './schemas.js';
import type { z } from '../schemas.js';
import { TYPE_NAME_PATTERN } from '../../domain/objectTypes.js';

export function objectTypeView(t: ObjectTypeRecord) {
  return {
    id: t.id,
    type_name: t.type_name,
    display_name: t.display_name,
    description: t.description,
    schema: t.schema,
    validation_mode: t.validation_mode,
    unique_by_contact: t.unique_by_contact,
  };
}

function createObjectTypeRoute(path: string, operationId: string, summary: string): RouteDefinition {
  return defineRoute({
    method: 'post',
    path,
    operationId,
    summary,
    tags: ['Objects'],
    auth: 'apiKey',
    request: { body: createObjectTypeBody, bodyRequired: true },
    responses: {
      201: { description: 'Created', schema: objectTypeCreated },
      400: { description: 'Missing or invalid field' },
      409: { description: 'The team already has an object type with that type_name' },
    },
    handler: async ({ body, auth }, deps) => {
      const b = body as z.infer<typeof createObjectTypeBody>;
      const created = await insertObjectType(deps.pool, auth.teamId, {
        type_name: b.type_name,
        display_name: b.display_name ?? b.type_name,
        description: b.description ?? '',
        schema: b.schema ?? {},
        validation_mode: b.validation_mode ?? 'off',
        unique_by_contact: b.unique_by_contact ?? false,
      });
      if (!created) throw conflict(`Object type ${b.type_name} already exists`);
      return { status: 201, body: { success: true, object_type_id: created.id, object_type: objectTypeView(created) } };
    },
  });
}

export const objectTypeRoutes = [
  createObjectTypeRoute('/api/v1/object-types', 'createObjectType', 'Create an object type'),
  createObjectTypeRoute('/api/v1/create-object-type', 'createObjectTypeLegacy', 'Create an object type (older route, still accepted)'),
  defineRoute({
    method: 'get',
    path: '/api/v1/object-types',
    operationId: 'listObjectTypes',
    summary: "List the team's object types",
    description: 'Oldest first. limit: integer 1 to 500, default 100; a non-integer or out-of-range limit answers 400.',
    tags: ['Objects'],
    auth: 'apiKey',
    request: { query: listObjectTypesQuery },
    responses: { 200: { description: 'The types', schema: objectTypeList }, 400: { description: 'Invalid limit' } },
    handler: async ({ query, auth }, deps) => {
      const limit = query.limit ?? 100;
      const { types, total } = await listObjectTypes(deps.pool, auth.teamId, limit);
      return { body: { success: true, object_types: types.map(objectTypeView), meta: { limit, total } } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/object-types/by-name/{type_name}',
    operationId: 'getObjectTypeByName',
    summary: 'Get an object type by its type_name',
    tags: ['Objects'],
    auth: 'apiKey',
    request: { params: byNameParams },
    responses: { 200: { description: 'The type', schema: objectTypeResponse }, 404: { description: 'The team has no type of that name' } },
    handler: async ({ params, auth }, deps) => {
      // A name no type can have is not looked up (and cannot reach Postgres as a NUL).
      const type = TYPE_NAME_PATTERN.test(params.type_name) ? await findObjectTypeByName(deps.pool, auth.teamId, params.type_name) : undefined;
      if (!type) throw notFound('Object type not found');
      return { body: { success: true, object_type: objectTypeView(type) } };
    },
  }),
];
