// The pure parts of bench/speechAccuracy.ts: word error rate, the answer check, and the
// labelled set's coverage and labels (each label is what the answer readers make of the
// utterance's own words, written as a person or as a recogniser writes them).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { answerIsExact, EXPECTS, loadUtterances, werWords, wordEdits, wordErrorRate, wordErrors } from '../../bench/speechAccuracy/scoring.js';

describe('word error rate', () => {
  it('counts substitutions, deletions and insertions between word lists', () => {
    assert.equal(wordEdits(['a', 'b', 'c'], ['a', 'b', 'c']), 0);
    assert.equal(wordEdits(['a', 'b', 'c'], ['a', 'x', 'c']), 1);
    assert.equal(wordEdits(['a', 'b', 'c'], ['a', 'c']), 1);
    assert.equal(wordEdits(['a', 'b', 'c'], ['a', 'b', 'x', 'c']), 1);
    assert.equal(wordEdits(['a', 'b'], []), 2);
    assert.equal(wordEdits([], ['a']), 1);
    assert.equal(wordEdits(['my', 'name', 'is', 'john', 'smith'], ['on', 'and', 'on', 'that']), 5);
  });

  it('compares words without case or punctuation, keeping apostrophes inside words', () => {
    assert.deepEqual(werWords("Yes, I received the letter - but I haven't read it yet."), ['yes', 'i', 'received', 'the', 'letter', 'but', 'i', "haven't", 'read', 'it', 'yet']);
    assert.deepEqual(werWords('a follow-up, OK?'), ['a', 'follow', 'up', 'okay']);
    assert.deepEqual(wordErrors('Can you please call me back tomorrow afternoon?', 'can you please call me back tomorrow afternoon'), { errors: 0, words: 8 });
    assert.deepEqual(wordErrors('I want to speak with a real person.', 'i want to speak to a person'), { errors: 2, words: 8 });
  });

  it('is all errors over all reference words, not a mean of per-utterance rates', () => {
    assert.equal(wordErrorRate([{ errors: 1, words: 2 }, { errors: 0, words: 18 }]), 0.05);
    assert.equal(wordErrorRate([]), 0);
  });
});

describe('the exact-answer check reads transcripts as the call workflow does', () => {
  const set = loadUtterances();
  const byId = (id: string) => set.find((u) => u.id === id)!;
  const rows: Array<[string, string, boolean]> = [
    ['date-01', 'april third nineteen eighty five', true],
    ['date-01', 'April 3rd, 1985.', true],
    ['date-01', 'april third nineteen eighty', false],
    ['digits-02', '555-1234.', true],
    ['digits-02', 'five five five one two three', false],
    ['number-04', 'One thousand two hundred.', true],
    ['number-04', '1,200', true],
    ['yes_no-01', 'yes', true],
    ['yes_no-01', 'no', false],
    ['name-01', 'my name is john smith', true],
    ['name-01', 'My name is John Smyth.', false],
  ];
  for (const [id, transcript, exact] of rows) it(`${id}: "${transcript}" is ${exact ? '' : 'not '}the answer`, () => assert.equal(answerIsExact(transcript, byId(id)), exact));
});

describe('the labelled set', () => {
  const set = loadUtterances();

  it('holds at least 100 utterances with unique ids, every expect at least 15 times', () => {
    assert.ok(set.length >= 100, `${set.length} utterances`);
    assert.equal(new Set(set.map((u) => u.id)).size, set.length);
    for (const expect of EXPECTS) assert.ok(set.filter((u) => u.expect === expect).length >= 15, `${expect}: ${set.filter((u) => u.expect === expect).length}`);
    assert.deepEqual([...new Set(set.map((u) => u.expect))].sort(), [...EXPECTS].sort());
  });

  it('has free sentences of 5 to 20 words and an expected answer for every constrained one', () => {
    for (const u of set) {
      if (u.expect === 'free') {
        const words = werWords(u.text).length;
        assert.ok(words >= 5 && words <= 20, `${u.id}: ${words} words`);
        assert.equal(u.expected, undefined, u.id);
      } else {
        assert.ok(u.expected, `${u.id} has no expected answer`);
      }
    }
  });

  it("labels are what the answer readers make of each utterance's words, punctuated or as a recogniser writes them", () => {
    for (const u of set.filter((x) => x.expect !== 'free')) {
      const asRecognised = u.text.toLowerCase().replace(/[^a-z' ]+/g, ' ').replace(/\s+/g, ' ').trim();
      assert.ok(answerIsExact(u.text, u), `${u.id}: "${u.text}" does not read as ${u.expected}`);
      assert.ok(answerIsExact(asRecognised, u), `${u.id}: "${asRecognised}" does not read as ${u.expected}`);
    }
  });

  it('names come with the phrases an ask step gives, their own among them', () => {
    for (const u of set.filter((x) => x.expect === 'name')) assert.ok(u.phrases?.includes(u.expected!), u.id);
  });
});
