// Lint what the layer rules and the workflow sandbox need (docs/toolchain.md, "Lint"):
// floating promises everywhere, and import boundaries that make the layers executable.
// Type-aware (typescript-eslint's project service over tsconfig.json, and
// scripts/tsconfig.json for the plain-Node scripts). Runs in `npm test`
// (test/toolchain/lint.test.ts) and as `npm run lint`.
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import importBoundaries from './scripts/eslint-import-boundaries.mjs';

const ROOT = path.dirname(fileURLToPath(import.meta.url));

const HTTP_ONLY_IN_API = [
  { name: 'koa', message: 'Only src/api speaks HTTP: call a service from src/services instead.' },
  { name: '@koa/router', message: 'Only src/api speaks HTTP: call a service from src/services instead.' },
];

const SANDBOX = 'Workflow code runs in the deterministic sandbox: no Node APIs and no I/O; use an activity.';
const NODE_BUILTINS = [...new Set(builtinModules.flatMap((m) => (m.startsWith('node:') ? [m] : [m, `node:${m}`])))];
const WORKFLOW_FORBIDDEN_PACKAGES = [
  ...HTTP_ONLY_IN_API,
  ...NODE_BUILTINS.map((name) => ({ name, message: SANDBOX })),
  ...['pg', 'ioredis'].map((name) => ({ name, message: SANDBOX })),
];

// Everything below the API: none of it may depend on the HTTP adapter.
const BELOW_API = ['src/tracing', 'src/services', 'src/domain', 'src/db', 'activities', 'workflows', 'src/cli', 'src/mediaEdge', 'src/recordings', 'src/telephony', 'src/analysis', 'src/rateLimit', 'src/temporal', 'src/config', 'src/logging', 'src/webhooks', 'src/pacing', 'src/secrets'];

export default defineConfig(
  { ignores: ['node_modules/**', '.tools/**', '.data/**', 'dist/**', 'examples/web-call/public/**'] },
  {
    files: ['**/*.ts', '**/*.mjs', '**/*.js'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        projectService: { allowDefaultProject: ['eslint.config.js'] },
        tsconfigRootDir: ROOT,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { '@typescript-eslint': tseslint.plugin, boundaries: importBoundaries },
    rules: {
      // node:test's test() and describe() return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }],
      }],
      '@typescript-eslint/no-restricted-imports': ['error', { paths: HTTP_ONLY_IN_API }],
    },
  },
  {
    files: ['src/api/**'],
    rules: { '@typescript-eslint/no-restricted-imports': 'off' },
  },
  {
    files: BELOW_API.map((dir) => `${dir}/**`),
    rules: { 'boundaries/no-import-from': ['error', { folders: ['src/api'], reason: 'layers point down: src/api calls src/services, never the reverse' }] },
  },
  {
    files: ['workflows/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { paths: WORKFLOW_FORBIDDEN_PACKAGES }],
      'boundaries/no-import-from': ['error', {
        folders: ['src/api', 'src/db', 'src/services', 'src/config'],
        reason: 'workflow code reaches only src/domain, contracts and `import type` of activities',
      }],
    },
  },
  {
    // The client is what a user of the API takes away: only its generator reads the service's code.
    files: ['clients/typescript/**'],
    ignores: ['clients/typescript/generate.ts'],
    rules: {
      'boundaries/no-import-from': ['error', {
        folders: ['src', 'workflows', 'activities', 'test'],
        reason: 'the client speaks to the service over HTTP only, with the generated types',
      }],
    },
  },
);
