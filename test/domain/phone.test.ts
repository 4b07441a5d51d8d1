// Phone number normalisation (src/domain/phone.ts): what counts as a phone number.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normalizePhoneNumber } from '../../src/domain/phone.js';

test('E.164 and local formats of the region normalise to E.164', () => {
  const cases: [string, string, string][] = [
    ['+14155550134', 'US', '+14155550134'],
    ['(415) 555-0134', 'US', '+14155550134'],
    ['415.555.0134', 'US', '+14155550134'],
    [' +1 415 555 0134 ', 'US', '+14155550134'],
    ['020 7183 8750', 'GB', '+442071838750'],
    ['+33 6 12 34 56 78', 'US', '+33612345678'],
  ];
  for (const [input, region, expected] of cases) assert.equal(normalizePhoneNumber(input, region), expected, input);
});

test('fictional and not-yet-known ranges are accepted when their length is possible', () => {
  assert.equal(normalizePhoneNumber('+15555550100', 'US'), '+15555550100');
  assert.equal(normalizePhoneNumber('555-555-0100', 'US'), '+15555550100');
  assert.equal(normalizePhoneNumber('+447700900123', 'US'), '+447700900123');
});

test('what is not a phone number is rejected', () => {
  for (const input of ['12345', '+1415555', '+141555501345678', 'call me', '', '555-0134', '+999 1234 5678', '+1 (415) 555-0134 ext. 7']) {
    assert.equal(normalizePhoneNumber(input, 'US'), undefined, JSON.stringify(input));
  }
});
