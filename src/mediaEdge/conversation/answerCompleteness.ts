/**
 * Whether what the caller has said so far already answers the question, so the turn can end
 * after the short hangover: a yes or a no to a yes/no question, as many digits as the
 * question asks for. Read from the recogniser's partial text with the same answer rules the
 * workflow applies to the final text. Anything else (free speech, names, dates, numbers,
 * digits of no stated length) is never judged complete: the caller may go on.
 */
import { extractAnswer } from '../../domain/authCheck/transcript.js';
import { spokenDigits } from '../../domain/spokenNumbers.js';
import type { AnswerExpectation } from '../speech/interfaces.js';

const NUMBER_WORDS: Record<string, number> = {
  one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9, ten: 10,
  eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16,
};

/** How many digits a question asks for when it says ("your 5-digit zip code", "the last four digits"); undefined otherwise. */
export function impliedDigitCount(prompt: string): number | undefined {
  const found = /\b(\d{1,2}|[a-z]+)[\s-]+digits?\b/i.exec(prompt);
  if (!found) return undefined;
  const word = found[1].toLowerCase();
  const count = /^\d+$/.test(word) ? Number(word) : NUMBER_WORDS[word];
  return count !== undefined && count > 0 ? count : undefined;
}

/** True when `text` (the recogniser's text so far) is already a whole answer of kind `expect`. */
export function isCompleteAnswer(expect: AnswerExpectation, text: string, digits: number | undefined): boolean {
  if (expect === 'yes_no') return extractAnswer(text, 'yes_no') !== '';
  if (expect === 'digits') return digits !== undefined && spokenDigits(text).length >= digits;
  return false;
}
