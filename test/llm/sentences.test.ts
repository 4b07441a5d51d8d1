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
