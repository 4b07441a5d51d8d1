import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { mapHookContact, type ContactMapping } from '../../src/domain/hookAutomation.js';

const map = (body: unknown) => mapHookContact(body, 'US');
const contactOf = (mapping: ContactMapping) => {
  assert.ok(mapping.ok, mapping.ok ? '' : mapping.reason);
  return mapping.contact;
};

describe('webhook body to contact', () => {
  const mapped: Array<[string, unknown, Record<string, unknown>]> = [
    ['phone_number and names at the top level', { phone_number: '+14155550123', first_name: 'Ada', last_name: 'Lovelace' }, { phone_number: '+14155550123', first_name: 'Ada', last_name: 'Lovelace' }],
    ['a local-format number is normalised in the default region', { phone: '(415) 555-0123' }, { phone_number: '+14155550123' }],
    ['an IANA time zone is the contact\'s timezone, its letter case corrected', { phone: '+14155550123', time_zone: 'europe/paris' }, { phone_number: '+14155550123', timezone: 'Europe/Paris' }],
    ['a time zone that is no IANA name is ignored', { phone: '+14155550123', tz: '+02:00', contact: { timezone: 'Mars/Base' } }, { phone_number: '+14155550123' }],
    ['"to" is a phone number', { to: '+442071838750' }, { phone_number: '+442071838750' }],
    ['a number given as a JSON number', { phone: 14155550123 }, { phone_number: '+14155550123' }],
    ['camelCase, spaced and dashed keys', { phoneNumber: '+14155550123', 'First Name': 'Ada', 'last-name': 'L', EmailAddress: 'a@b.c' }, { phone_number: '+14155550123', first_name: 'Ada', last_name: 'L', email: 'a@b.c' }],
    ['a nested contact object', { event: 'signup', contact: { phone_number: '+14155550123', first_name: 'Ada' } }, { phone_number: '+14155550123', first_name: 'Ada' }],
    ['nested contact fields win over top-level ones, top level fills the rest', { first_name: 'Top', email: 'top@x.io', contact: { phone: '+14155550123', first_name: 'Nested' } }, { phone_number: '+14155550123', first_name: 'Nested', email: 'top@x.io' }],
    ['a full name is split when first_name is absent', { phone: '+14155550123', name: 'Ada King Lovelace' }, { phone_number: '+14155550123', first_name: 'Ada', last_name: 'King Lovelace' }],
    ['first_name wins over a full name', { phone: '+14155550123', name: 'X Y', first_name: 'Ada' }, { phone_number: '+14155550123', first_name: 'Ada' }],
    ['every other contact field', { phone: '+14155550123', address: '1 Main St', location: 'NYC', gender: 'female', age: 36, title: 'Countess' }, { phone_number: '+14155550123', address: '1 Main St', location: 'NYC', gender: 'female', age: 36, title: 'Countess' }],
    ['an age given as a string', { phone: '+14155550123', age: ' 41 ' }, { phone_number: '+14155550123', age: 41 }],
    ['an unusable age, empty and non-string values are left out', { phone: '+14155550123', age: 36.5, first_name: '  ', email: 42, last_name: ['x'] }, { phone_number: '+14155550123' }],
    ['values are trimmed', { phone: ' +14155550123 ', first_name: '  Zoë 👋 ' }, { phone_number: '+14155550123', first_name: 'Zoë 👋' }],
    ['an invalid phone_number falls back to a valid phone', { phone_number: 'n/a', phone: '+14155550123' }, { phone_number: '+14155550123' }],
  ];
  for (const [name, body, expected] of mapped) {
    test(`maps ${name}`, () => assert.deepEqual(contactOf(map(body)), expected));
  }

  const unmappable: Array<[string, unknown, RegExp]> = [
    ['an empty object', {}, /no phone number/],
    ['names without a number', { first_name: 'Ada' }, /no phone number/],
    ['an invalid number', { phone_number: '12' }, /"12" is not a valid phone number/],
    ['an array', [{ phone: '+14155550123' }], /is an array, not a JSON object/],
    ['a string', 'hello', /is a string, not a JSON object/],
    ['null', null, /is null, not a JSON object/],
    ['a phone number that is an object', { phone: { number: '+14155550123' } }, /no phone number/],
  ];
  for (const [name, body, reason] of unmappable) {
    test(`fails with a readable reason for ${name}`, () => {
      const mapping = map(body);
      assert.equal(mapping.ok, false);
      assert.match((mapping as { reason: string }).reason, reason);
    });
  }

  test('any JSON value maps or fails with a reason, never throws', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => {
        const mapping = map(body);
        if (mapping.ok) assert.match(mapping.contact.phone_number, /^\+\d{6,15}$/);
        else assert.ok(mapping.reason.length > 0);
      }),
      { numRuns: 500 },
    );
  });

  test('a valid number survives any surrounding fields', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (extra) => {
        const mapping = map({ ...extra, contact: { phone_number: '+14155550123' } });
        assert.equal(contactOf(mapping).phone_number, '+14155550123');
      }),
    );
  });
});
