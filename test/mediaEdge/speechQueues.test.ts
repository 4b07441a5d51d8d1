// The two bounds of the edge's speech engines, alone: the round-robin queue that shares the
// one Festival process between calls, and the slots that cap pocketsphinx processes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProcessSlots } from '../../src/mediaEdge/speech/processSlots.js';
import { RoundRobinQueue } from '../../src/mediaEdge/speech/roundRobinQueue.js';

function drain<K, T>(queue: RoundRobinQueue<K, T>): T[] {
  const out: T[] = [];
  for (let item = queue.take(); item !== undefined; item = queue.take()) out.push(item);
  return out;
}

describe('round-robin queue', () => {
  it('takes the owners in turn, each owner’s items in order', () => {
    const queue = new RoundRobinQueue<string, string>();
    for (const item of ['a1', 'a2', 'a3', 'a4']) queue.push('a', item);
    queue.push('b', 'b1');
    queue.push('b', 'b2');
    queue.push('c', 'c1');
    assert.equal(queue.size, 7);
    assert.deepEqual(drain(queue), ['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    assert.equal(queue.size, 0);
  });

  it('an owner that arrives while another is served goes before that owner’s next item', () => {
    const queue = new RoundRobinQueue<string, string>();
    for (const item of ['a1', 'a2', 'a3']) queue.push('a', item);
    assert.equal(queue.take(), 'a1'); // in the engine now
    queue.push('b', 'b1');
    queue.push('a', 'a4');
    assert.deepEqual(drain(queue), ['b1', 'a2', 'a3', 'a4']);
  });

  it('an owner served alone keeps being served', () => {
    const queue = new RoundRobinQueue<object, number>();
    const owner = {};
    queue.push(owner, 1);
    assert.equal(queue.take(), 1);
    queue.push(owner, 2);
    assert.equal(queue.take(), 2);
    assert.equal(queue.take(), undefined);
  });
});

describe('process slots', () => {
  it('grants up to the cap; later requests wait and get a slot as one is released, speech first', async () => {
    const slots = new ProcessSlots(2);
    const granted: string[] = [];
    const speech = new Set<string>();
    const ask = (name: string) => {
      const request = slots.request(() => speech.has(name));
      void request.granted.then((ok) => ok && granted.push(name));
      return request;
    };
    ask('a');
    ask('b');
    ask('c');
    ask('d');
    await Promise.resolve();
    assert.deepEqual(granted, ['a', 'b']);
    assert.deepEqual([slots.running, slots.queued], [2, 2]);
    speech.add('d'); // d's caller has spoken: it goes before c
    slots.release();
    await Promise.resolve();
    assert.deepEqual(granted, ['a', 'b', 'd']);
    slots.release();
    await Promise.resolve();
    assert.deepEqual(granted, ['a', 'b', 'd', 'c']);
    assert.deepEqual(slots.stats, { peak: 2, waited: 2, refused: 0 });
  });

  it('a refused request answers false and leaves the line; a cancelled one rejects; neither takes a slot', async () => {
    const slots = new ProcessSlots(1);
    assert.equal(await slots.request(() => false).granted, true);
    const refused = slots.request(() => true);
    const cancelled = slots.request(() => false);
    const next = slots.request(() => false);
    refused.refuse();
    cancelled.cancel(new Error('recognition aborted'));
    assert.equal(await refused.granted, false);
    await assert.rejects(cancelled.granted, /aborted/);
    assert.equal(slots.queued, 1);
    slots.release();
    assert.equal(await next.granted, true);
    assert.equal(slots.running, 1);
    next.refuse(); // too late: the slot is taken
    assert.deepEqual(slots.stats, { peak: 1, waited: 3, refused: 1 });
  });
});
