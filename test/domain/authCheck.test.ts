// The Auth Check tool, rule by rule and status by status (docs/scripts.md "Auth Check"). Each table row is one behaviour; the row's name says which.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  authCheckSystemNote,
  authCheckVariableEntries,
  closeWords,
  editDistance,
  exactMatch,
  runAuthCheck,
  semanticMatch,
  type AuthCheckSettings,
  type TranscriptTurn,
} from '../../src/domain/authCheck/index.js';
import { getVariable, type Scope } from '../../src/domain/scripts/templates.js';

function run(settings: Partial<AuthCheckSettings>, scope: Scope = {}, transcript: TranscriptTurn[] = [], region = 'US') {
  return runAuthCheck({ record_array: [], check_array: [], ...settings } as AuthCheckSettings, {
    lookup: (name) => getVariable(scope, name),
    region,
    transcript,
  });
}

const VARIABLE_TYPES: Record<string, string> = {
  verified: 'boolean',
  status: 'string',
  matched_count: 'integer',
  required_count: 'integer',
  matched_checks: 'string[]',
  failed_checks: 'string[]',
  exact_match: 'boolean',
  semantic_match: 'boolean',
  method: 'string',
  notes: 'string',
  verified_data: 'string',
};

/** Every variable of the table is present with its stated type. */
function assertAllVariables(vars: Record<string, unknown>) {
  assert.deepEqual(Object.keys(vars).sort(), Object.keys(VARIABLE_TYPES).sort());
  for (const [name, type] of Object.entries(VARIABLE_TYPES)) {
    const v = vars[name];
    if (type === 'integer') assert.ok(Number.isInteger(v), `${name} is an integer`);
    else if (type === 'string[]') assert.ok(Array.isArray(v) && v.every((x) => typeof x === 'string'), `${name} is a list of strings`);
    else assert.equal(typeof v, type, `${name} is a ${type}`);
  }
  assert.ok(['verified', 'failed', 'insufficient_data', 'error'].includes(vars.status as string));
  assert.ok(['exact', 'semantic', 'mixed'].includes(vars.method as string));
}

describe('exact matching (rule 3)', () => {
  const rows: Array<[string, string, string, boolean, string?]> = [
    ['ignores case', 'Jane Doe', 'JANE DOE', true],
    ['ignores spacing', 'Jane Doe', '  Jane   Doe ', true],
    ['ignores missing spaces', 'Jane Doe', 'JaneDoe', true],
    ['ignores commas', 'Doe, Jane', 'Doe Jane', true],
    ['ignores full stops', 'J. Doe', 'J Doe', true],
    ['keeps other punctuation', "O'Brien", 'OBrien', false],
    ['keeps hyphens', 'Mary-Ann', 'Mary Ann', false],
    ['different words differ', 'Jane Doe', 'John Doe', false],
    ['ISO and US numeric date are the same day', '1985-04-03', '04/03/1985', true],
    ['US numeric order is month first', '1985-04-03', '03/04/1985', false],
    ['region GB reads numeric dates day first', '1985-04-03', '03/04/1985', true, 'GB'],
    ['day month-name year', '1985-04-03', '3 April 1985', true],
    ['month-name day-with-ordinal year', '1985-04-03', 'April 3rd, 1985', true],
    ['abbreviated month with a full stop', '3 April 1985', 'Apr. 3, 1985', true],
    ['"the 3rd of April" form', '1985-04-03', 'the 3rd of April, 1985', true],
    ['ISO date-time is its date', '1985-04-03T00:00:00Z', 'April 3rd, 1985', true],
    ['words and numbers of different dates differ', 'April 3rd, 1985', 'April 4th, 1985', false],
    ['an impossible date compares as text', '31/02/1985', '1985-03-03', false],
    ['numbers compare as text', '12345', '12 345', true],
  ];
  for (const [name, a, b, expected, region] of rows) {
    it(`${name}: "${a}" vs "${b}" → ${expected}`, () => {
      assert.equal(exactMatch(a, b, region ?? 'US'), expected);
      assert.equal(exactMatch(b, a, region ?? 'US'), expected);
    });
  }
});

