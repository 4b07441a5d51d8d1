// The pure parts of bench/speechAccuracy.ts: the labelled set, word error rate, and whether
// a transcript gives the expected answer once the answer readers have read it.
import { readFileSync } from 'node:fs';
import { extractAnswer, type AnswerKind } from '../../src/domain/authCheck/index.js';
import { exactMatch } from '../../src/domain/authCheck/matching.js';

/** The kinds of answer the set covers: every ask step `expect` (`text` is the same as `free`). */
export const EXPECTS = ['yes_no', 'digits', 'number', 'date', 'name', 'free'] as const;
export type BenchExpect = (typeof EXPECTS)[number];

export interface Utterance {
  id: string;
  expect: BenchExpect;
  /** What the voice says. */
  text: string;
  /** For constrained answers: what the answer readers must make of the transcript (dates as YYYY-MM-DD). */
  expected?: string;
  /** Phrases the ask step gives (name answers: the names the grammar and the prompt may use). */
  phrases?: string[];
}

export const UTTERANCES_FILE = new URL('./utterances.json', import.meta.url);

/** The committed labelled set. */
export function loadUtterances(file: URL | string = UTTERANCES_FILE): Utterance[] {
  return (JSON.parse(readFileSync(file, 'utf8')) as { utterances: Utterance[] }).utterances;
}

/** Answer readers apply in the US region here, as a US phone call's script does. */
const REGION = 'US';

/** What the answer readers make of a transcript for this `expect` (the call workflow's extractAnswer). */
export function readAnswer(transcript: string, expect: BenchExpect): string {
  return extractAnswer(transcript, expect as AnswerKind, REGION);
}

/** True when the transcript, read as the call workflow reads it, is the expected answer (compared as Auth Check compares: dates as dates, text without case, spaces, commas, full stops). */
export function answerIsExact(transcript: string, utterance: Utterance): boolean {
  if (utterance.expected === undefined) throw new Error(`${utterance.id} has no expected answer`);
  return exactMatch(readAnswer(transcript, utterance.expect), utterance.expected, REGION);
}

/**
 * Words as WER counts them: lower case, punctuation dropped (an apostrophe inside a word
 * stays: "don't"), hyphens and slashes split words ("follow-up" → "follow up"), "ok" and
 * "okay" one word. Numbers are not rewritten: the free sentences hold none.
 */
export function werWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[’‘]/g, "'")
    .replace(/[-/]/g, ' ')
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter(Boolean)
    .map((w) => (w === 'ok' ? 'okay' : w));
}

/** Substitutions + deletions + insertions turning the reference words into the hypothesis words (word-level Levenshtein distance). */
export function wordEdits(reference: readonly string[], hypothesis: readonly string[]): number {
  let previous = Array.from({ length: hypothesis.length + 1 }, (_, j) => j);
  for (let i = 1; i <= reference.length; i++) {
    const current = [i];
    for (let j = 1; j <= hypothesis.length; j++) {
      const substitution = previous[j - 1] + (reference[i - 1] === hypothesis[j - 1] ? 0 : 1);
      current[j] = Math.min(substitution, previous[j] + 1, current[j - 1] + 1);
    }
    previous = current;
  }
  return previous[hypothesis.length];
}

/** Word errors of one transcript against its reference text, and the reference's word count. */
export function wordErrors(reference: string, hypothesis: string): { errors: number; words: number } {
  const ref = werWords(reference);
  return { errors: wordEdits(ref, werWords(hypothesis)), words: ref.length };
}

/** WER over many utterances: all errors over all reference words (not a mean of per-utterance rates). */
export function wordErrorRate(results: readonly { errors: number; words: number }[]): number {
  const words = results.reduce((n, r) => n + r.words, 0);
  return words === 0 ? 0 : results.reduce((n, r) => n + r.errors, 0) / words;
}
