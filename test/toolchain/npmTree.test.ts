// The bootstrap's check that node_modules still holds what package-lock.json lists
// (scripts/npmTree.mjs), on a made-up tree and on this checkout, and the native runtime
// the voice-activity endpointer needs, installed without its install script.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { PROJECT_ROOT } from '../../src/config/index.js';
// @ts-expect-error -- plain-Node module without type declarations
import { missingLockedPackages } from '../../scripts/npmTree.mjs';

const missing = missingLockedPackages as (root: string, lockText: string, platform?: string, arch?: string) => string[];

describe('node_modules against package-lock.json', () => {
  test('a package folder deleted after the install is missing; optional, other-platform and linked ones are not expected', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'npm-tree-'));
    try {
      const lock = JSON.stringify({
        packages: {
          '': { name: 'app' },
          'node_modules/a': { version: '1.0.0' },
          'node_modules/a/node_modules/b': { version: '2.0.0' },
          'node_modules/c': { version: '1.0.0' },
          'node_modules/fsevents': { version: '2.0.0', optional: true },
          'node_modules/linux-only': { version: '1.0.0', os: ['linux'] },
          'node_modules/not-linux': { version: '1.0.0', os: ['!linux'] },
          'node_modules/arm-only': { version: '1.0.0', cpu: ['arm64'] },
          'node_modules/local': { resolved: 'packages/local', link: true },
        },
      });
      for (const dir of ['a', 'a/node_modules/b', 'c', 'linux-only']) {
        mkdirSync(path.join(root, 'node_modules', dir), { recursive: true });
        writeFileSync(path.join(root, 'node_modules', dir, 'package.json'), '{}');
      }
      assert.deepEqual(missing(root, lock, 'linux', 'x64'), []);
      rmSync(path.join(root, 'node_modules', 'a', 'node_modules', 'b'), { recursive: true });
      rmSync(path.join(root, 'node_modules', 'c', 'package.json'));
      assert.deepEqual(missing(root, lock, 'linux', 'x64'), ['b', 'c']);
      assert.deepEqual(missing(root, lock, 'darwin', 'arm64'), ['b', 'c', 'not-linux', 'arm-only']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('this checkout holds every locked package, and onnxruntime-node with its native runtime for this platform', () => {
    assert.deepEqual(missing(PROJECT_ROOT, readFileSync(path.join(PROJECT_ROOT, 'package-lock.json'), 'utf8')), []);
    const binaries = path.join(PROJECT_ROOT, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', process.platform, process.arch);
    for (const file of ['onnxruntime_binding.node', process.platform === 'linux' ? 'libonnxruntime.so.1' : undefined]) {
      if (file) assert.ok(existsSync(path.join(binaries, file)), `${file} in ${binaries}`);
    }
    const manifest = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
    assert.equal(manifest.allowScripts?.['onnxruntime-node'], false, "onnxruntime-node's install script (downloads from outside the registry) is denied");
  });
});