describe('semantic matching (rule 4)', () => {
  const rows: Array<[string, string, string, boolean]> = [
    ['one substitution in a 5-8 letter word', 'Smith', 'Smyth', true],
    ['one swap of neighbours in a 4-letter word', 'Jhon Smith', 'John Smith', true],
    ['one swap of neighbours in a 3-letter word', 'Tmo', 'Tom', true],
    ['two swaps in a 4-letter word are too many', 'Jhno', 'John', false],
    ['a swap that is not of neighbours', 'Jnho', 'John', false],
    ['a 4-letter word allows no added letter', 'Ann', 'Anon', false],
    ['one swap in a longer word', 'Micheal', 'Michael', true],
    ['two edits in a 9+ letter word', 'Katherine', 'Katharyne', true],
    ['two edits in an 8 letter word are too many', 'Jennifer', 'Jenifar', false],
    ['a 4-letter word allows no edit', 'Jane', 'Jana', false],
    ['a 5-letter word allows one edit', 'Janet', 'Janat', true],
    ['length differs by two', 'Katherine', 'Kathrin', false],
    ['word by word: every word close', 'Jane Smith', 'Jane Smyth', true],
    ['word by word: one word too far', 'Tom Lee', 'Tim Lee', false],
    ['different first letter (Catherine/Katherine)', 'Catherine', 'Katherine', false],
    ['nickname Bob/Robert never matches', 'Robert', 'Bob', false],
    ['nickname Liz/Elizabeth never matches', 'Elizabeth', 'Liz', false],
    ['nickname Rob/Robert never matches', 'Robert', 'Rob', false],
    ['nickname Mike/Michael never matches', 'Michael', 'Mike', false],
    ['abbreviation St/Street never matches', 'Street', 'St', false],
    ['abbreviation inside an address never matches', '12 Main Street', '12 Main St', false],
    ['abbreviation Rd/Road never matches', 'Road', 'Rd', false],
    ['a truncated word never matches', 'Roberts', 'Robert', false],
    ['dates never match semantically', '1985-04-03', '1985-04-04', false],
    ['a date against text never matches semantically', 'April 3rd, 1985', 'April 3rd, 1986', false],
    ['digits never match semantically', '12345678', '12345679', false],
    ['empty never matches', '', 'Smith', false],
  ];
  for (const [name, a, b, expected] of rows) {
    it(`${name}: "${a}" vs "${b}" → ${expected}`, () => {
      assert.equal(semanticMatch(a, b), expected);
      assert.equal(semanticMatch(b, a), expected);
    });
  }

  it('edit distance counts a swap of neighbours as one edit', () => {
    assert.equal(editDistance('micheal', 'michael'), 1);
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(editDistance('', 'abc'), 3);
  });

  it('close words: the budget edges are 4, 5, 8 and 9 letters', () => {
    assert.equal(closeWords('abcd', 'abce'), false); // 4 letters: 0 edits
    assert.equal(closeWords('abcde', 'abcdf'), true); // 5 letters: 1 edit
    assert.equal(closeWords('abcdefgh', 'abcdefxy'), false); // 8 letters: 2 edits is too many
    assert.equal(closeWords('abcdefghi', 'abcdefgxy'), true); // 9 letters: 2 edits
    assert.equal(closeWords('abcdefghi', 'abcdexyzi'), false); // 9 letters: 3 edits
  });
});

