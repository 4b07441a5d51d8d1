// The media edge's shared 20 ms clock: every call's send runs before any call's play, so the
// last call's packet of a tick leaves after the other calls' sends only (bench/sipCalls.ts
// --media-only measures what that buys); a listener that throws is reported and the others run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FrameClock } from '../../src/mediaEdge/webrtc/frameClock.js';

/** Resolves after the clock has run `ticks` ticks (counted by a listener subscribed last). */
function afterTicks(clock: FrameClock, ticks: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const stop = clock.subscribe(() => {
      if (++seen === ticks) {
        stop();
        resolve();
      }
    });
  });
}

test('every send of a tick runs before any play', async () => {
  const clock = new FrameClock((err) => assert.fail(String(err)), 5);
  const calls: string[] = [];
  const stops = ['a', 'b', 'c'].map((name) =>
    clock.subscribe(
      () => calls.push(`send ${name}`),
      () => calls.push(`play ${name}`),
    ),
  );
  await afterTicks(clock, 1);
  stops.forEach((stop) => stop());
  assert.deepEqual(calls.slice(0, 6), ['send a', 'send b', 'send c', 'play a', 'play b', 'play c']);
  assert.equal(clock.size, 0);
});

test('a call that leaves during the sends is not played', async () => {
  const clock = new FrameClock((err) => assert.fail(String(err)), 5);
  const calls: string[] = [];
  const stopA = clock.subscribe(
    () => calls.push('send a'),
    () => calls.push('play a'),
  );
  const stopB = clock.subscribe(
    () => {
      calls.push('send b');
      stopA();
    },
    () => calls.push('play b'),
  );
  await afterTicks(clock, 1);
  stopB();
  assert.deepEqual(calls.slice(0, 3), ['send a', 'send b', 'play b']);
});

test('a listener that throws is reported, and the tick goes on', async () => {
  const errors: unknown[] = [];
  const clock = new FrameClock((err) => errors.push(err), 5);
  const calls: string[] = [];
  const stops = [
    clock.subscribe(
      () => {
        throw new Error('send failed');
      },
      () => {
        throw new Error('play failed');
      },
    ),
    clock.subscribe(
      () => calls.push('send b'),
      () => calls.push('play b'),
    ),
  ];
  await afterTicks(clock, 1);
  stops.forEach((stop) => stop());
  assert.deepEqual(calls.slice(0, 2), ['send b', 'play b']);
  assert.deepEqual(
    errors.slice(0, 2).map((err) => (err as Error).message),
    ['send failed', 'play failed'],
  );
});
