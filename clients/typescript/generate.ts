// `npm run client:generate`: writes the client's types (generated/api.ts) with openapi-typescript
// from the OpenAPI document the service serves at GET /api/v1/openapi.json. The document is
// built in this process from the route definitions (no server, database or Temporal), so a
// fresh clone regenerates the same file. Only its public part is the client's: the media
// edge's /internal/v1 operations, and the schemas only they use, are left out.
// test/clients/generatedTypes.test.ts fails `npm test` when the committed file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';
import { buildOpenApiDocument } from '../../src/api/openapi/document.js';
import { allRoutes } from '../../src/api/routes.js';

/** The committed generated types. */
export const GENERATED_TYPES_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'generated', 'api.ts');

/** What to do when the committed types differ from what the document generates. */
export const STALE_TYPES_ADVICE = 'run npm run client:generate';

/** The service's OpenAPI document, exactly as GET /api/v1/openapi.json serves it. */
export function serviceOpenApiDocument(): Record<string, unknown> {
  return buildOpenApiDocument(allRoutes());
}

/** Every `$ref` found anywhere in `value`. */
function refsIn(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) refsIn(item, found);
  else if (value && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string') found.add(inner);
      else refsIn(inner, found);
    }
  }
  return found;
}

/** `document` with the /api/v1 operations only, and the component schemas they reach. */
export function publicPart(document: Record<string, unknown>): Record<string, unknown> {
  const paths = Object.fromEntries(Object.entries(document.paths as Record<string, unknown>).filter(([p]) => p.startsWith('/api/v1/')));
  const components = (document.components ?? {}) as { schemas?: Record<string, unknown> };
  const schemas = components.schemas ?? {};
  const reached = new Set<string>();
  const pending = [...refsIn(paths)];
  for (let ref = pending.pop(); ref !== undefined; ref = pending.pop()) {
    const name = ref.replace('#/components/schemas/', '');
    if (reached.has(name) || !(name in schemas)) continue;
    reached.add(name);
    pending.push(...refsIn(schemas[name]));
  }
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => reached.has(name)));
  return { ...document, paths, components: { ...components, schemas: kept } };
}

/** The text of generated/api.ts for `document` (its public part). */
export async function clientTypesFor(document: Record<string, unknown>): Promise<string> {
  const ast = await openapiTS(publicPart(document) as unknown as OpenAPI3, { silent: true });
  return COMMENT_HEADER + astToString(ast);
}

/** The first line where `committed` and `generated` differ, for the staleness message. */
export function firstDifference(committed: string, generated: string): string | undefined {
  const a = committed.split('\n');
  const b = generated.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1}: committed ${JSON.stringify(a[i] ?? '<end of file>')}, generated ${JSON.stringify(b[i] ?? '<end of file>')}`;
  }
  return undefined;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = await clientTypesFor(serviceOpenApiDocument());
  let before: string | undefined;
  try {
    before = readFileSync(GENERATED_TYPES_FILE, 'utf8');
  } catch {
    before = undefined;
  }
  writeFileSync(GENERATED_TYPES_FILE, text);
  process.stdout.write(`${path.relative(process.cwd(), GENERATED_TYPES_FILE)}: ${before === text ? 'unchanged' : 'written'} (${text.split('\n').length} lines)\n`);
}
