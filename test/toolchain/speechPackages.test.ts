// The speech venv's package lists (scripts/speechPackages.mjs): which engines each command
// installs, exact pins, and the venv the bootstrap made for `npm test`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { PROJECT_ROOT } from '../../src/config/index.js';
// @ts-expect-error -- plain-Node module without type declarations
import { SPEECH_ENGINE_PACKAGES, SPEECH_VENV_PATH, speechEnginesFor } from '../../scripts/speechPackages.mjs';

const ENGINES = SPEECH_ENGINE_PACKAGES as Record<string, { packages: string[]; imports: string[] }>;

describe('speech venv packages', () => {
  test('npm test installs every engine; npm start only the configured ones', () => {
    assert.deepEqual(speechEnginesFor('test', {}), Object.keys(ENGINES));
    assert.ok(speechEnginesFor('test', {}).includes('whisper'));
    assert.deepEqual(speechEnginesFor('start', {}), [], 'the default engines need no Python');
    assert.deepEqual(speechEnginesFor('start', { STT_PROVIDER: 'pocketsphinx' }), []);
    assert.ok(speechEnginesFor('start', { STT_PROVIDER: 'whisper' }).includes('whisper'));
    assert.ok(speechEnginesFor('start', { STT_PROVIDER: ' whisper ' }).includes('whisper'));
  });

  test('every package is pinned to an exact version, once', () => {
    const all = Object.values(ENGINES).flatMap((e) => e.packages);
    for (const requirement of all) assert.match(requirement, /^[A-Za-z0-9._-]+==[0-9][\w.]*$/, `${requirement} is pinned with ==`);
    const names = Object.values(ENGINES).map((e) => e.packages.map((p) => p.split('==')[0].toLowerCase()));
    for (const list of names) assert.equal(new Set(list).size, list.length, `no package twice in one list: ${list.join(', ')}`);
  });

  test('the venv npm test uses holds the pinned packages, recorded in its stamp', () => {
    const stamp = readFileSync(path.join(PROJECT_ROOT, SPEECH_VENV_PATH, '.bootstrap-stamp'), 'utf8').split('\n');
    for (const requirement of Object.values(ENGINES).flatMap((e) => e.packages)) assert.ok(stamp.includes(requirement), `stamp lists ${requirement}`);
    const python = path.join(PROJECT_ROOT, SPEECH_VENV_PATH, 'bin', 'python');
    const freeze = spawnSync(python, ['-m', 'pip', 'freeze', '--disable-pip-version-check'], { encoding: 'utf8' });
    assert.equal(freeze.status, 0, freeze.stderr);
    const installed = new Set(freeze.stdout.split('\n').map((l) => l.trim().toLowerCase().replace(/_/g, '-')));
    for (const requirement of Object.values(ENGINES).flatMap((e) => e.packages)) {
      assert.ok(installed.has(requirement.toLowerCase().replace(/_/g, '-')), `pip freeze shows ${requirement}`);
    }
  });
});
