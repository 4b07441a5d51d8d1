// Calling windows and zone arithmetic (src/domain/callingWindows.ts, src/domain/timeZones.ts):
// local time through the time-zone database, across midnight, weekends and both
// daylight-saving transitions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  callingWindowProblems,
  isWindowOpen,
  nextWindowClosing,
  nextWindowOpening,
  parseClockTime,
  parseDaysSpec,
  WEEKDAYS,
  type CallingWindow,
} from '../../src/domain/callingWindows.js';
import { canonicalTimeZone, offsetMs, zonedInstant, zonedParts } from '../../src/domain/timeZones.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const weekdays: CallingWindow = { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '20:00' };

test('zone names: IANA names and aliases pass, letter case is corrected, offsets and inventions do not', () => {
  assert.equal(canonicalTimeZone('Europe/Paris'), 'Europe/Paris');
  assert.equal(canonicalTimeZone('europe/paris'), 'Europe/Paris');
  assert.equal(canonicalTimeZone('America/Argentina/Buenos_Aires'), 'America/Argentina/Buenos_Aires');
  assert.equal(canonicalTimeZone('UTC'), 'UTC');
  assert.equal(canonicalTimeZone('US/Eastern'), 'US/Eastern');
  for (const bad of ['+02:00', 'GMT+2x', 'Mars/Olympus_Mons', 'Europe/Pariss', '', 'Europe/Paris; DROP', 'a'.repeat(80)]) {
    assert.equal(canonicalTimeZone(bad), undefined, bad);
  }
});

test('wall clock and offsets follow the database on both sides of a transition', () => {
  assert.equal(offsetMs(at('2027-03-28T00:59:00Z'), 'Europe/Paris'), 3_600_000);
  assert.equal(offsetMs(at('2027-03-28T01:00:00Z'), 'Europe/Paris'), 7_200_000);
  assert.deepEqual(zonedParts(at('2027-03-28T01:00:00Z'), 'Europe/Paris'), { year: 2027, month: 3, day: 28, hour: 3, minute: 0, second: 0, weekday: 6 });
  assert.equal(offsetMs(at('2026-11-01T05:59:00Z'), 'America/New_York'), -4 * 3_600_000);
  assert.equal(offsetMs(at('2026-11-01T06:00:00Z'), 'America/New_York'), -5 * 3_600_000);
});

test('a local time skipped by spring-forward maps to the end of the gap; one repeated by fall-back to its first occurrence', () => {
  assert.equal(iso(zonedInstant(2027, 3, 28, 2 * 60 + 30, 'Europe/Paris')), '2027-03-28T01:00:00.000Z');
  assert.equal(iso(zonedInstant(2027, 10, 31, 2 * 60 + 30, 'Europe/Paris')), '2027-10-31T00:30:00.000Z');
  assert.equal(iso(zonedInstant(2027, 3, 14, 2 * 60 + 15, 'America/New_York')), '2027-03-14T07:00:00.000Z');
  assert.equal(iso(zonedInstant(2026, 11, 1, 60 + 30, 'America/New_York')), '2026-11-01T05:30:00.000Z');
  assert.equal(iso(zonedInstant(2027, 1, 15, 9 * 60, 'Asia/Kolkata')), '2027-01-15T03:30:00.000Z');
});

test('inside the window it is open now; outside, it opens at the next start on one of its days', () => {
  // Tuesday 2027-01-12, Paris is UTC+1.
  assert.equal(nextWindowOpening(at('2027-01-12T10:00:00Z'), weekdays, 'Europe/Paris'), at('2027-01-12T10:00:00Z'));
  assert.equal(iso(nextWindowOpening(at('2027-01-12T06:30:00Z'), weekdays, 'Europe/Paris')), '2027-01-12T08:00:00.000Z');
  // 20:00 local is closed (end excluded); the next opening is Wednesday 09:00.
  assert.equal(isWindowOpen(at('2027-01-12T18:59:59Z'), weekdays, 'Europe/Paris'), true);
  assert.equal(isWindowOpen(at('2027-01-12T19:00:00Z'), weekdays, 'Europe/Paris'), false);
  assert.equal(iso(nextWindowOpening(at('2027-01-12T19:00:00Z'), weekdays, 'Europe/Paris')), '2027-01-13T08:00:00.000Z');
});

