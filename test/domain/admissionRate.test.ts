// The admission pacer's rate (src/domain/admissionRate.ts) on a clock the test moves: no more
// calls a second than the rate, spread over the ticks, and no burst after an idle spell; the
// rate the live calls' pace allows, whether the live calls run late, and the quantile of their
// tasks' waits between two metric readings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdmissionRate, LiveAdmissionRate, LiveCallPace, quantileBetween } from '../../src/domain/admissionRate.js';

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
  const live = new LiveAdmissionRate(50, { limitMs: 100, stepMs: 500, idleRestartMs: 5_000 });
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

test('live lateness: a line that forms after a quiet spell starts at a quarter of the rate, doubled a step while on time, until the first late step', () => {
  const live = new LiveAdmissionRate(50, { limitMs: 100, stepMs: 500, idleRestartMs: 5_000 });
  assert.equal(live.update(0, () => undefined), 50, 'the line empty: the configured rate');
  assert.equal(live.lineLooked(0, false), 50, 'an empty line changes nothing');
  assert.equal(live.lineLooked(100, true), 12.5, 'the first due calls: a quarter');
  assert.equal(live.update(200, () => 50), 12.5, 'the slow start counts as a step');
  assert.equal(live.update(600, () => 50), 25, 'on time: doubled');
  assert.equal(live.lineLooked(700, true), 25, 'a line still there does not restart');
  assert.equal(live.update(1_100, () => 400), 17.5, 'late: cut, and the slow start is over');
  assert.equal(live.update(1_600, () => 50), 18.5, 'on time again: plus a fiftieth, not doubled');
  // Empty for less than the restart: no slow start.
  live.lineLooked(4_000, false);
  assert.equal(live.lineLooked(5_600, true), 18.5, 'calls again within five seconds: as it was');
  // Empty for five seconds: the next due calls start slowly, from the lower of the two rates.
  for (let t = 6_000; t <= 10_500; t += 500) live.update(t, () => undefined);
  assert.equal(live.lineLooked(10_600, true), 12.5);
  assert.equal(live.update(11_100, () => 50), 25);
  assert.equal(live.update(11_600, () => 50), 50);
  assert.equal(live.update(12_100, () => 50), 50, 'never above the configured rate');
  const cut = new LiveAdmissionRate(50, { limitMs: 100, stepMs: 500, idleRestartMs: 5_000 });
  for (let t = 0; t <= 3_000; t += 500) cut.update(t, () => 400);
  assert.ok(cut.lineLooked(3_100, true) < 12.5, 'a rate already below a quarter stays');
});

test('live lateness: the floor is a fiftieth of a high configured rate, and the configured rate when that is below one', () => {
  const high = new LiveAdmissionRate(500, { limitMs: 100, stepMs: 500, idleRestartMs: 5_000 });
  for (let t = 0; t <= 30_000; t += 500) high.update(t, () => 1_000);
  assert.equal(high.update(30_500, () => 1_000), 10);
  const slow = new LiveAdmissionRate(0.5, { limitMs: 100, stepMs: 500, idleRestartMs: 5_000 });
  assert.equal(slow.update(0, () => 1_000), 0.5);
});

test("the live calls' pace: late while the last reading's p99 is above the limit; on time at it, with no task, or once the reading is stale", () => {
  const pace = new LiveCallPace(250, 2_000);
  assert.equal(pace.late(0), false, 'no reading: on time');
  pace.observe(500, 100);
  assert.equal(pace.lateness(100), 500);
  assert.equal(pace.late(1_000), true);
  assert.equal(pace.late(2_101), false, 'two seconds without a reading: on time, admissions never wait on a lost one');
  pace.observe(250, 2_200);
  assert.equal(pace.late(2_200), false, 'at the limit is on time');
  pace.observe(undefined, 2_700);
  assert.equal(pace.late(2_700), false, 'no live task started: on time');
});

test('the quantile of a cumulative histogram between two readings: the bound of the bucket it falls in', () => {
  const reading = (counts: number[]) => new Map([10, 100, 250, 500, Infinity].map((bound, i) => [bound, counts[i]]));
  const before = reading([50, 90, 99, 100, 100]);
  assert.equal(quantileBetween(undefined, before, 0.99), 250, 'since the histogram began');
  assert.equal(quantileBetween(undefined, before, 0.5), 10);
  const after = reading([110, 180, 194, 198, 200]);
  assert.equal(quantileBetween(before, after, 0.9), 100, 'of the 100 observed since, 90 within 100 ms');
  assert.equal(quantileBetween(before, after, 0.99), Infinity, 'two of the 100 above the last finite bound');
  assert.equal(quantileBetween(after, after, 0.99), undefined, 'nothing observed between them');
});
