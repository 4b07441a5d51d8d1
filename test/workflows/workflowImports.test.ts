// Guards workflow determinism at the source: the modules the worker bundles from
// workflows/index.ts may only reach the Temporal workflow APIs and pure code, never a Node
// built-in or a package that does I/O (type-only imports are erased and do not count).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { PROJECT_ROOT } from '../../src/config/index.js';

// Besides Temporal's own: pure libraries with no I/O, used by src/domain (script validation,
// phone-number normalisation in the webhook body mapping).
const ALLOWED_PACKAGES = new Set(['@temporalio/workflow', '@temporalio/common', 'zod', 'libphonenumber-js']);
const ALLOWED_FOLDERS = ['workflows', path.join('src', 'domain'), path.join('src', 'temporal', 'searchAttributes.ts')];

/** The value imports of a module (import type / export type are skipped). */
function valueImports(source: string): string[] {
  const specifiers: string[] = [];
  const pattern = /^\s*(import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gms;
  for (const m of source.matchAll(pattern)) {
    if (m[2]) continue;
    specifiers.push(m[3] ?? m[4]);
  }
  return specifiers;
}

function reachableModules(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry];
  while (queue.length) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of valueImports(readFileSync(file, 'utf8'))) {
      if (!spec.startsWith('.')) {
        packages.add(spec);
        continue;
      }
      queue.push(path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts'));
    }
  }
  return { files, packages };
}

test('the workflow bundle reaches only the Temporal workflow APIs and pure modules', () => {
  const { files, packages } = reachableModules(path.join(PROJECT_ROOT, 'workflows', 'index.ts'));
  assert.ok(files.size > 5, 'the walk found the workflow files');
  const strayPackages = [...packages].filter((p) => !ALLOWED_PACKAGES.has(p));
  assert.deepEqual(strayPackages, [], `workflow code imports packages that may do I/O: ${strayPackages.join(', ')}`);
  const strayFiles = [...files]
    .map((f) => path.relative(PROJECT_ROOT, f))
    .filter((f) => !ALLOWED_FOLDERS.some((allowed) => f === allowed || f.startsWith(`${allowed}${path.sep}`)));
  assert.deepEqual(strayFiles, [], `workflow code reaches modules outside workflows/ and src/domain/: ${strayFiles.join(', ')}`);
});

test('the import walk itself sees value imports and skips type-only ones', () => {
  const source = "import type { A } from './a.js';\nimport { b } from './b.js';\nexport * from './c.js';\nexport type { D } from './d.js';\nimport 'node:fs';";
  assert.deepEqual(valueImports(source), ['./b.js', './c.js', 'node:fs']);
});
