// Scripts for call tests: a definition checked as the API checks it, then stored.
import assert from 'node:assert/strict';
import type { Pool } from '../../src/db/pool.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { parseScriptDefinition, type ScriptDefinitionInput } from '../../src/domain/scripts/definition.js';

/** Stores `definition` for the team once it parses (a test's script that does not fails the test saying why); its id. */
export async function storeCheckedScript(pool: Pool, teamId: string, definition: ScriptDefinitionInput): Promise<string> {
  const parsed = parseScriptDefinition(definition);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
  return (await insertScript(pool, { teamId, name: parsed.script.name, definition: parsed.script })).id;
}
