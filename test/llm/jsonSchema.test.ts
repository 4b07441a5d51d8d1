// JSON-Schema checks of what a model writes (src/llm/jsonSchema.ts): the value when it fits,
// else every problem named by where it is, so a tool error can tell the model what to fix.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkJson, checkJsonText, jsonSchemaProblem } from '../../src/llm/jsonSchema.js';

const BOOKING = {
  type: 'object',
  properties: {
    day: { type: 'string', enum: ['Monday', 'Tuesday'] },
    time: { type: 'string', pattern: '^\\d{2}:\\d{2}$' },
    people: { type: 'integer', minimum: 1 },
    notes: { type: 'array', items: { type: 'string' } },
  },
  required: ['day', 'time'],
  additionalProperties: false,
};

test('arguments that fit the schema come back parsed', () => {
  assert.deepEqual(checkJsonText(BOOKING, '{"day":"Tuesday","time":"10:00","people":2}'), { ok: true, value: { day: 'Tuesday', time: '10:00', people: 2 } });
});

test('every problem is named by its place: missing, not allowed, wrong type, not one of the values, nested', () => {
  const check = checkJson(BOOKING, { day: 'Sunday', people: 0, notes: ['ok', 3], room: 'A' });
  assert.equal(check.ok, false);
  assert.deepEqual(check.ok ? [] : check.errors.sort(), [
    'day: must be one of "Monday", "Tuesday"',
    'notes[1]: must be string',
    'people: must be >= 1',
    'room: is not allowed',
    'time: is required',
  ]);
  assert.match(check.ok ? '' : check.message, /time: is required/);
});

test('text that is not JSON (a malformed tool call) says so', () => {
  const check = checkJsonText(BOOKING, '{"day": "Tuesday", "time": ');
  assert.equal(check.ok, false);
  assert.match(check.ok ? '' : check.message, /^not JSON: /);
});

test('a schema that comes as a new object each time checks the same; an invalid schema is named', () => {
  for (let i = 0; i < 3; i++) assert.equal(checkJson(structuredClone(BOOKING), { day: 'Monday', time: '09:30' }).ok, true);
  assert.equal(jsonSchemaProblem(BOOKING), undefined);
  assert.match(jsonSchemaProblem({ type: 'object', properties: { a: { type: 'strin' } } }) ?? '', /^is not a valid JSON Schema: /);
  assert.equal(jsonSchemaProblem([1]), 'must be a JSON Schema object');
});