describe('positions (rules 1, 2)', () => {
  const scope = { contact: { full_name: 'Jane Doe', email: 'jane@example.com' }, answers: { name: 'Jane Doe', email: '' } };

  it('compares the Nth record value only with the Nth check value', () => {
    const r = run({ record_array: ['Jane Doe', 'jane@example.com'], check_array: ['jane@example.com', 'Jane Doe'] });
    assert.equal(r.variables.status, 'failed');
    assert.equal(r.variables.matched_count, 0);
    assert.deepEqual(r.variables.failed_checks, ['0', '1']);
  });

  it('a missing value on the record side fails that position', () => {
    const r = run({ record_array: ['{{contact.full_name}}', '{{contact.date_of_birth}}'], check_array: ['Jane Doe', '1985-04-03'], required_match_count: '1' }, scope);
    assert.deepEqual(r.variables.matched_checks, ['0']);
    assert.deepEqual(r.variables.failed_checks, ['1']);
    assert.equal(r.positions[1].reason, 'missing');
    assert.equal(r.variables.status, 'verified');
  });

  it('an empty value on the check side fails that position', () => {
    const r = run({ record_array: ['{{contact.full_name}}', '{{contact.email}}'], check_array: ['{{answers.name}}', '{{answers.email}}'] }, scope);
    assert.equal(r.positions[1].reason, 'empty');
    assert.equal(r.variables.status, 'failed');
  });

  it('a value of only spaces, commas and full stops is empty', () => {
    const r = run({ record_array: ['Jane'], check_array: [' ., '] });
    assert.equal(r.positions[0].reason, 'empty');
  });

  it('two empty values never match each other', () => {
    const r = run({ record_array: [''], check_array: [''] });
    assert.equal(r.variables.matched_count, 0);
    assert.equal(r.variables.status, 'failed');
  });

  it('positions without a partner count as failed, and blank Required Match Count needs all positions', () => {
    const r = run({ record_array: ['Jane Doe', '1985-04-03', 'London'], check_array: ['jane doe', '3 April 1985'] });
    assert.equal(r.variables.required_count, 3);
    assert.equal(r.variables.matched_count, 2);
    assert.deepEqual(r.variables.failed_checks, ['2']);
    assert.equal(r.positions[2].reason, 'unpartnered');
    assert.equal(r.variables.status, 'failed');
  });

  it('an extra check value without a record partner also fails', () => {
    const r = run({ record_array: ['Jane Doe'], check_array: ['Jane Doe', 'extra'], required_match_count: 1 });
    assert.deepEqual(r.variables.failed_checks, ['1']);
    assert.equal(r.variables.status, 'verified');
  });

  it('numbers in the arrays compare as text', () => {
    const r = run({ record_array: [42], check_array: ['42'] });
    assert.equal(r.variables.status, 'verified');
  });

  it('a template mixing text and variables is rendered before comparing', () => {
    const r = run({ record_array: ['{{contact.first}} {{contact.last}}'], check_array: ['jane doe'] }, { contact: { first: 'Jane', last: 'Doe' } });
    assert.equal(r.variables.status, 'verified');
  });
});

describe('Exact switch and methods (rules 3, 4)', () => {
  const settings = { record_array: ['Jane Smith', '1985-04-03'], check_array: ['Jane Smyth', 'April 3rd, 1985'] };

  it('Exact blank: exact matching only', () => {
    const r = run(settings);
    assert.deepEqual(r.variables.failed_checks, ['0']);
    assert.equal(r.variables.semantic_match, false);
  });

  it('Exact Yes: exact matching only', () => {
    assert.equal(run({ ...settings, exact: 'Yes' }).variables.status, 'failed');
  });

  it('Exact No: a near spelling matches semantically and the method is mixed', () => {
    const r = run({ ...settings, exact: 'No' });
    assert.equal(r.variables.status, 'verified');
    assert.equal(r.positions[0].outcome, 'semantic');
    assert.equal(r.positions[1].outcome, 'exact');
    assert.equal(r.variables.semantic_match, true);
    assert.equal(r.variables.exact_match, false);
    assert.equal(r.variables.method, 'mixed');
  });

  it('Exact No: every match semantic gives method semantic', () => {
    const r = run({ record_array: ['Jane Smith'], check_array: ['Jane Smyth'], exact: 'No' });
    assert.equal(r.variables.method, 'semantic');
    assert.equal(r.variables.exact_match, false);
  });

  it('Exact No: semantic matching runs only where exact failed (an exact match stays exact)', () => {
    const r = run({ record_array: ['Jane Smith'], check_array: ['JANE SMITH'], exact: 'No' });
    assert.equal(r.variables.method, 'exact');
    assert.equal(r.variables.exact_match, true);
    assert.equal(r.variables.semantic_match, false);
  });

  it('Exact No: dates never match semantically', () => {
    const r = run({ record_array: ['1985-04-03'], check_array: ['1985-04-08'], exact: 'No' });
    assert.equal(r.variables.status, 'failed');
  });

  it('Exact No: nicknames never match', () => {
    const r = run({ record_array: ['Robert', 'Elizabeth', '12 High Street'], check_array: ['Bob', 'Liz', '12 High St'], exact: 'No', required_match_count: 1 });
    assert.equal(r.variables.matched_count, 0);
  });

  it('exact_match is false when the caller was not verified', () => {
    const r = run({ record_array: ['Jane', 'Doe'], check_array: ['Jane', 'Roe'] });
    assert.equal(r.variables.exact_match, false);
    assert.equal(r.variables.method, 'exact');
  });

  it('semantic_match is true even when the run fails', () => {
    const r = run({ record_array: ['Jane Smith', 'London'], check_array: ['Jane Smyth', 'Paris'], exact: 'No' });
    assert.equal(r.variables.status, 'failed');
    assert.equal(r.variables.semantic_match, true);
  });
});

