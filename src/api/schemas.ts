import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

extendZodWithOpenApi(z);

export { z };

/** Shapes every endpoint shares. Resource schemas live next to their routes. */
export const errorResponse = z
  .object({ success: z.literal(false), message: z.string() })
  .openapi('Error', { description: 'Every failure: success false and a message naming the problem.' });
