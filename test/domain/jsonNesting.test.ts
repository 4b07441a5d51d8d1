import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { jsonNestedDeeperThan, jsonTextNestedDeeperThan, MAX_JSON_DEPTH } from '../../src/domain/jsonNesting.js';
import { parseScriptDefinition } from '../../src/domain/scripts/definition.js';
import { findUnstorableText } from '../../src/domain/storableText.js';

const bytes = (text: string) => Buffer.from(text, 'utf8');

/** A value `levels` deep: { a: { a: … leaf } }. Built iteratively. */
function deepObject(levels: number, leaf: unknown = 1): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

/** The nesting depth of a JSON value (for the property test; recursion is fine at these sizes). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

describe('JSON nesting depth', () => {
  test(`the limit is ${MAX_JSON_DEPTH} levels, counting the outermost array or object`, () => {
    assert.equal(MAX_JSON_DEPTH, 64);
    assert.equal(jsonTextNestedDeeperThan(bytes(JSON.stringify(deepObject(64)))), false);
    assert.equal(jsonTextNestedDeeperThan(bytes(JSON.stringify(deepObject(65)))), true);
    assert.equal(jsonNestedDeeperThan(deepObject(64)), false);
    assert.equal(jsonNestedDeeperThan(deepObject(65)), true);
    assert.equal(jsonTextNestedDeeperThan(bytes('1'), 0), false);
    assert.equal(jsonTextNestedDeeperThan(bytes('[]'), 0), true);
  });

  test('brackets inside strings, escaped quotes included, do not count', () => {
    const text = JSON.stringify({ s: '[[[{{{', t: 'quote \\" then [[[[', u: '\\' });
    assert.equal(jsonTextNestedDeeperThan(bytes(text), 1), false);
    assert.equal(jsonTextNestedDeeperThan(bytes(JSON.stringify(['"[', ['x']])), 1), true);
  });

  test('the text scan and the value walk agree with the depth of any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (value, max) => {
        const deeper = depthOf(value) > max;
        assert.equal(jsonTextNestedDeeperThan(bytes(JSON.stringify(value)), max), deeper);
        assert.equal(jsonNestedDeeperThan(value, max), deeper);
      }),
    );
  });

  test('a million levels take no stack: both checks answer, and stop at the limit', () => {
    const levels = 1_000_000;
    assert.equal(jsonTextNestedDeeperThan(bytes(`${'['.repeat(levels)}${']'.repeat(levels)}`)), true);
    assert.equal(jsonNestedDeeperThan(deepObject(levels)), true);
  });
});

describe('recursive consumers are iterative or bounded', () => {
  test('findUnstorableText walks 200,000 levels without overflowing and names the path', () => {
    const found = findUnstorableText(deepObject(200_000, 'nul \u0000'));
    assert.equal(found?.path.length, 200_000);
    assert.equal(found?.inKey, false);
    assert.equal(findUnstorableText(deepObject(200_000, 'fine')), undefined);
  });

  test('findUnstorableText reports the first problem in document order, a member name before its value', () => {
    assert.deepEqual(findUnstorableText({ a: ['ok', { 'b\u0000': 'x\u0000' }], c: '\ud800' }), { path: ['a', 1], inKey: true });
    assert.deepEqual(findUnstorableText({ a: ['ok', { b: 'x\u0000' }], c: '\ud800' }), { path: ['a', 1, 'b'], inKey: false });
    assert.deepEqual(findUnstorableText([{ z: 'fine' }, 'x\u0000'], ['objects']), { path: ['objects', 1], inKey: false });
  });

  test('a script nested deeper than the limit is refused before the schema walks it', () => {
    const script = {
      name: 'deep',
      steps: [{ id: 'hook', type: 'webhook', url: 'https://example.com', body: deepObject(10_000) }],
    };
    assert.deepEqual(parseScriptDefinition(script), { ok: false, message: `script is nested deeper than ${MAX_JSON_DEPTH} levels` });
  });
});
