import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { findUnstorableText, isStorableText, unstorableMessage } from '../../src/domain/storableText.js';

describe('text Postgres can store', () => {
  for (const [value, ok] of [
    ['plain', true],
    ['', true],
    ['emoji \ud83d\ude00 and é', true],
    ['nul \u0000 inside', false],
    ['lone high \ud800', false],
    ['\ud800 high then letter', false],
    ['lone low \udc00', false],
    ['reversed \ude00\ud83d', false],
  ] as const) {
    test(`${JSON.stringify(value)} is ${ok ? 'storable' : 'not storable'}`, () => {
      assert.equal(isStorableText(value), ok);
    });
  }

  test('finds the first unstorable string in a JSON value, in keys too, with its path', () => {
    assert.equal(findUnstorableText({ a: [1, 'ok', { b: null }] }), undefined);
    const inValue = findUnstorableText({ a: [1, 'ok', { b: 'x\u0000' }] });
    assert.deepEqual(inValue, { path: ['a', 2, 'b'], inKey: false });
    assert.equal(unstorableMessage('objects.policy', inValue!), 'objects.policy.a[2].b must not contain NUL characters or unpaired surrogates');
    const inKey = findUnstorableText({ a: { 'k\ud800': 1 } });
    assert.deepEqual(inKey, { path: ['a'], inKey: true });
    assert.equal(unstorableMessage('data', inKey!), 'data.a keys must not contain NUL characters or unpaired surrogates');
  });
});
