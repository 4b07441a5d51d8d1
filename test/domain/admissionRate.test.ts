// The admission pacer's rate (src/domain/admissionRate.ts) on a clock the test moves: no more
// calls a second than the rate, spread over the ticks, and no burst after an idle spell.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdmissionRate } from '../../src/domain/admissionRate.js';

/** Admits as many as allowed at each tick from `fromMs` for `seconds`; the calls admitted in each second. */
function run(rate: AdmissionRate, tickMs: number, seconds: number, fromMs = 0): number[] {
  const perSecond = Array<number>(seconds).fill(0);
  for (let t = fromMs; t < fromMs + seconds * 1000; t += tickMs) {
    const n = rate.available(t);
    rate.spend(n);
    perSecond[Math.floor((t - fromMs) / 1000)] += n;
  }
  return perSecond;
}

test('50 a second over 100 ms ticks: 50 in every second, 5 a tick', () => {
  const rate = new AdmissionRate(50, 100);
  assert.deepEqual(run(rate, 100, 5), [50, 50, 50, 50, 50]);
  assert.equal(rate.available(4900), 0, 'nothing left within the tick just spent');
});

test('a rate below one a tick admits one call every few ticks, never two at once', () => {
  const rate = new AdmissionRate(2, 100);
  const perTick: number[] = [];
  for (let t = 0; t < 3000; t += 100) {
    const n = rate.available(t);
    rate.spend(n);
    perTick.push(n);
  }
  assert.ok(perTick.every((n) => n <= 1), `${perTick}`);
  assert.equal(perTick.reduce((a, b) => a + b, 0), 6, 'two a second for three seconds');
});

test('an idle minute is no burst: the next tick admits one tick of calls', () => {
  const rate = new AdmissionRate(50, 100);
  rate.spend(rate.available(0));
  assert.equal(rate.available(60_000), 5);
});

test('what was not spent (the line was shorter) is not carried past one tick', () => {
  const rate = new AdmissionRate(50, 100);
  assert.equal(rate.available(0), 5);
  rate.spend(1);
  assert.equal(rate.available(100), 5);
});
