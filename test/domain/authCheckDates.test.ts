// Date-like values normalised to YYYY-MM-DD (Auth Check rule 3), dates inside what a
// caller says, and reading answers out of a callee's sentence.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractAnswer, reextractFromTranscript } from '../../src/domain/authCheck/index.js';
import { dateOrderForRegion, findDateInText, looksLikeDate, normalizeDate, spokenDate } from '../../src/domain/dates.js';

describe('normalizeDate', () => {
  const rows: Array<[string, string | undefined, string | undefined]> = [
    // value, US, GB
    ['1985-04-03', '1985-04-03', '1985-04-03'],
    ['1985/4/3', '1985-04-03', '1985-04-03'],
    ['1985-04-03T10:20:30.000Z', '1985-04-03', '1985-04-03'],
    ['1985-04-03 00:00:00', '1985-04-03', '1985-04-03'],
    ['1985-04-03 10:20:30.123+02:00', '1985-04-03', '1985-04-03'],
    ['1985-04-03 10:20', '1985-04-03', '1985-04-03'],
    ['1985-04-031', undefined, undefined],
    ['03/04/1985', '1985-03-04', '1985-04-03'],
    ['3-4-1985', '1985-03-04', '1985-04-03'],
    ['13/04/1985', undefined, '1985-04-13'],
    ['3 April 1985', '1985-04-03', '1985-04-03'],
    ['3rd April 1985', '1985-04-03', '1985-04-03'],
    ['the 3rd of April, 1985', '1985-04-03', '1985-04-03'],
    ['Wednesday, 3 April 1985', '1985-04-03', '1985-04-03'],
    ['April 3rd, 1985', '1985-04-03', '1985-04-03'],
    ['April 3, 1985', '1985-04-03', '1985-04-03'],
    ['Apr. 3 1985', '1985-04-03', '1985-04-03'],
    ['APRIL 3RD 1985', '1985-04-03', '1985-04-03'],
    ['Sept 30, 2001', '2001-09-30', '2001-09-30'],
    ['May 1 2019', '2019-05-01', '2019-05-01'],
    ['May 11 2019', '2019-05-11', '2019-05-11'],
    ['29 February 2000', '2000-02-29', '2000-02-29'],
    ['29 February 1900', undefined, undefined],
    ['31/02/1985', undefined, undefined],
    ['1985-13-01', undefined, undefined],
    ['03.04.1985', undefined, undefined],
    ['03/04/85', undefined, undefined],
    ['April 1985', undefined, undefined],
    ['Jane Doe', undefined, undefined],
    ['', undefined, undefined],
  ];
  for (const [input, us, gb] of rows) {
    it(`"${input}" → US ${us ?? 'not a date'}, GB ${gb ?? 'not a date'}`, () => {
      assert.equal(normalizeDate(input, 'US'), us);
      assert.equal(normalizeDate(input, 'GB'), gb);
    });
  }

  it('an impossible date still looks like a date', () => {
    assert.equal(looksLikeDate('31/02/1985'), true);
    assert.equal(looksLikeDate('Jane'), false);
  });

  it('month-first regions are the US and a few others; the rest are day first', () => {
    assert.equal(dateOrderForRegion('US'), 'MDY');
    assert.equal(dateOrderForRegion('ph'), 'MDY');
    assert.equal(dateOrderForRegion('GB'), 'DMY');
    assert.equal(dateOrderForRegion('DE'), 'DMY');
  });

  it('spokenDate says a date the way a person does', () => {
    assert.equal(spokenDate('1985-04-01'), 'April 1st, 1985');
    assert.equal(spokenDate('1985-04-02'), 'April 2nd, 1985');
    assert.equal(spokenDate('1985-04-11'), 'April 11th, 1985');
    assert.equal(spokenDate('1985-04-12'), 'April 12th, 1985');
    assert.equal(spokenDate('1985-04-13'), 'April 13th, 1985');
    assert.equal(spokenDate('1985-04-22'), 'April 22nd, 1985');
  });
});

describe('findDateInText', () => {
  it('finds a date in a sentence and keeps the words as said', () => {
    assert.deepEqual(findDateInText("Sure, it's April 3rd, 1985, I think."), { text: 'April 3rd, 1985', iso: '1985-04-03' });
  });

  it('takes the last date when several are said', () => {
    assert.equal(findDateInText('Not 1 May 1980 but 3 April 1985')?.iso, '1985-04-03');
  });

  it('reads numeric dates in the region order', () => {
    assert.equal(findDateInText('03/04/1985', 'GB')?.iso, '1985-04-03');
    assert.equal(findDateInText('03/04/1985', 'US')?.iso, '1985-03-04');
  });

  it('finds nothing in a sentence without a date', () => {
    assert.equal(findDateInText("I'd rather not say"), undefined);
  });
});

describe('extractAnswer', () => {
  const rows: Array<[string, Parameters<typeof extractAnswer>[1], string]> = [
    ['My name is Jane Doe.', 'name', 'Jane Doe'],
    ["Yes, it's Jane Doe", 'name', 'Jane Doe'],
    ["I'm Jane Doe!", 'name', 'Jane Doe'],
    ['Jane Doe', 'name', 'Jane Doe'],
    ['My email address is jane@example.com.', 'text', 'jane@example.com'],
    ["It's April 3rd, 1985.", 'date', 'April 3rd, 1985'],
    ['Born on the 3rd of April 1985', 'date', 'the 3rd of April 1985'],
    ['I would rather not say', 'date', ''],
    ["I'm not sure.", 'text', ''],
    ["Um, I don't know", 'name', ''],
    ['No idea', 'text', ''],
    ['Sorry, actually it is Jane Doe.', 'name', 'Jane Doe'],
    ['It is 42', 'number', '42'],
    ['Yes, that is right', 'yes_no', 'yes'],
    ['No.', 'yes_no', 'no'],
  ];
  for (const [text, kind, expected] of rows) {
    it(`"${text}" as ${kind} → "${expected}"`, () => assert.equal(extractAnswer(text, kind), expected));
  }
});

describe('reextractFromTranscript', () => {
  it('uses the newest answer to the variable', () => {
    const transcript = [
      { role: 'user' as const, text: 'My name is Jane Do.', variable: 'answers.name', expect: 'name' as const },
      { role: 'user' as const, text: 'Sorry, my name is Jane Doe.', variable: 'answers.name', expect: 'name' as const },
    ];
    assert.equal(reextractFromTranscript(transcript, { variable: 'answers.name', stored: 'Jane Do', region: 'US' }), 'Jane Doe');
  });

  it('ignores agent lines and other variables', () => {
    const transcript = [
      { role: 'agent' as const, text: 'Is your name Jane Doe?' },
      { role: 'user' as const, text: 'It is London.', variable: 'answers.city' },
    ];
    assert.equal(reextractFromTranscript(transcript, { variable: 'answers.name', stored: 'Jane', region: 'US' }), undefined);
  });
});
