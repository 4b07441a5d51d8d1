import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TYPE_NAME_PATTERN, validateObjectData } from '../../src/domain/objectTypes.js';

const type = (validation_mode: string) => ({
  type_name: 'policy',
  validation_mode,
  schema: { s: 'string', n: 'number', i: 'integer', b: 'boolean', o: 'object', a: 'array' },
});

describe('validateObjectData', () => {
  test('off accepts any data', () => {
    assert.deepEqual(validateObjectData(type('off'), { s: 1, extra: [1] }), []);
  });

  test('strict accepts values of the schema types and leaves unnamed schema fields optional', () => {
    assert.deepEqual(validateObjectData(type('strict'), { s: 'x', n: 1.5, i: 2, b: false, o: { k: 1 }, a: [] }), []);
    assert.deepEqual(validateObjectData(type('strict'), {}), []);
  });

  const wrong: [string, unknown, string][] = [
    ['s', 1, 'data.s must be a string'],
    ['n', '1', 'data.n must be a number'],
    ['n', null, 'data.n must be a number'],
    ['i', 1.5, 'data.i must be an integer'],
    ['b', 'true', 'data.b must be a boolean'],
    ['o', [], 'data.o must be an object'],
    ['o', null, 'data.o must be an object'],
    ['a', {}, 'data.a must be an array'],
  ];
  for (const [field, value, message] of wrong) {
    test(`strict rejects ${field} = ${JSON.stringify(value)}`, () => {
      assert.deepEqual(validateObjectData(type('strict'), { [field]: value }), [message]);
    });
  }

  test('strict names every offending field, including fields the schema does not name', () => {
    assert.deepEqual(validateObjectData(type('strict'), { s: 1, extra: 'x', toString: 'y' }, 'objects.policy'), [
      'objects.policy.s must be a string',
      'objects.policy.extra is not a field of object type policy',
      'objects.policy.toString is not a field of object type policy',
    ]);
  });
});

describe('type names', () => {
  for (const [name, ok] of [
    ['insurance_policy', true],
    ['A-1', true],
    ['x'.repeat(64), true],
    ['x'.repeat(65), false],
    ['1abc', false],
    ['with space', false],
    ['', false],
    ['a.b', false],
  ] as const) {
    test(`${JSON.stringify(name.slice(0, 20))} is ${ok ? 'valid' : 'invalid'}`, () => {
      assert.equal(TYPE_NAME_PATTERN.test(name), ok);
    });
  }
});
