import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  defaultUpsertKeys,
  formatJsonPath,
  keyValueOf,
  MAX_PATH_SEGMENTS,
  parseJsonPath,
  parseKeyPath,
  postgresPath,
  valueAtPath,
  type JsonPathSegment,
} from '../../src/domain/jsonPath.js';

const m = (name: string): JsonPathSegment => ({ kind: 'member', name });
const i = (index: number): JsonPathSegment => ({ kind: 'index', index });

describe('parseJsonPath', () => {
  const valid: [string, JsonPathSegment[]][] = [
    ['$', []],
    ['$.id', [m('id')]],
    ['$.external_ids.hubspot.property_id', [m('external_ids'), m('hubspot'), m('property_id')]],
    ['$.items[0].sku', [m('items'), i(0), m('sku')]],
    ["$['sku code']", [m('sku code')]],
    ['$["a.b"]', [m('a.b')]],
    ["$['it\\'s']", [m("it's")]],
    ["$['back\\\\slash']", [m('back\\slash')]],
    ["$['']", [m('')]],
    ['$[10][2]', [i(10), i(2)]],
    ['$._private-x', [m('_private-x')]],
  ];
  for (const [path, segments] of valid) {
    test(`accepts ${path}`, () => {
      assert.deepEqual(parseJsonPath(path), { ok: true, segments });
    });
  }

  const invalid: [string, RegExp][] = [
    ['', /must start with \$/],
    ['id', /must start with \$/],
    ['$.', /member name/],
    ['$..id', /member name/],
    ['$.*', /member name/],
    ['$[*]', /array index or a quoted name/],
    ['$[?(@.a)]', /array index or a quoted name/],
    ['$[1:2]', /array index or a quoted name/],
    ['$[-1]', /array index or a quoted name/],
    ['$[01]', /leading zero/],
    ['$[1234567890]', /too large/],
    ["$['open", /unterminated/],
    ["$['a'", /expected \]/],
    ["$['a\\n']", /invalid escape/],
    ['$.a b', /unexpected character/],
    ['$ ', /unexpected character/],
    ['$.1a', /member name/],
    ['$' + '.a'.repeat(MAX_PATH_SEGMENTS + 1), /at most 32 segments/],
    ['$.' + 'a'.repeat(600), /at most 512 characters/],
  ];
  for (const [path, error] of invalid) {
    test(`rejects ${JSON.stringify(path.slice(0, 30))} saying why`, () => {
      const res = parseJsonPath(path);
      assert.equal(res.ok, false);
      assert.match((res as { error: string }).error, error);
    });
  }

  test('parseKeyPath rejects the bare root', () => {
    assert.equal(parseKeyPath('$').ok, false);
    assert.equal(parseKeyPath('$.id').ok, true);
  });

  test('never throws on any input, and whatever it accepts formats back to an equivalent path', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string().map((s) => `$${s}`), fc.stringMatching(/^\$(\.[a-z_]{1,3}|\[\d{1,2}\]|\['[a-z' \\]{0,4}'\])*$/)), (path) => {
        const res = parseJsonPath(path);
        if (res.ok) assert.deepEqual(parseJsonPath(formatJsonPath(res.segments)), res);
      }),
      { numRuns: 2000 },
    );
  });

  test('formatting any segments gives a path that parses back to them', () => {
    const segment = fc.oneof(fc.string({ maxLength: 8 }).map(m), fc.nat({ max: 99999 }).map(i));
    fc.assert(
      fc.property(fc.array(segment, { maxLength: MAX_PATH_SEGMENTS }), (segments) => {
        const path = formatJsonPath(segments);
        if (path.length > 512) return;
        assert.deepEqual(parseJsonPath(path), { ok: true, segments });
      }),
      { numRuns: 1000 },
    );
  });
});

describe('valueAtPath and keys', () => {
  const doc = { id: 7, a: { 'b c': [10, { d: 'x' }] }, flag: true, nil: null, proto: {} };
  const cases: [string, unknown][] = [
    ['$.id', 7],
    ["$.a['b c'][0]", 10],
    ["$.a['b c'][1].d", 'x'],
    ["$.a['b c'][2]", undefined],
    ['$.id.x', undefined],
    ['$.a[0]', undefined],
    ['$.nil', null],
    ['$.proto.constructor', undefined],
    ['$.toString', undefined],
  ];
  for (const [path, expected] of cases) {
    test(`${path} -> ${JSON.stringify(expected)}`, () => {
      const parsed = parseJsonPath(path);
      assert.ok(parsed.ok);
      assert.deepEqual(valueAtPath(doc, parsed.segments), expected);
    });
  }

  test('key values: strings as they are, numbers and booleans as JSON text, nothing for the rest', () => {
    assert.deepEqual([keyValueOf('a'), keyValueOf(42), keyValueOf(1.5), keyValueOf(false), keyValueOf(null), keyValueOf({}), keyValueOf([1]), keyValueOf(Number.NaN)], ['a', '42', '1.5', 'false', undefined, undefined, undefined, undefined]);
  });

  test('the Postgres path names members by name and elements by index', () => {
    const parsed = parseJsonPath("$.a['b c'][1]");
    assert.ok(parsed.ok);
    assert.deepEqual(postgresPath(parsed.segments), ['a', 'b c', '1']);
  });

  test('default upsert keys: each external_ids system with a property_id, in data order, then $.id', () => {
    const keys = defaultUpsertKeys({
      id: 'own',
      external_ids: { hubspot: { property_id: 'hs-1' }, 'sales force': { property_id: 99 }, empty: {}, bad: { property_id: { nested: 1 } } },
    });
    assert.deepEqual(
      keys.map((k) => [k.path, k.value]),
      [
        ['$.external_ids.hubspot.property_id', 'hs-1'],
        ["$.external_ids['sales force'].property_id", '99'],
        ['$.id', 'own'],
      ],
    );
    assert.deepEqual(defaultUpsertKeys({ name: 'no keys' }), []);
    assert.deepEqual(defaultUpsertKeys({ external_ids: [1, 2], id: null }), []);
  });
});