test('weekends: Friday evening and Saturday wait for Monday morning, in the callee’s zone not UTC', () => {
  // Friday 2027-01-15 21:00 in New York is Saturday 02:00 UTC.
  assert.equal(iso(nextWindowOpening(at('2027-01-16T02:00:00Z'), weekdays, 'America/New_York')), '2027-01-18T14:00:00.000Z');
  assert.equal(iso(nextWindowOpening(at('2027-01-16T12:00:00Z'), weekdays, 'America/New_York')), '2027-01-18T14:00:00.000Z');
  // Monday 01:00 UTC is still Sunday evening in Los Angeles: wait for its Monday 09:00.
  assert.equal(iso(nextWindowOpening(at('2027-01-18T01:00:00Z'), weekdays, 'America/Los_Angeles')), '2027-01-18T17:00:00.000Z');
  // Sunday in Tokyo while it is Friday night in UTC: the window opens Monday 09:00 JST.
  assert.equal(iso(nextWindowOpening(at('2027-01-16T20:00:00Z'), weekdays, 'Asia/Tokyo')), '2027-01-18T00:00:00.000Z');
});

test('windows across midnight belong to the day they open', () => {
  const night: CallingWindow = { days: ['fri', 'sat'], start: '22:00', end: '02:00' };
  const zone = 'UTC';
  assert.equal(isWindowOpen(at('2027-01-15T23:30:00Z'), night, zone), true); // Friday night
  assert.equal(isWindowOpen(at('2027-01-16T01:59:00Z'), night, zone), true); // early Saturday: Friday's window
  assert.equal(isWindowOpen(at('2027-01-16T02:00:00Z'), night, zone), false);
  assert.equal(isWindowOpen(at('2027-01-17T01:00:00Z'), night, zone), true); // early Sunday: Saturday's window
  assert.equal(isWindowOpen(at('2027-01-18T01:00:00Z'), night, zone), false); // early Monday: Sunday has no window
  assert.equal(isWindowOpen(at('2027-01-15T01:00:00Z'), night, zone), false); // early Friday: Thursday has none
  assert.equal(iso(nextWindowOpening(at('2027-01-17T03:00:00Z'), night, zone)), '2027-01-22T22:00:00.000Z');
  const allDay: CallingWindow = { days: ['sun'], start: '00:00', end: '24:00' };
  assert.equal(isWindowOpen(at('2027-01-17T23:59:00Z'), allDay, zone), true);
  assert.equal(iso(nextWindowOpening(at('2027-01-18T00:00:00Z'), allDay, zone)), '2027-01-24T00:00:00.000Z');
});

test('spring-forward: a window opening inside the skipped hour opens when the clocks jump; the day’s other openings keep local time', () => {
  const early: CallingWindow = { days: ['sun'], start: '02:30', end: '05:00' };
  // Europe/Paris jumps from 02:00 to 03:00 on Sunday 2027-03-28 (01:00 UTC).
  assert.equal(iso(nextWindowOpening(at('2027-03-27T12:00:00Z'), early, 'Europe/Paris')), '2027-03-28T01:00:00.000Z');
  const daily: CallingWindow = { days: [...WEEKDAYS], start: '09:00', end: '20:00' };
  // 09:00 is UTC+1 on Saturday and UTC+2 on Sunday.
  assert.equal(iso(nextWindowOpening(at('2027-03-27T05:00:00Z'), daily, 'Europe/Paris')), '2027-03-27T08:00:00.000Z');
  assert.equal(iso(nextWindowOpening(at('2027-03-27T19:30:00Z'), daily, 'Europe/Paris')), '2027-03-28T07:00:00.000Z');
  // A window wholly inside the skipped hour does not open that day.
  const gap: CallingWindow = { days: ['sun'], start: '02:10', end: '02:50' };
  assert.equal(iso(nextWindowOpening(at('2027-03-27T12:00:00Z'), gap, 'Europe/Paris')), '2027-04-04T00:10:00.000Z');
});

test('fall-back: a window opening inside the repeated hour opens at its first occurrence; 20:00 after the change is an hour later in UTC', () => {
  const early: CallingWindow = { days: ['sun'], start: '01:30', end: '03:00' };
  // America/New_York repeats 01:00–02:00 on Sunday 2026-11-01 (EDT, then EST from 06:00 UTC).
  assert.equal(iso(nextWindowOpening(at('2026-10-31T12:00:00Z'), early, 'America/New_York')), '2026-11-01T05:30:00.000Z');
  // Still open during the repeated hour, and closed at 03:00 EST.
  assert.equal(isWindowOpen(at('2026-11-01T06:45:00Z'), early, 'America/New_York'), true);
  assert.equal(isWindowOpen(at('2026-11-01T08:00:00Z'), early, 'America/New_York'), false);
  const daily: CallingWindow = { days: [...WEEKDAYS], start: '09:00', end: '20:00' };
  assert.equal(isWindowOpen(at('2026-10-31T23:30:00Z'), daily, 'America/New_York'), true); // 19:30 EDT
  assert.equal(isWindowOpen(at('2026-11-02T00:30:00Z'), daily, 'America/New_York'), true); // 19:30 EST
  assert.equal(iso(nextWindowOpening(at('2026-11-01T01:00:00Z'), daily, 'America/New_York')), '2026-11-01T14:00:00.000Z');
});

