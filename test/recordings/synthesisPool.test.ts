// The pool that bounds the synthesis of simulated calls' recordings in the API: how many
// run at once, how many wait, and the refusal past that.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SynthesisBusyError, SynthesisPool } from '../../src/recordings/synthesisPool.js';

/** A task that runs until `open()` is called, counting how many run at once. */
function gatedTasks() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const state = { running: 0, peak: 0, started: 0 };
  const task = async () => {
    state.running++;
    state.started++;
    state.peak = Math.max(state.peak, state.running);
    try {
      await gate;
      return 'done';
    } finally {
      state.running--;
    }
  };
  return { task, open, state };
}

test('runs at most `concurrency` at once, queues `maxQueued`, refuses the rest at once with Retry-After, then takes new work', async () => {
  const pool = new SynthesisPool({ concurrency: 2, maxQueued: 3, retryAfterSeconds: 7 });
  const { task, open, state } = gatedTasks();
  const runs = Array.from({ length: 9 }, () => pool.run(task).then((v) => v, (err: unknown) => err));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual([state.started, pool.running, pool.queued], [2, 2, 3]);
  open();
  const results = await Promise.all(runs);
  assert.equal(results.filter((r) => r === 'done').length, 5);
  const refused = results.filter((r) => r instanceof SynthesisBusyError) as SynthesisBusyError[];
  assert.equal(refused.length, 4);
  assert.ok(refused.every((e) => e.retryAfterSeconds === 7));
  assert.equal(state.peak, 2, 'never more than two at once');
  assert.deepEqual(pool.stats, { peakRunning: 2, refused: 4 });
  assert.deepEqual([pool.running, pool.queued], [0, 0]);
  assert.equal(await pool.run(async () => 'later'), 'later');
});

test('a task that fails frees its slot for the next in line', async () => {
  const pool = new SynthesisPool({ concurrency: 1, maxQueued: 1 });
  const failing = pool.run(async () => {
    throw new Error('text2wave exited with 1');
  });
  const next = pool.run(async () => 'next');
  await assert.rejects(failing, /text2wave/);
  assert.equal(await next, 'next');
  assert.equal(pool.running, 0);
});

test('a queue of 0 refuses whatever finds every slot busy', async () => {
  const pool = new SynthesisPool({ concurrency: 1, maxQueued: 0 });
  const { task, open } = gatedTasks();
  const first = pool.run(task);
  await assert.rejects(pool.run(task), SynthesisBusyError);
  open();
  assert.equal(await first, 'done');
});
