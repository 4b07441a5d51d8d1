// The API reference page: Swagger UI (swagger-ui-dist, from node_modules) rendering
// /api/v1/openapi.json. Everything the page loads comes from this server, so the page works
// offline and its Content-Security-Policy can allow only 'self'.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

export const DOCS_PATH = '/api/v1/docs';
export const ASSETS_PATH = `${DOCS_PATH}/assets`;
const OPENAPI_PATH = '/api/v1/openapi.json';

/**
 * Only 'self'. `data:` images are the icons that swagger-ui.css inlines (they are part of
 * that file, not requests); no inline script or style, no other origin.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers of the page and of every asset. */
export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

// Starts Swagger UI on the document; a file of its own because the CSP forbids inline scripts.
// validatorUrl null: Swagger UI would otherwise send the document to an online validator.
const INITIALIZER = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '${OPENAPI_PATH}',
    dom_id: '#api-reference',
    deepLinking: true,
    validatorUrl: null,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
  });
});
`;

export const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Voice Agent Calling API reference</title>
<link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-32x32.png">
<link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css">
</head>
<body>
<div id="api-reference"></div>
<noscript>This page needs JavaScript. The API is described by <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
<script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script src="${ASSETS_PATH}/docs.js"></script>
</body>
</html>
`;

interface AssetSource {
  contentType: string;
  /** A file of swagger-ui-dist, or the text itself. */
  file?: string;
  text?: string;
}

/** Every file the page may load: a fixed list, so a path never reaches the file system. */
const SOURCES: Record<string, AssetSource> = {
  'swagger-ui-bundle.js': { contentType: 'text/javascript; charset=utf-8', file: 'swagger-ui-bundle.js' },
  'swagger-ui.css': { contentType: 'text/css; charset=utf-8', file: 'swagger-ui.css' },
  'favicon-32x32.png': { contentType: 'image/png', file: 'favicon-32x32.png' },
  'docs.js': { contentType: 'text/javascript; charset=utf-8', text: INITIALIZER },
};

export const ASSET_NAMES = Object.keys(SOURCES);

export interface Asset {
  body: Buffer;
  contentType: string;
  etag: string;
}

const loaded = new Map<string, Promise<Asset>>();

function distFolder(): string {
  return path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
}

async function load(source: AssetSource): Promise<Asset> {
  const body = source.file ? await readFile(path.join(distFolder(), source.file)) : Buffer.from(source.text ?? '', 'utf8');
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return { body, contentType: source.contentType, etag };
}

/** The named asset (read once, then kept in memory), or undefined for a name not on the list. */
export function asset(name: string): Promise<Asset> | undefined {
  const source = Object.hasOwn(SOURCES, name) ? SOURCES[name] : undefined;
  if (!source) return undefined;
  let pending = loaded.get(name);
  if (!pending) {
    pending = load(source);
    // A failed read is not kept: the next request tries again.
    pending.catch(() => loaded.delete(name));
    loaded.set(name, pending);
  }
  return pending;
}
