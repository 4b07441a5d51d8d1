/**
 * Re-extracting a caller-given value from the live transcript (Auth Check rule 5) and,
 * with the same rules, turning what a callee says into the value an ask step stores.
 */
import { canonicalText, findDateInText, looksLikeDate } from '../dates.js';
import { spokenDigits, spokenToNumerals } from '../spokenNumbers.js';

/** One line of the conversation. Callee lines of ask steps name the variable they answered. */
export interface TranscriptTurn {
  role: 'agent' | 'user';
  text: string;
  /** Set on the callee's answer to an ask step: the variable the step stored. */
  variable?: string;
  /** The ask step's `expect`. */
  expect?: AnswerKind;
}

export type AnswerKind = 'text' | 'free' | 'name' | 'date' | 'number' | 'digits' | 'yes_no';

const FILLER = /^(?:(?:yes|yeah|yep|sure|ok|okay|well|so|um+|uh+|oh|right|of course|sorry|actually|oops|i mean|no)\b[\s,.!-]*)+/i;
const LEAD_IN =
  /^(?:my (?:full |first |last )?name(?: is|'s)|the name(?: is|'s)|name's|my [a-z ]{1,40}? is|it is|it's|that is|that's|that would be|this is|i am|i'm|call me)\b\s*/i;
const NOTHING = /^(?:i (?:don't|do not) know|i'm not sure|i am not sure|no idea|not sure|i can't remember|i don't remember|pass)\b/i;

/** The date an answer names, typed ("April 3rd 1985") or as a recogniser writes it ("the third of april nineteen eighty five"). */
function spokenDate(text: string, region: string): string {
  const found = findDateInText(text, region);
  if (found) return found.text;
  const numerals = spokenToNumerals(text);
  const date = findDateInText(numerals, region) ?? findDateInText(numerals.replace(/\b(?:the|of)\b\s*/g, ''), region);
  return date ? date.text : '';
}

/**
 * The number an answer names: spoken ("forty two"), or written with digits as Whisper
 * writes it, thousands grouped ("1,200" → "1200") or not ("3.5", "-5"). A comma followed by
 * other than three digits stays a decimal comma ("3,5").
 */
function spokenNumber(text: string): string {
  const found = /-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|-?\d+(?:[.,]\d+)?/.exec(spokenToNumerals(text))?.[0] ?? '';
  return /,\d{3}(?:\D|$)/.test(found) ? found.replace(/,/g, '') : found;
}

/**
 * The value in a callee's answer: the date it names for `date` (numbers may be spoken), the number for `number`, the digits said one by one for `digits`,
 * yes/no for `yes_no`, otherwise the words after a lead-in ("My name is Jane Doe." → "Jane
 * Doe"). Empty when the answer offers nothing ("I'm not sure").
 */
export function extractAnswer(text: string, kind: AnswerKind = 'text', region = 'US'): string {
  const trimmed = text.trim();
  if (trimmed === '' || NOTHING.test(trimmed) || NOTHING.test(trimmed.replace(FILLER, ''))) return '';
  if (kind === 'date') return spokenDate(trimmed, region);
  if (kind === 'number') return spokenNumber(trimmed);
  if (kind === 'digits') return spokenDigits(trimmed);
  if (kind === 'yes_no') {
    if (/^\s*(?:yes|yeah|yep|yup|correct|right|sure|that's right|that's correct|that is (?:right|correct)|it is)\b/i.test(trimmed)) return 'yes';
    if (/^\s*(?:no|nope|not really|that's wrong|incorrect)\b/i.test(trimmed)) return 'no';
    // Whisper hears a lone "no" on a phone line as "know" (with the yes/no prompt): only as the whole answer ("I know" is not an answer).
    if (/^\s*know[\s.!]*$/i.test(trimmed)) return 'no';
    return '';
  }
  let value = trimmed.replace(FILLER, '');
  value = value.replace(LEAD_IN, '');
  return value.replace(/[\s.!?,;:]+$/u, '').trim();
}

/**
 * Rule 5 for one position: the value the transcript gives now, or undefined when it offers
 * nothing clearer than `stored`.
 *
 * The callee's most recent answer to the referenced variable (a later answer corrects an
 * earlier one) is read with the rules of extractAnswer; the kind is the ask step's `expect`,
 * or `date` when the stored value looks like a date. Without such an answer (a literal
 * entry, or a variable no ask step filled), a date-like stored value is refreshed from the
 * latest date the callee said anywhere. The refreshed value replaces the stored one only
 * when it is not empty and differs from it (ignoring case, spacing, commas and full stops).
 */
export function reextractFromTranscript(
  transcript: readonly TranscriptTurn[],
  opts: { variable?: string; stored: string; region: string },
): string | undefined {
  const storedIsDate = looksLikeDate(opts.stored, opts.region);
  const answers = opts.variable ? transcript.filter((t) => t.role === 'user' && t.variable === opts.variable) : [];
  let refreshed = '';
  if (answers.length > 0) {
    const latest = answers[answers.length - 1];
    refreshed = extractAnswer(latest.text, latest.expect ?? (storedIsDate ? 'date' : 'text'), opts.region);
  } else if (storedIsDate) {
    const callee = transcript.filter((t) => t.role === 'user');
    for (let i = callee.length - 1; i >= 0 && !refreshed; i--) refreshed = findDateInText(callee[i].text, opts.region)?.text ?? '';
  }
  if (refreshed === '' || canonicalText(refreshed) === canonicalText(opts.stored)) return undefined;
  return refreshed;
}
