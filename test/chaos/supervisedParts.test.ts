// A chaos-run part that exits before it is ready (a worker or the edge while Temporal is
// unreachable) is started again as a supervisor would: past the ten attempts of a part
// started outside a run while the run's supervision lasts, and no longer once it is over.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { NodePart } from '../../chaos/cluster.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'supervised-part-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A part that exits 1 on its first `failures` starts, then prints its ready line and stays up. */
function flakyPart(name: string, failures: number): { part: NodePart; starts: () => number } {
  const counter = path.join(dir, `${name}.count`);
  writeFileSync(counter, '0');
  const file = path.join(dir, `${name}.mjs`);
  writeFileSync(
    file,
    `import { readFileSync, writeFileSync } from 'node:fs';
const n = Number(readFileSync(${JSON.stringify(counter)}, 'utf8')) + 1;
writeFileSync(${JSON.stringify(counter)}, String(n));
if (n <= ${failures}) process.exit(1);
console.log('part ready');
setInterval(() => {}, 1000);
`,
  );
  const part = new NodePart('worker-1', file, () => process.env, /part ready/, dir);
  return { part, starts: () => Number(readFileSync(counter, 'utf8')) };
}

test('supervised until a moment: a part that fails twelve starts is started a thirteenth time and comes up', async () => {
  const { part, starts } = flakyPart('supervised', 12);
  part.restartUntil = Date.now() + 60_000;
  try {
    await part.start(20);
    assert.equal(part.ready, true);
    assert.equal(starts(), 13);
  } finally {
    await part.kill();
  }
});

test('unsupervised: ten attempts, then the start fails naming the part', async () => {
  const { part, starts } = flakyPart('unsupervised', 12);
  await assert.rejects(part.start(20), /worker-1 exited \(1\) before it was ready/);
  assert.equal(starts(), 10);
});

test('supervision over: no attempt after the moment it ended', async () => {
  const { part, starts } = flakyPart('over', 12);
  part.restartUntil = Date.now() - 1;
  await assert.rejects(part.start(20), /before it was ready/);
  assert.equal(starts(), 1);
});
