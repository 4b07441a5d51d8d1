// A callee's zone from their number (src/domain/phoneTimeZones.ts): single-zone regions and
// NANP area codes that lie in one zone; nothing where the number does not say.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { areaCodeTimeZone, regionTimeZone, timeZoneOfPhoneNumber } from '../../src/domain/phoneTimeZones.js';
import { canonicalTimeZone } from '../../src/domain/timeZones.js';

test('NANP numbers: by area code where it lies in one zone', () => {
  assert.equal(timeZoneOfPhoneNumber('+14155550134'), 'America/Los_Angeles');
  assert.equal(timeZoneOfPhoneNumber('+12125550134'), 'America/New_York');
  assert.equal(timeZoneOfPhoneNumber('+13125550134'), 'America/Chicago');
  assert.equal(timeZoneOfPhoneNumber('+13035550134'), 'America/Denver');
  assert.equal(timeZoneOfPhoneNumber('+16025550134'), 'America/Phoenix');
  assert.equal(timeZoneOfPhoneNumber('+18085550134'), 'Pacific/Honolulu');
  assert.equal(timeZoneOfPhoneNumber('+14165550134'), 'America/Toronto');
  assert.equal(timeZoneOfPhoneNumber('+17805550134'), 'America/Edmonton');
});

test('NANP numbers an area code does not place: split codes, fictional 555, unlisted codes', () => {
  for (const n of ['+18505550134', '+18125550134', '+12705550134', '+16055550134', '+19285550134', '+15555550100', '+19075550134']) {
    assert.equal(timeZoneOfPhoneNumber(n), undefined, n);
  }
});

test('other NANP regions and other countries: the one zone of a single-zone region', () => {
  assert.equal(timeZoneOfPhoneNumber('+18765550100'), 'America/Jamaica');
  assert.equal(timeZoneOfPhoneNumber('+33612345678'), 'Europe/Paris');
  assert.equal(timeZoneOfPhoneNumber('+442071838750'), 'Europe/London');
  assert.equal(timeZoneOfPhoneNumber('+819012345678'), 'Asia/Tokyo');
  // Germany's CLDR zones (Berlin, Busingen) keep one clock.
  assert.equal(timeZoneOfPhoneNumber('+4915112345678'), 'Europe/Berlin');
});

test('regions with several clocks give no zone', () => {
  for (const n of ['+61212345678', '+34912345678', '+351912345678', '+5511912345678', '+79161234567', '+525512345678']) {
    assert.equal(timeZoneOfPhoneNumber(n), undefined, n);
  }
  assert.equal(regionTimeZone('US'), undefined);
  assert.equal(timeZoneOfPhoneNumber('not a number'), undefined);
});

test('every zone of the area-code table is a zone of the database', () => {
  for (const code of ['212', '317', '415', '808', '204', '506', '902', '604', '915', '602']) {
    const zone = areaCodeTimeZone(code);
    assert.ok(zone && canonicalTimeZone(zone), code);
  }
});