describe('Required Match Count (rule 8, status table)', () => {
  const settings = { record_array: ['Jane Doe', '1985-04-03', 'London'], check_array: ['Jane Doe', '1985-04-03', 'Paris'] };
  const rows: Array<[string, AuthCheckSettings['required_match_count'], string, number]> = [
    ['blank means all positions', '', 'failed', 3],
    ['absent means all positions', undefined, 'failed', 3],
    ['null means all positions', null, 'failed', 3],
    ['a literal count reached verifies', '2', 'verified', 2],
    ['a numeric count reached verifies', 2, 'verified', 2],
    ['surrounding spaces are allowed', ' 2 ', 'verified', 2],
    ['a count above the matches fails', '3', 'failed', 3],
    ['a count above the positions fails', 5, 'failed', 5],
    ['a decimal is an error', '1.5', 'error', 0],
    ['a negative number is an error', '-1', 'error', 0],
    ['zero is an error', '0', 'error', 0],
    ['words are an error', 'two', 'error', 0],
    ['a variable reference is an error (literal only)', '{{answers.count}}', 'error', 0],
    ['a fractional number is an error', 1.5, 'error', 0],
  ];
  for (const [name, value, status, required] of rows) {
    it(`${name} (${JSON.stringify(value)} → ${status}, required_count ${required})`, () => {
      const r = run({ ...settings, required_match_count: value }, { answers: { count: '2' } });
      assert.equal(r.variables.status, status);
      assert.equal(r.variables.required_count, required);
      assert.equal(r.variables.verified, status === 'verified');
      assert.equal(r.result, status === 'verified');
      assertAllVariables(r.variables as unknown as Record<string, unknown>);
    });
  }
});

