import { notFound } from '../errors.js';
import { defineRoute } from '../route.js';
import { z } from '../schemas.js';
import { ASSET_NAMES, ASSETS_PATH, DOCS_PATH, PAGE, SECURITY_HEADERS, asset } from './assets.js';

/** If-None-Match names this ETag (a list, or `*`). */
function notModified(ifNoneMatch: string, etag: string): boolean {
  return ifNoneMatch.split(',').some((tag) => {
    const value = tag.trim();
    return value === '*' || value === etag || value === `W/${etag}`;
  });
}

/** GET /api/v1/docs, the API reference page, and the files it loads. Unauthenticated. */
export const docsRoutes = [
  defineRoute({
    method: 'get',
    path: DOCS_PATH,
    operationId: 'getApiReference',
    summary: 'This API reference as a web page',
    description: `Unauthenticated. An HTML page that renders /api/v1/openapi.json with Swagger UI. Every file it loads comes from ${ASSETS_PATH}; its Content-Security-Policy allows only this origin.`,
    tags: ['Meta'],
    auth: 'public',
    responses: { 200: { description: 'The page', contentType: 'text/html', schema: z.string() } },
    handler: async () => ({
      body: PAGE,
      headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache', ...SECURITY_HEADERS },
    }),
  }),
  defineRoute({
    method: 'get',
    path: `${ASSETS_PATH}/{file}`,
    operationId: 'getApiReferenceAsset',
    summary: 'A file of the API reference page (script, stylesheet, icon)',
    description: 'Unauthenticated. Answers with an ETag; a request whose If-None-Match names it answers 304.',
    tags: ['Meta'],
    auth: 'public',
    request: {
      params: z.object({ file: z.string().openapi({ description: `One of: ${ASSET_NAMES.join(', ')}`, example: 'swagger-ui.css' }) }),
    },
    responses: {
      200: { description: 'The file, as text/javascript, text/css or image/png', contentType: ['text/javascript', 'text/css', 'image/png'], schema: z.string().openapi({ format: 'binary' }) },
      304: { description: 'Not modified: If-None-Match names the current ETag' },
      404: { description: 'No such file (message Not found)' },
    },
    handler: async ({ params, ctx }) => {
      const pending = asset(params.file);
      if (!pending) throw notFound('Not found');
      const file = await pending;
      const headers = { 'Content-Type': file.contentType, ETag: file.etag, 'Cache-Control': 'public, max-age=3600', ...SECURITY_HEADERS };
      if (notModified(ctx.get('If-None-Match'), file.etag)) return { status: 304, body: '', headers };
      return { body: file.body, headers };
    },
  }),
];
