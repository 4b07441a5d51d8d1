// The admission pacer's rate (src/domain/admissionRate.ts) on a clock the test moves: no more
// calls a second than the rate, spread over the ticks, and no burst after an idle spell; the
// rate the live calls' timer lateness allows, the window that lateness is read over, and whether
// the live calls run late.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdmissionRate, LatenessWindow, LiveAdmissionRate, LiveCallPace } from '../../src/domain/admissionRate.js';

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

test('a new rate applies from the next tick, and a lower one drops the tokens above its tick', () => {
  const rate = new AdmissionRate(50, 100);
  assert.equal(rate.available(0), 5);
  rate.setRate(10);
  assert.equal(rate.available(0), 1, 'one tick of 10 a second');
  rate.spend(1);
  assert.deepEqual(run(rate, 100, 3, 100), [10, 10, 10]);
  rate.setRate(50);
  assert.deepEqual(run(rate, 100, 2, 3100), [50, 50]);
});

test('live lateness: cut by 30 % a step while timers fire late, never below the floor; grown back by a fiftieth a step once on time', () => {
  const live = new LiveAdmissionRate(50, { limitMs: 100, stepMs: 500 });
  assert.equal(live.update(0, () => undefined), 50, 'on time: the configured rate');
  const late: number[] = [];
  for (let t = 500; t <= 8000; t += 500) late.push(live.update(t, () => 400));
  assert.equal(late[0], 35);
  assert.ok(Math.abs(late[1] - 24.5) < 1e-9);
  assert.equal(late.at(-1), 1, 'the floor: one a second (a fiftieth of 50)');
  assert.equal(live.update(8100, () => 400), 1, 'at most one change a step');
  const back: number[] = [];
  for (let t = 8500; t <= 40_000; t += 500) back.push(live.update(t, () => 50));
  assert.equal(back[0], 2, 'plus one a second a step');
  assert.equal(back.at(-1), 50, 'back to the configured rate, not above it');
  assert.equal(live.update(40_500, () => 100), 50, 'at the limit is on time');
});

test('live lateness: the floor is a fiftieth of a high configured rate, and the configured rate when that is below one', () => {
  const high = new LiveAdmissionRate(500, { limitMs: 100, stepMs: 500 });
  for (let t = 0; t <= 30_000; t += 500) high.update(t, () => 1_000);
  assert.equal(high.update(30_500, () => 1_000), 10);
  const slow = new LiveAdmissionRate(0.5, { limitMs: 100, stepMs: 500 });
  assert.equal(slow.update(0, () => 1_000), 0.5);
});

test('the lateness window: the quantile of the last span only, nothing once every sample is older', () => {
  const window = new LatenessWindow(1_000);
  assert.equal(window.quantile(0.9, 0), undefined);
  for (let i = 1; i <= 10; i++) window.record(i * 10, 100 + i);
  assert.equal(window.quantile(0.9, 200), 90);
  assert.equal(window.quantile(0.5, 200), 50);
  assert.equal(window.quantile(1, 200), 100);
  window.record(5, 1_050);
  assert.equal(window.quantile(0, 1_050), 5);
  assert.equal(window.quantile(1, 1_105), 100, 'the last sample of the first ten is 1,000 ms old: still in');
  assert.equal(window.quantile(1, 1_111), 5, 'the first ten are out');
  assert.equal(window.quantile(1, 2_051), undefined);
});

test("the live calls' pace: late while the p90 of the window is above the limit, on time at it or with no timer; read again only once a look is old", () => {
  const pace = new LiveCallPace(new LatenessWindow(1_000), 25, 100);
  assert.equal(pace.late(0), false, 'no timer fired: on time');
  for (let i = 1; i <= 10; i++) pace.timers.record(i <= 8 ? 5 : 400, 100);
  assert.equal(pace.lateness(100), 400, 'the p90 of ten samples is the ninth');
  assert.equal(pace.late(150), true);
  for (let i = 0; i < 90; i++) pace.timers.record(5, 160);
  assert.equal(pace.late(199), true, 'within the look: the p90 taken at 100');
  assert.equal(pace.lateness(200), 5, 'a new look: 100 samples, the late two below the p90');
  assert.equal(pace.late(200), false);
  const atLimit = new LiveCallPace(new LatenessWindow(1_000), 25, 100);
  atLimit.timers.record(25, 0);
  assert.equal(atLimit.late(0), false, 'at the limit is on time');
  assert.equal(atLimit.late(2_000), false, 'the window emptied: on time');
});