describe('statuses (Auth Check status table)', () => {
  it('insufficient_data when the Record Array is empty, with every variable written', () => {
    const r = run({ record_array: [], check_array: ['Jane'] });
    assert.equal(r.variables.status, 'insufficient_data');
    assert.equal(r.variables.verified, false);
    assert.equal(r.variables.required_count, 1);
    assert.deepEqual(r.variables.failed_checks, ['0']);
    assert.match(r.variables.notes, /Record Array is empty/);
    assertAllVariables(r.variables as unknown as Record<string, unknown>);
  });

  it('insufficient_data when the Check Array is empty', () => {
    const r = run({ record_array: ['Jane'], check_array: [] });
    assert.equal(r.variables.status, 'insufficient_data');
    assert.match(r.variables.notes, /Check Array is empty/);
  });

  it('insufficient_data when both are empty', () => {
    const r = run({});
    assert.equal(r.variables.status, 'insufficient_data');
    assert.equal(r.variables.required_count, 0);
    assert.deepEqual(r.variables.failed_checks, []);
  });

  it('an empty array wins over invalid settings (the status table order)', () => {
    assert.equal(run({ record_array: [], check_array: ['x'], required_match_count: 'abc' }).variables.status, 'insufficient_data');
  });

  it('error when Check Transcript is shorter than the Check Array', () => {
    const r = run({ record_array: ['a', 'b'], check_array: ['a', 'b'], check_transcript: ['true'] });
    assert.equal(r.variables.status, 'error');
    assert.match(r.variables.notes, /Check Transcript has 1 value for 2 Check Array positions/);
    assertAllVariables(r.variables as unknown as Record<string, unknown>);
  });

  it('error when Check Transcript is longer than the Check Array', () => {
    assert.equal(run({ record_array: ['a'], check_array: ['a'], check_transcript: ['false', 'false'] }).variables.status, 'error');
  });

  it('error when Check Transcript holds something other than true or false', () => {
    const r = run({ record_array: ['a'], check_array: ['a'], check_transcript: ['yes'] });
    assert.equal(r.variables.status, 'error');
    assert.match(r.variables.notes, /"yes" at position 0 is not true or false/);
  });

  it('an error run compares nothing and reports no position', () => {
    const r = run({ record_array: ['a'], check_array: ['a'], required_match_count: 'x' });
    assert.equal(r.variables.matched_count, 0);
    assert.deepEqual(r.variables.matched_checks, []);
    assert.deepEqual(r.variables.failed_checks, []);
    assert.deepEqual(r.positions, []);
  });

  it('verified when the matched positions reach the required count', () => {
    const r = run({ record_array: ['Jane Doe', '1985-04-03'], check_array: ['jane doe', 'April 3rd, 1985'] });
    assert.equal(r.variables.status, 'verified');
    assert.equal(r.variables.verified, true);
    assert.equal(r.variables.matched_count, 2);
    assert.deepEqual(r.variables.matched_checks, ['0', '1']);
    assert.deepEqual(r.variables.failed_checks, []);
    assert.equal(r.variables.exact_match, true);
    assert.equal(r.variables.method, 'exact');
    assert.equal(r.variables.verified_data, '');
    assertAllVariables(r.variables as unknown as Record<string, unknown>);
  });

  it('failed when the matched positions stay below the required count', () => {
    const r = run({ record_array: ['Jane Doe', '1985-04-03'], check_array: ['jane doe', 'April 4th, 1985'] });
    assert.equal(r.variables.status, 'failed');
    assert.equal(r.variables.verified, false);
    assert.deepEqual(r.variables.failed_checks, ['1']);
    assert.match(r.variables.notes, /Failed positions: 1 \(mismatch\)/);
    assertAllVariables(r.variables as unknown as Record<string, unknown>);
  });

  it('the variables carry the auth_check prefix as dotted names', () => {
    const entries = authCheckVariableEntries(run({ record_array: ['a'], check_array: ['a'] }).variables);
    assert.deepEqual(Object.keys(entries).sort(), Object.keys(VARIABLE_TYPES).map((k) => `auth_check.${k}`).sort());
  });
});

