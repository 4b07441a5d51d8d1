// The sentence splitter the converse step speaks a streamed model answer with (src/llm/sentences.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SentenceSplitter, splitSentences } from '../../src/llm/sentences.js';

test('a sentence is given as soon as the delta after its full stop arrives, before the rest', () => {
  const splitter = new SentenceSplitter();
  assert.deepEqual(splitter.push('Hello there'), []);
  assert.deepEqual(splitter.push('.'), [], 'the full stop alone: the next character decides (3.5, p.m.)');
  assert.deepEqual(splitter.push(' How can I'), ['Hello there.']);
  assert.deepEqual(splitter.push(' help? Thanks'), ['How can I help?']);
  assert.equal(splitter.flush(), 'Thanks', 'the last words without punctuation come at the end of the stream');
  assert.equal(splitter.flush(), undefined);
});

test('abbreviations, initials, decimals and times do not end a sentence; line breaks do', () => {
  assert.deepEqual(splitSentences('Dr. Smith sees you at 3.30 p.m. on Monday. J. Doe is here!\nBye'), [
    'Dr. Smith sees you at 3.30 p.m. on Monday.',
    'J. Doe is here!',
    'Bye',
  ]);
  assert.deepEqual(splitSentences('Really?! "Yes." Fine…  ok'), ['Really?!', '"Yes."', 'Fine…', 'ok']);
});

test('firstClauseWords: the first piece ends at a clause once it has that many words; later pieces are whole sentences; a number keeps its comma', () => {
  const splitter = new SentenceSplitter({ firstClauseWords: 4 });
  assert.deepEqual(splitter.push('Well, we have'), [], 'a clause of one word waits');
  assert.deepEqual(splitter.push(' openings on Monday, and'), ['Well, we have openings on Monday,']);
  assert.deepEqual(splitter.push(' on Tuesday, at 1,200 feet'), [], 'after the first piece, only sentence ends');
  assert.deepEqual(splitter.push('. Fine'), ['and on Tuesday, at 1,200 feet.']);
  assert.equal(splitter.flush(), 'Fine');
  assert.deepEqual(new SentenceSplitter({ firstClauseWords: 4 }).push('Yes. We have openings on Monday, and'), ['Yes.'], 'a sentence first is the first piece');
  assert.deepEqual(new SentenceSplitter().push('Well, we have openings on Monday, and'), [], 'sentences only by default');
});
