// ESLint (eslint.config.js) runs as part of the suite, so a floating promise or an import
// across a layer boundary fails `npm test` like any other test. The planted snippets prove
// the rules are live: a config that silently stopped applying would pass the project lint.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ESLint } from 'eslint';
import { PROJECT_ROOT } from '../../src/config/index.js';

const eslint = new ESLint({ cwd: PROJECT_ROOT });

function describeErrors(results: ESLint.LintResult[]): string {
  return results
    .flatMap((r) => r.messages.filter((m) => m.severity === 2).map((m) => `${path.relative(PROJECT_ROOT, r.filePath)}:${m.line}:${m.column} ${m.message} (${m.ruleId ?? 'parse'})`))
    .join('\n');
}

/** The first .ts file under `dir` (sorted): planted code is linted in its place, in memory. */
function existingFileIn(dir: string): string {
  const found = readdirSync(path.join(PROJECT_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .sort();
  assert.ok(found.length > 0, `${dir} has a .ts file to plant code in`);
  return path.join(dir, found[0]);
}

/**
 * Lints `code` as the content of a file of `dir` (the file on disk is not touched: the text
 * stands in for it in this process's type-checker, which only sees files of tsconfig.json).
 * Returns "rule: message" per problem; `importPath(target)` spells a relative import from there.
 */
async function lintIn(dir: string, code: (importPath: (target: string) => string) => string): Promise<string[]> {
  const file = path.join(PROJECT_ROOT, existingFileIn(dir));
  const importPath = (target: string) => {
    const rel = path.relative(path.dirname(file), path.join(PROJECT_ROOT, target)).split(path.sep).join('/');
    return rel.startsWith('.') ? rel : `./${rel}`;
  };
  const [result] = await eslint.lintText(code(importPath), { filePath: file });
  return result.messages.map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

test('the project lints without errors (floating promises, layer and workflow import boundaries)', async () => {
  const results = await eslint.lintFiles(['.']);
  assert.ok(results.length > 100, `ESLint saw the project's files (${results.length})`);
  const errors = results.reduce((n, r) => n + r.errorCount + r.fatalErrorCount, 0);
  assert.equal(errors, 0, `ESLint errors:\n${describeErrors(results)}`);
});

test('a workflow file importing pg, a Node built-in, koa or the database layer fails the lint', async () => {
  const messages = await lintIn('workflows', (from) => [
    "import { Pool } from 'pg';",
    "import { readFileSync } from 'node:fs';",
    "import { createHash } from 'crypto';",
    "import Koa from 'koa';",
    `import { createPool } from '${from('src/db/pool.js')}';`,
    `import { loadConfig } from '${from('src/config/index.js')}';`,
    "import { condition } from '@temporalio/workflow';",
    `import { CALL_STATUS } from '${from('src/temporal/searchAttributes.js')}';`,
    'export const planted = [Pool, readFileSync, createHash, Koa, createPool, loadConfig, condition, CALL_STATUS];',
  ].join('\n'));
  const restricted = messages.filter((m) => m.startsWith('@typescript-eslint/no-restricted-imports:'));
  const boundaries = messages.filter((m) => m.startsWith('boundaries/no-import-from:'));
  assert.equal(restricted.length, 4, messages.join('\n'));
  for (const name of ["'pg'", "'node:fs'", "'crypto'", "'koa'"]) assert.ok(restricted.some((m) => m.includes(name)), `${name} is reported:\n${messages.join('\n')}`);
  assert.equal(boundaries.length, 2, messages.join('\n'));
  assert.ok(boundaries.some((m) => m.includes('src/db')) && boundaries.some((m) => m.includes('src/config')), messages.join('\n'));
  assert.equal(messages.length, 6, `the allowed imports pass: ${messages.join('\n')}`);
});

test('a floating promise fails the lint; awaited, void-marked or caught ones do not', async () => {
  const messages = await lintIn('src/services', () => [
    'async function save(): Promise<void> {}',
    'export async function run(): Promise<void> {',
    '  save();',
    '  await save();',
    '  void save();',
    '  save().catch(() => undefined);',
    '}',
  ].join('\n'));
  assert.deepEqual(messages.map((m) => m.split(':')[0]), ['@typescript-eslint/no-floating-promises'], messages.join('\n'));
});

test('only src/api imports koa, and no lower layer imports src/api', async () => {
  const belowApi = ['src/services', 'src/domain', 'src/db', 'activities', 'workflows', 'src/cli', 'src/mediaEdge'];
  for (const dir of belowApi) {
    const messages = await lintIn(dir, (from) => `import { badRequest } from '${from('src/api/errors.js')}';\nexport const planted = badRequest;`);
    assert.deepEqual(messages.map((m) => m.split(':')[0]), ['boundaries/no-import-from'], `${dir}: ${messages.join('\n')}`);
  }
  const worker = await lintIn('src/temporal', () => "import Router from '@koa/router';\nexport const planted = Router;");
  assert.deepEqual(worker.map((m) => m.split(':')[0]), ['@typescript-eslint/no-restricted-imports'], worker.join('\n'));
  const api = await lintIn('src/api', () => "import Router from '@koa/router';\nimport type { Middleware } from 'koa';\nexport const fine: [typeof Router, Middleware?] = [Router];");
  assert.deepEqual(api, [], 'src/api may import koa');
});

test('the TypeScript client imports nothing of the service; only its generator does', async () => {
  const client = await lintIn('clients/typescript/generated', (from) => `import { allRoutes } from '${from('src/api/routes.js')}';\nexport const planted = allRoutes;`);
  assert.deepEqual(client.map((m) => m.split(':')[0]), ['boundaries/no-import-from'], client.join('\n'));
  const [generator] = await eslint.lintText("import { allRoutes } from '../../src/api/routes.js';\nexport const fine = allRoutes;", { filePath: path.join(PROJECT_ROOT, 'clients/typescript/generate.ts') });
  assert.deepEqual(generator.messages, [], 'the generator builds the document from the code');
});
