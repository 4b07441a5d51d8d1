// The pure step logic of scripts: templates and variables, conditions, objectives,
// structured data, and what the simulated callee answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseScriptDefinition } from '../../src/domain/scripts/definition.js';
import {
  calleeKnowledge,
  collectStructuredData,
  evaluateCondition,
  evaluateObjectives,
  initialScope,
  renderJson,
  renderSpeech,
  simulatedCalleeAnswer,
} from '../../src/domain/scripts/steps.js';
import { fieldPathReference, getVariable, plainReference, renderTemplate, setVariable } from '../../src/domain/scripts/templates.js';

const scope = initialScope({
  contact: { first_name: 'Jane', last_name: 'Doe', full_name: null, email: 'jane@example.com', age: 40 },
  objects: { identity: [{ date_of_birth: '1970-01-01' }, { date_of_birth: '1985-04-03' }], account: { number: 'A-1' } },
  call: { id: 'c1', type: 'outbound' },
});

describe('variables and templates', () => {
  it('contact.full_name is derived when the record has none', () => {
    assert.equal(getVariable(scope, 'contact.full_name'), 'Jane Doe');
  });

  it('a name on a list of linked objects reads the newest one', () => {
    assert.equal(getVariable(scope, 'objects.identity.date_of_birth'), '1985-04-03');
    assert.equal(getVariable(scope, 'objects.identity.0.date_of_birth'), '1970-01-01');
  });

  it('templates fill variables and leave unknown ones empty', () => {
    assert.equal(renderTemplate('Hi {{ contact.first_name }}, {{nope}}!', (n) => getVariable(scope, n)), 'Hi Jane, !');
    assert.equal(renderSpeech('Hi {{contact.first_name}} {{nope}} .', scope), 'Hi Jane.');
  });

  it('numbers, booleans and objects render as text', () => {
    assert.equal(renderTemplate('{{contact.age}} {{x}} {{o}}', (n) => ({ x: true, o: { a: 1 } })[n] ?? getVariable(scope, n)), '40 true {"a":1}');
  });

  it('a JSON template keeps a lone reference typed and renders the rest', () => {
    assert.deepEqual(renderJson({ age: '{{contact.age}}', who: 'Ms {{contact.last_name}}', list: ['{{call.id}}', 3] }, scope), { age: 40, who: 'Ms Doe', list: ['c1', 3] });
  });

  it('setVariable creates the path', () => {
    const s: Record<string, unknown> = {};
    setVariable(s, 'answers.name', 'Jane');
    assert.deepEqual(s, { answers: { name: 'Jane' } });
  });

  it('plain references and field paths are told apart', () => {
    assert.equal(plainReference(' {{ answers.name }} '), 'answers.name');
    assert.equal(plainReference('{{a}} {{b}}'), undefined);
    assert.deepEqual(fieldPathReference('{{webhook.response}}.person.name'), { variable: 'webhook.response', field: 'person.name' });
    assert.equal(fieldPathReference('{{webhook.response}}'), undefined);
  });
});

describe('conditions', () => {
  const s = { auth_check: { verified: true, status: 'failed', notes: '' }, n: 3 };
  const rows: Array<[string, Parameters<typeof evaluateCondition>[0], boolean]> = [
    ['boolean equals true', { variable: 'auth_check.verified', equals: true }, true],
    ['boolean equals the text "true"', { variable: 'auth_check.verified', equals: 'TRUE' }, true],
    ['text equals ignores case', { variable: 'auth_check.status', equals: 'Failed' }, true],
    ['not_equals', { variable: 'auth_check.status', not_equals: 'verified' }, true],
    ['number equals', { variable: 'n', equals: 3 }, true],
    ['is_empty on an empty string', { variable: 'auth_check.notes', is_empty: true }, true],
    ['is_empty on an unset variable', { variable: 'nothing', is_empty: true }, true],
    ['is_empty false on a value', { variable: 'n', is_empty: false }, true],
    ['equals null on an unset variable', { variable: 'nothing', equals: null }, true],
    ['step_reached', { step_reached: 'greet' }, true],
    ['step not reached', { step_reached: 'other' }, false],
  ];
  for (const [name, condition, expected] of rows) it(`${name} → ${expected}`, () => assert.equal(evaluateCondition(condition, s, new Set(['greet'])), expected));
});

describe('objectives and structured data', () => {
  const parsed = parseScriptDefinition({
    name: 'x',
    objectives: ['Finish', { objective: 'Verify', met_when: { variable: 'auth_check.verified', equals: true } }, { objective: 'Greet', met_when: { step_reached: 'a' } }],
    structured_data: { verified: 'auth_check.verified', missing: 'answers.none' },
    steps: [{ id: 'a', type: 'say', text: 'hi' }],
  });
  assert.ok(parsed.ok);
  const script = parsed.ok ? parsed.script : (undefined as never);

  it('a plain objective is met when the script completed; a conditional one by its condition', () => {
    assert.deepEqual(evaluateObjectives(script, { auth_check: { verified: false } }, new Set(['a']), true), [
      { objective: 'Finish', met: true },
      { objective: 'Verify', met: false },
      { objective: 'Greet', met: true },
    ]);
    assert.equal(evaluateObjectives(script, {}, new Set(), false)[0].met, false);
  });

  it('structured data reads each variable, null when unset', () => {
    assert.deepEqual(collectStructuredData(script, { auth_check: { verified: true } }), { verified: true, missing: null });
  });
});

describe('the simulated callee', () => {
  const answer = (variable: string, expect: Parameters<typeof simulatedCalleeAnswer>[0]['expect'], simulatedAnswers: Record<string, string> = {}) =>
    simulatedCalleeAnswer({ variable, expect, scope, simulatedAnswers, region: 'US' });

  it('answers a name question from the contact', () => assert.equal(answer('answers.name', 'name'), 'My name is Jane Doe.'));
  it('answers a date of birth from a linked object, spoken', () => assert.equal(answer('answers.date_of_birth', 'date'), "It's April 3rd, 1985."));
  it('a dob alias reads the same field', () => assert.equal(answer('answers.dob', 'date'), "It's April 3rd, 1985."));
  it('answers other contact fields', () => assert.equal(answer('answers.email', 'text'), "It's jane@example.com."));
  it('answers from any linked object field of that name', () => assert.equal(answer('answers.number', 'text'), "It's A-1."));
  it('says it is not sure when it knows nothing', () => assert.equal(answer('answers.favourite_colour', 'text'), "I'm not sure."));
  it('says yes to a yes/no question', () => assert.equal(answer('answers.consent', 'yes_no'), 'Yes.'));
  it('a per-script simulated answer wins, as a template', () => {
    assert.equal(answer('answers.date_of_birth', 'date', { 'answers.date_of_birth': "It's the 4th of July, {{contact.age}}90." }), "It's the 4th of July, 4090.");
  });
  it('knows nothing of a date of birth without a linked object', () => {
    assert.equal(calleeKnowledge('answers.date_of_birth', 'date', { contact: { first_name: 'A' }, objects: {} }), undefined);
  });
});
