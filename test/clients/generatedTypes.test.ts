// The TypeScript client's committed types (clients/typescript/generated/api.ts) against the
// OpenAPI document the code builds today: `npm test` fails when a schema changed and
// `npm run client:generate` was not run.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { clientTypesFor, firstDifference, GENERATED_TYPES_FILE, serviceOpenApiDocument, STALE_TYPES_ADVICE } from '../../clients/typescript/generate.js';

const tempDir = mkdtempSync(path.join(os.tmpdir(), 'client-types-'));
after(() => rmSync(tempDir, { recursive: true, force: true }));

/** Generates the types of `document` into a temp file and compares it with the committed file: the problem, or undefined. */
async function staleness(document: Record<string, unknown>): Promise<string | undefined> {
  const generatedFile = path.join(tempDir, 'api.ts');
  writeFileSync(generatedFile, await clientTypesFor(document));
  const difference = firstDifference(readFileSync(GENERATED_TYPES_FILE, 'utf8'), readFileSync(generatedFile, 'utf8'));
  return difference && `clients/typescript/generated/api.ts is stale against the OpenAPI document (${difference}): ${STALE_TYPES_ADVICE}`;
}

test('the committed client types are what the OpenAPI document generates', async () => {
  const problem = await staleness(serviceOpenApiDocument());
  assert.equal(problem, undefined, problem);
});

test('a changed schema makes the committed types stale, and the check says to regenerate', async () => {
  const document = structuredClone(serviceOpenApiDocument()) as { components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> } };
  const error = document.components.schemas.Error;
  error.properties = { ...error.properties, hint: { type: 'string' } };
  const problem = await staleness(document);
  assert.ok(problem, 'an altered document is caught');
  assert.match(problem, /run npm run client:generate/);
  assert.match(problem, /hint/);
});
