// Answers as Whisper writes them: punctuated, numbers in digits ("3 o'clock", "555-1234",
// "1,200", "April 3rd, 1985."), next to the word forms pocketsphinx writes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractAnswer } from '../../src/domain/authCheck/index.js';
import { spokenDigits, spokenToNumerals } from '../../src/domain/spokenNumbers.js';

describe('spokenToNumerals with punctuation and digits', () => {
  const rows: Array<[string, string]> = [
    ['April third, 1985.', 'april 3rd, 1985.'],
    ['nineteen eighty-five', '1985'],
    ['twenty-one', '21'],
    ['the twenty-first of june', 'the 21st of june'],
    ['2 thousand', '2000'],
    ['5 hundred and twelve', '512'],
    ['nineteen, eighty five', '19, 85'],
    ['April 3rd, 1985.', 'april 3rd, 1985.'],
    ['well-known', 'well-known'],
  ];
  for (const [text, expected] of rows) it(`"${text}" → "${expected}"`, () => assert.equal(spokenToNumerals(text), expected));

  it('digits written with separators are one digit string', () => {
    assert.equal(spokenDigits('555-1234.'), '5551234');
    assert.equal(spokenDigits('(555) 123-4567'), '5551234567');
    assert.equal(spokenDigits('1, 9, 8, 5.'), '1985');
  });
});

describe('extractAnswer reads answers written with digits', () => {
  const rows: Array<[string, Parameters<typeof extractAnswer>[1], string]> = [
    ['April 3rd, 1985.', 'date', 'April 3rd, 1985'],
    ['April 3, 1985.', 'date', 'April 3, 1985'],
    ['The 3rd of April, 1985.', 'date', 'The 3rd of April, 1985'],
    ['April third, 1985.', 'date', 'april 3rd, 1985'],
    ['4/3/1985.', 'date', '4/3/1985'],
    ['My date of birth is the 21st of June, 1990.', 'date', 'the 21st of June, 1990'],
    ['1,200.', 'number', '1200'],
    ['1,234,567', 'number', '1234567'],
    ['$12.50', 'number', '12.50'],
    ['3,5', 'number', '3,5'],
    ['About 3 o\'clock.', 'number', '3'],
    ['2 thousand', 'number', '2000'],
    ['Forty-two.', 'number', '42'],
    ['555-1234.', 'digits', '5551234'],
    ['My PIN is 4321.', 'digits', '4321'],
    ['Yes.', 'yes_no', 'yes'],
    ['Yup.', 'yes_no', 'yes'],
    ['That is correct.', 'yes_no', 'yes'],
    ["That's correct.", 'yes_no', 'yes'],
    ['No, it isn\'t.', 'yes_no', 'no'],
    ['My name is John Smith.', 'name', 'John Smith'],
  ];
  for (const [text, kind, expected] of rows) it(`"${text}" as ${kind} → "${expected}"`, () => assert.equal(extractAnswer(text, kind), expected));
});

describe('spokenToNumerals: thousands with hundreds after them', () => {
  const rows: Array<[string, string]> = [
    ['one thousand two hundred', '1200'],
    ['four thousand five hundred and twelve', '4512'],
    ['two thousand three hundred five', '2305'],
    ['seven thousand and nine', '7009'],
    ['3 thousand 4 hundred', '3400'],
  ];
  for (const [text, expected] of rows) it(`"${text}" → "${expected}"`, () => assert.equal(spokenToNumerals(text), expected));
  it('a number answer of thousands and hundreds is read whole', () => assert.equal(extractAnswer('About one thousand two hundred.', 'number'), '1200'));
});

describe('what Whisper writes for each expect, and the words it is not', () => {
  // Whisper writes sound-alike words for some digits, and numbers as "300 and 12"; found by bench/speechAccuracy.ts.
  const accepted: Array<[string, Parameters<typeof extractAnswer>[1], string]> = [
    ['for five six', 'digits', '456'],
    ['5 for 6.', 'digits', '546'],
    ['1 2 3 for.', 'digits', '1234'],
    ['My number is for 1555-0199.', 'digits', '415550199'],
    ['one to three', 'digits', '123'],
    ['5 6 too.', 'digits', '562'],
    ['To 9 4 6', 'digits', '2946'],
    ['oh one two', 'digits', '012'],
    ['four oh five', 'digits', '405'],
    ['4 5 oh.', 'digits', '450'],
    ['eight oh oh two', 'digits', '8002'],
    ['About 300 and 12.', 'number', '312'],
    ['three hundred and 12', 'number', '312'],
    ['2 thousand and 12', 'number', '2012'],
    ['100 and one', 'number', '101'],
    ['The 3rd of April, 1985.', 'date', 'The 3rd of April, 1985'],
    ['March the 21st, 1978', 'date', 'March the 21st, 1978'],
    ['04/03/1985', 'date', '04/03/1985'],
    ['Know.', 'yes_no', 'no'],
  ];
  for (const [text, kind, expected] of accepted) it(`"${text}" as ${kind} → "${expected}"`, () => assert.equal(extractAnswer(text, kind), expected));

  // The same words where they are not digits: no digit is made of them.
  const notDigits: Array<[string, Parameters<typeof extractAnswer>[1], string]> = [
    ['Oh, 1 2 3 4.', 'digits', '1234'],
    ['Oh it is 1 2 3 4', 'digits', '1234'],
    ['The code for 1 2 3 4', 'digits', '1234'],
    ['1 2 3 4 for the account', 'digits', '1234'],
    ['I want to say 1 2 3', 'digits', '123'],
    ['Too many: 5 6', 'digits', '56'],
    ['300 and 12th', 'number', '300'],
    ['I know.', 'yes_no', ''],
    ['Know what, yes', 'yes_no', ''],
  ];
  for (const [text, kind, expected] of notDigits) it(`"${text}" as ${kind} → "${expected}" (not an answer made of filler)`, () => assert.equal(extractAnswer(text, kind), expected));

  it('the digits of a partial answer count the same way (the short hangover waits for them)', () => {
    assert.equal(spokenDigits('for five six'), '456');
    assert.equal(spokenDigits('oh,'), '');
  });
});
