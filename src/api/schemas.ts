import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

extendZodWithOpenApi(z);

export { z };

/** Shapes every endpoint shares. Resource schemas live next to their routes. */
export const errorResponse = z
  .object({ success: z.literal(false), message: z.string() })
  .openapi('Error', { description: 'Every failure: success false and a message naming the problem.' });

export const uuidString = (field: string) =>
  z.string({ message: `${field} must be a string` }).uuid({ message: `${field} must be a UUID` });

export const isoDateTime = z.string().datetime({ offset: true }).openapi({ format: 'date-time', example: '2026-01-01T12:00:00.000Z' });
