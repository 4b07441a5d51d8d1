// A worker started again reads its workflow bundle instead of running webpack again
// (WORKFLOW_BUNDLE_CACHE_DIR, docs/reliability.md "Restarting fast"), outside the test runner
// too: two worker processes in production mode, one after the other, over the same cache
// folder; the first builds the bundle of the service's workflows and keeps it, the second reads
// it. A file where the folder should be stops start-up naming the setting (a folder that cannot
// be made leaves the worker building in memory: workflowBundleCache.test.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { ConfigError, loadConfig, PROJECT_ROOT, workflowBundleDir } from '../../src/config/index.js';

const work = mkdtempSync(path.join(os.tmpdir(), 'worker-bundle-'));
after(() => rmSync(work, { recursive: true, force: true }));

/**
 * What a worker process does with its bundle at start-up (createWorker: workflowBundle over
 * workflowBundleDir of its config), in a process of its own with `env`; its log lines.
 */
async function workerBundleStart(env: Record<string, string>): Promise<Array<{ msg: string; dir?: string; reason?: string }>> {
  const script = [
    "import { loadConfig, workflowBundleDir } from './src/config/index.ts';",
    "import { createLogger } from './src/logging/logger.ts';",
    "import { workflowBundle } from './src/temporal/worker.ts';",
    'const config = loadConfig();',
    "const bundle = await workflowBundle(workflowBundleDir(config), createLogger('info'));",
    "if (!bundle.code.includes('callWorkflow')) throw new Error('not the service workflows');",
  ].join('\n');
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: PROJECT_ROOT,
    // Tracing off: the bundle without the tracing interceptors, as the chaos run's workers use it.
    env: { ...process.env, NODE_ENV: 'production', OTEL_EXPORTER_OTLP_ENDPOINT: '', ...env },
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; dir?: string; reason?: string })
    .filter((entry) => /workflow bundle/.test(entry.msg));
}

test('a worker started again reads the bundle the first one built (no webpack run), under WORKFLOW_BUNDLE_CACHE_DIR', async () => {
  const dir = path.join(work, 'bundles');
  const first = await workerBundleStart({ WORKFLOW_BUNDLE_CACHE_DIR: dir });
  assert.deepEqual(first.map((e) => [e.msg, e.dir]), [['workflow bundle built and kept', dir]]);
  assert.ok(readdirSync(dir).some((f) => f.endsWith('.js')), 'the bundle is kept in the folder');
  const again = await workerBundleStart({ WORKFLOW_BUNDLE_CACHE_DIR: dir });
  assert.deepEqual(again.map((e) => [e.msg, e.dir]), [['workflow bundle read from the cache', dir]]);
});

test('unset: kept under DATA_DIR (the test runner shares .tools/workflow-bundles)', () => {
  assert.equal(workflowBundleDir(loadConfig({ NODE_ENV: 'production', DATA_DIR: '/srv/agent' })), path.join('/srv/agent', 'workflow-bundles'));
  assert.equal(workflowBundleDir(loadConfig({ NODE_ENV: 'test', DATA_DIR: '/srv/agent' })), path.join(PROJECT_ROOT, '.tools', 'workflow-bundles'));
  assert.equal(workflowBundleDir(loadConfig({ NODE_ENV: 'production', WORKFLOW_BUNDLE_CACHE_DIR: '/var/cache/agent' })), '/var/cache/agent');
});

test('a file where the folder should be stops start-up naming WORKFLOW_BUNDLE_CACHE_DIR', () => {
  const file = path.join(work, 'a-file');
  writeFileSync(file, 'not a folder');
  assert.throws(
    () => loadConfig({ WORKFLOW_BUNDLE_CACHE_DIR: file }),
    (err: unknown) => err instanceof ConfigError && err.message === 'Invalid configuration: WORKFLOW_BUNDLE_CACHE_DIR must be a directory (a file of that name is there)',
  );
});
