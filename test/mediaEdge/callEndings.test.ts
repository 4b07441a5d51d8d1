// Closing the edge waits for its calls' ends (their `ended` event, their recording stored), up to
// a bound: src/mediaEdge/callEndings.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallEndings } from '../../src/mediaEdge/callEndings.js';

/** A promise and the hands that settle it. */
function latch() {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('call endings', () => {
  it('settled() waits for a recording still being stored, and for one added while it waits', async () => {
    const endings = new CallEndings();
    const storing = latch();
    const order: string[] = [];
    endings.add(storing.promise.then(() => order.push('first recording stored')));
    const waiting = endings.settled(60_000).then((result) => {
      order.push('settled');
      return result;
    });
    await new Promise((resolve) => setImmediate(resolve));
    const second = latch();
    endings.add(second.promise.then(() => order.push('second recording stored')));
    storing.resolve();
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(order, ['first recording stored'], 'still waiting for the second');
    second.resolve();
    assert.deepEqual(await waiting, { unsettled: 0 });
    assert.deepEqual(order, ['first recording stored', 'second recording stored', 'settled']);
    assert.equal(endings.size, 0);
  });

  it('a failed ending counts as settled; with nothing under way settled() resolves at once', async () => {
    const endings = new CallEndings();
    const failing = latch();
    endings.add(failing.promise);
    failing.reject(new Error('store down'));
    assert.deepEqual(await endings.settled(60_000), { unsettled: 0 });
    assert.deepEqual(await new CallEndings().settled(60_000), { unsettled: 0 });
  });

  it('a store that never answers holds settled() only until the bound, which says what is left', async () => {
    const endings = new CallEndings();
    endings.add(new Promise(() => undefined));
    const done = latch();
    endings.add(done.promise);
    done.resolve();
    assert.deepEqual(await endings.settled(50), { unsettled: 1 });
  });
});