describe('Check Transcript (rule 5)', () => {
  const transcript: TranscriptTurn[] = [
    { role: 'agent', text: 'What is your date of birth?' },
    { role: 'user', text: "It's April 3rd, 1985.", variable: 'answers.dob', expect: 'date' },
    { role: 'agent', text: 'And your name?' },
    { role: 'user', text: 'My name is Jane Doe.', variable: 'answers.name', expect: 'name' },
  ];

  it('a flagged position re-extracts the value from the transcript and writes it back into the variable', () => {
    const scope = { answers: { dob: '1990-01-01', name: 'Jane Doe' } };
    const r = run({ record_array: ['1985-04-03', 'Jane Doe'], check_array: ['{{answers.dob}}', '{{answers.name}}'], check_transcript: ['true', 'false'] }, scope, transcript);
    assert.equal(r.variables.status, 'verified');
    assert.deepEqual(r.writes, [{ variable: 'answers.dob', value: 'April 3rd, 1985', previous: '1990-01-01', position: 0 }]);
    assert.equal(r.positions[0].refreshed, true);
    assert.match(r.variables.notes, /Refreshed from the transcript: position 0/);
  });

  it('the latest answer in the transcript corrects an earlier one', () => {
    const corrected: TranscriptTurn[] = [...transcript, { role: 'user', text: 'Sorry, it is the 4th of April 1985.', variable: 'answers.dob', expect: 'date' }];
    const r = run({ record_array: ['1985-04-04'], check_array: ['{{answers.dob}}'], check_transcript: [true] }, { answers: { dob: 'April 3rd, 1985' } }, corrected);
    assert.equal(r.variables.status, 'verified');
    assert.equal(r.writes[0].value, 'the 4th of April 1985');
  });

  it('an unflagged position keeps the stored value', () => {
    const r = run({ record_array: ['1985-04-03'], check_array: ['{{answers.dob}}'], check_transcript: ['false'] }, { answers: { dob: '1990-01-01' } }, transcript);
    assert.equal(r.variables.status, 'failed');
    assert.deepEqual(r.writes, []);
  });

  it('keeps the stored value when the transcript offers nothing clearer', () => {
    const vague: TranscriptTurn[] = [{ role: 'user', text: "I'm not sure.", variable: 'answers.dob', expect: 'date' }];
    const r = run({ record_array: ['1985-04-03'], check_array: ['{{answers.dob}}'], check_transcript: ['true'] }, { answers: { dob: '1985-04-03' } }, vague);
    assert.equal(r.variables.status, 'verified');
    assert.deepEqual(r.writes, []);
    assert.equal(r.positions[0].refreshed, undefined);
  });

  it('keeps the stored value when the transcript says the same thing', () => {
    const r = run({ record_array: ['Jane Doe'], check_array: ['{{answers.name}}'], check_transcript: ['true'] }, { answers: { name: 'jane doe' } }, transcript);
    assert.deepEqual(r.writes, []);
  });

  it('a date-like value without a tagged answer is refreshed from the latest date the callee said', () => {
    const r = run({ record_array: ['1985-04-03'], check_array: ['{{webhook_dob}}'], check_transcript: ['true'] }, { webhook_dob: '01/01/1990' }, transcript);
    assert.equal(r.variables.status, 'verified');
    assert.equal(r.writes[0].variable, 'webhook_dob');
  });

  it('a literal check value is refreshed for the comparison but written nowhere', () => {
    const r = run({ record_array: ['1985-04-03'], check_array: ['1990-01-01'], check_transcript: ['true'] }, {}, transcript);
    assert.equal(r.variables.status, 'verified');
    assert.deepEqual(r.writes, []);
  });

  it('Check Transcript given as a comma-separated string', () => {
    const r = run({ record_array: ['1985-04-03', 'x'], check_array: ['{{answers.dob}}', 'x'], check_transcript: 'true, false' }, { answers: { dob: '' } }, transcript);
    assert.equal(r.variables.status, 'verified');
  });

  it('never writes back into the auth_check namespace', () => {
    const r = run({ record_array: ['1985-04-03'], check_array: ['{{auth_check.notes}}'], check_transcript: ['true'] }, { auth_check: { notes: '1990-01-01' } }, transcript);
    assert.deepEqual(r.writes, []);
  });
});