test('property: the opening found is open, and no whole minute between now and it is', () => {
  const zones = ['Europe/Paris', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'UTC', 'America/St_Johns'];
  const time = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);
  fc.assert(
    fc.property(
      fc.subarray([...WEEKDAYS], { minLength: 1 }),
      time,
      time,
      fc.constantFrom(...zones),
      fc.integer({ min: at('2026-01-01T00:00:00Z'), max: at('2028-01-01T00:00:00Z') }),
      (days, start, end, zone, now) => {
        fc.pre(start !== end);
        const window = { days, start, end };
        const opens = nextWindowOpening(now, window, zone);
        assert.ok(opens >= now);
        assert.ok(isWindowOpen(opens, window, zone), `${iso(opens)} is open`);
        // Every minute boundary between now and the opening is closed.
        for (let t = Math.ceil(now / 60_000) * 60_000; t < opens; t += 60_000) assert.ok(!isWindowOpen(t, window, zone), `${iso(t)} before ${iso(opens)}`);
      },
    ),
    { numRuns: 40 },
  );
});

test('validation names each field; days specs read the operator’s way', () => {
  assert.deepEqual(callingWindowProblems(weekdays), []);
  assert.deepEqual(callingWindowProblems({ days: [], start: '9:00', end: '25:00' }).map(([f]) => f), ['days', 'start', 'end']);
  assert.deepEqual(callingWindowProblems({ days: ['monday'], start: '09:00', end: '09:00' }).map(([f]) => f), ['days', 'end']);
  assert.deepEqual(callingWindowProblems({ days: ['mon'], start: '00:00', end: '24:00' }), []);
  assert.equal(parseClockTime('24:00'), undefined);
  assert.equal(parseClockTime('24:00', true), 1440);
  assert.deepEqual(parseDaysSpec('mon-fri'), ['mon', 'tue', 'wed', 'thu', 'fri']);
  assert.deepEqual(parseDaysSpec('sat,sun'), ['sat', 'sun']);
  assert.deepEqual(parseDaysSpec('fri-mon'), ['mon', 'fri', 'sat', 'sun']);
  assert.deepEqual(parseDaysSpec(' Mon-Wed , fri '), ['mon', 'tue', 'wed', 'fri']);
  assert.deepEqual(parseDaysSpec('daily'), [...WEEKDAYS]);
  for (const bad of ['', 'monday', 'mon-', 'mon-fri-sat', 'mon,,fri']) assert.equal(parseDaysSpec(bad), undefined, bad);
});

test('the window closes at its end, the next day across midnight, never when days join end to end', () => {
  assert.equal(iso(nextWindowClosing(at('2027-01-12T10:00:00Z'), weekdays, 'Europe/Paris')), '2027-01-12T19:00:00.000Z');
  assert.equal(nextWindowClosing(at('2027-01-12T20:00:00Z'), weekdays, 'Europe/Paris'), at('2027-01-12T20:00:00Z'));
  const night: CallingWindow = { days: ['fri'], start: '22:00', end: '02:00' };
  assert.equal(iso(nextWindowClosing(at('2027-01-16T01:00:00Z'), night, 'UTC')), '2027-01-16T02:00:00.000Z');
  const joined: CallingWindow = { days: ['mon', 'tue'], start: '00:00', end: '24:00' };
  assert.equal(iso(nextWindowClosing(at('2027-01-11T12:00:00Z'), joined, 'UTC')), '2027-01-13T00:00:00.000Z');
  assert.equal(nextWindowClosing(at('2027-01-11T12:00:00Z'), { days: [...WEEKDAYS], start: '00:00', end: '24:00' }, 'UTC'), Number.POSITIVE_INFINITY);
  // Fall-back day in New York: 20:00 EST is 01:00 UTC the next day.
  const daily: CallingWindow = { days: [...WEEKDAYS], start: '09:00', end: '20:00' };
  assert.equal(iso(nextWindowClosing(at('2026-11-01T15:00:00Z'), daily, 'America/New_York')), '2026-11-02T01:00:00.000Z');
});
