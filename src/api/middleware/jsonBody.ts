import type { Middleware } from 'koa';
import { jsonTextNestedDeeperThan, MAX_JSON_DEPTH } from '../../domain/jsonNesting.js';
import { badRequest, payloadTooLarge } from '../errors.js';

export const MAX_BODY_BYTES = 1_048_576;
export const NESTED_TOO_DEEP_MESSAGE = `Request body is nested deeper than ${MAX_JSON_DEPTH} levels`;
// Past the limit the rest of an upload is read and dropped (never kept) so the client
// sees the 413; beyond this much more the connection is simply closed.
const MAX_DISCARD_BYTES = 16 * MAX_BODY_BYTES;

/**
 * Reads the raw body (kept as ctx.state.rawBody for signature checks) and parses it as
 * JSON into ctx.state.body. 413 over MAX_BODY_BYTES without holding more than that in
 * memory; 400 when it is not JSON, or when it nests arrays and objects more than
 * MAX_JSON_DEPTH levels deep (checked on the bytes before parsing: deeper values overflow
 * recursive consumers, Temporal's payload converter among them). An empty body leaves
 * ctx.state.body undefined.
 */
export function jsonBody(): Middleware {
  return async (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || ctx.method === 'OPTIONS') return next();
    const declared = Number(ctx.get('Content-Length') || 0);
    if (declared > MAX_BODY_BYTES) {
      if (declared > MAX_DISCARD_BYTES) ctx.set('Connection', 'close');
      else await discard(ctx.req);
      throw payloadTooLarge(MAX_BODY_BYTES);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        tooLarge = true;
        if (size > MAX_DISCARD_BYTES) {
          ctx.set('Connection', 'close');
          break;
        }
        continue;
      }
      chunks.push(chunk);
    }
    if (tooLarge) throw payloadTooLarge(MAX_BODY_BYTES);
    const raw = Buffer.concat(chunks, size);
    ctx.state.rawBody = raw;
    if (raw.length > 0 && raw.toString('utf8').trim() !== '') {
      if (jsonTextNestedDeeperThan(raw, MAX_JSON_DEPTH)) throw badRequest(NESTED_TOO_DEEP_MESSAGE);
      try {
        ctx.state.body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw badRequest('Invalid JSON body');
      }
    }
    return next();
  };
}

async function discard(req: NodeJS.ReadableStream): Promise<void> {
  for await (const _chunk of req as AsyncIterable<Buffer>) {
    // dropped
  }
}