describe('record sets (rules 6, 7)', () => {
  const records = [
    { name: 'John Roe', dob: '1970-01-01', id: 1 },
    { name: 'Jane Doe', dob: '1985-04-03', id: 2 },
    { name: 'Jane Doe', dob: '1990-12-24', id: 3 },
  ];
  const scope = { webhook: { response: JSON.stringify(records) }, answers: { name: 'Jane Doe', dob: 'April 3rd, 1985' } };
  const fieldPaths = { record_array: ['{{webhook.response}}.name', '{{webhook.response}}.dob'], check_array: ['{{answers.name}}', '{{answers.dob}}'], raw_data: '{{webhook.response}}' };

  it('checks every record and passes when one verifies; verified_data lists the passing records', () => {
    const r = run(fieldPaths, scope);
    assert.equal(r.mode, 'record_set');
    assert.equal(r.variables.status, 'verified');
    assert.deepEqual(JSON.parse(r.variables.verified_data), [records[1]]);
    assert.deepEqual(r.records?.map((x) => x.verified), [false, true, false]);
    assert.match(r.variables.notes, /1 of 3 records verified \(record 1\)/);
  });

  it('several passing records are all listed', () => {
    const r = run({ ...fieldPaths, required_match_count: '1' }, scope);
    assert.deepEqual(JSON.parse(r.variables.verified_data), [records[1], records[2]]);
  });

  it('with exactly one record checked and passing, verified_data is that record alone, not a list', () => {
    const r = run(fieldPaths, { ...scope, webhook: { response: JSON.stringify([records[1]]) } });
    assert.deepEqual(JSON.parse(r.variables.verified_data), records[1]);
  });

  it('a single JSON object is a set of one record', () => {
    const r = run(fieldPaths, { ...scope, webhook: { response: JSON.stringify(records[1]) } });
    assert.equal(r.variables.status, 'verified');
    assert.deepEqual(JSON.parse(r.variables.verified_data), records[1]);
  });

  it('fails when no record verifies, reporting the closest record, with verified_data empty', () => {
    const r = run(fieldPaths, { ...scope, answers: { name: 'Jane Doe', dob: '1 May 2000' } });
    assert.equal(r.variables.status, 'failed');
    assert.equal(r.variables.verified_data, '');
    assert.equal(r.variables.matched_count, 1);
    assert.deepEqual(r.variables.failed_checks, ['1']);
  });

  it('nested fields are read with a dotted field path', () => {
    const nested = JSON.stringify([{ person: { name: 'Jane Doe' } }]);
    const r = run({ record_array: ['{{lookup}}.person.name'], check_array: ['jane doe'], raw_data: '{{lookup}}' }, { lookup: nested });
    assert.equal(r.variables.status, 'verified');
  });

  it('without Raw Data the field path reads its own variable as the record set', () => {
    const r = run({ ...fieldPaths, raw_data: undefined }, scope);
    assert.equal(r.variables.status, 'verified');
  });

  it('literal entries next to field paths apply to every record', () => {
    const r = run({ record_array: ['{{webhook.response}}.name', 'yes'], check_array: ['Jane Doe', 'YES'], raw_data: '{{webhook.response}}' }, scope);
    assert.equal(r.variables.status, 'verified');
    assert.deepEqual(r.records?.map((x) => x.verified), [false, true, true]);
  });

  it('Raw Data that is not JSON is insufficient data', () => {
    const r = run({ ...fieldPaths, raw_data: 'not json' }, scope);
    assert.equal(r.variables.status, 'insufficient_data');
    assert.match(r.variables.notes, /Raw Data is not JSON/);
  });

  it('an empty record set is insufficient data', () => {
    const r = run(fieldPaths, { ...scope, webhook: { response: '[]' } });
    assert.equal(r.variables.status, 'insufficient_data');
  });

  it('plain variable references run a single-record check and ignore Raw Data (rule 7)', () => {
    const r = run(
      { record_array: ['{{contact.full_name}}'], check_array: ['{{answers.name}}'], raw_data: '{{webhook.response}}' },
      { ...scope, contact: { full_name: 'Jane Doe' } },
    );
    assert.equal(r.mode, 'single');
    assert.equal(r.variables.status, 'verified');
    assert.equal(r.variables.verified_data, '');
  });
});

describe('System Notes', () => {
  it('a run adds a summary and per-position results', () => {
    const r = run({ record_array: ['Jane Doe', '1985-04-03'], check_array: ['jane doe', 'April 4th, 1985'] });
    const note = authCheckSystemNote('verify', r);
    assert.equal(note.kind, 'auth_check');
    assert.equal(note.step_id, 'verify');
    assert.equal(note.tool, 'Auth | Check');
    assert.match(note.summary, /^Auth Check failed: 1 matched, 2 required, method exact; matched 0; failed 1\./);
    assert.deepEqual(
      note.positions.map((p) => [p.position, p.outcome, p.reason]),
      [
        [0, 'exact', undefined],
        [1, 'failed', 'mismatch'],
      ],
    );
  });

  it('a record-set run lists each record verdict', () => {
    const r = run({ record_array: ['{{d}}.n'], check_array: ['a'], raw_data: '{{d}}' }, { d: JSON.stringify([{ n: 'b' }, { n: 'a' }]) });
    assert.deepEqual(authCheckSystemNote('s', r).records, [
      { record: 0, matched_count: 0, verified: false },
      { record: 1, matched_count: 1, verified: true },
    ]);
  });
});
