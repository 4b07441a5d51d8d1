/**
 * Numbers as a speech recogniser writes them. Pocketsphinx writes words, not numerals: "one
 * nine eight five" is a digit string, "nineteen eighty five" a year, "the third" a day.
 * Whisper writes punctuated text with digits ("April 3rd, 1985.", "555-1234", "1,200",
 * "twenty-one", "2 thousand"). Turning both into numerals lets the answer rules (dates,
 * digits, numbers) treat spoken and typed answers alike.
 */

const DIGIT_WORDS: Record<string, string> = {
  zero: '0', oh: '0', o: '0', nought: '0', one: '1', two: '2', three: '3', four: '4', five: '5',
  six: '6', seven: '7', eight: '8', nine: '9',
};

const UNITS: Record<string, number> = {
  zero: 0, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9,
  ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16,
  seventeen: 17, eighteen: 18, nineteen: 19,
};
const TENS: Record<string, number> = { twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80, ninety: 90 };
const ORDINAL_UNITS: Record<string, number> = {
  first: 1, second: 2, third: 3, fourth: 4, fifth: 5, sixth: 6, seventh: 7, eighth: 8, ninth: 9,
  tenth: 10, eleventh: 11, twelfth: 12, thirteenth: 13, fourteenth: 14, fifteenth: 15,
  sixteenth: 16, seventeenth: 17, eighteenth: 18, nineteenth: 19,
};
const ORDINAL_TENS: Record<string, number> = { twentieth: 20, thirtieth: 30 };

function ordinalSuffix(n: number): string {
  if (n % 100 >= 11 && n % 100 <= 13) return 'th';
  return ({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th';
}

/**
 * Words Whisper writes for a digit that are also ordinary words: "for five six", "one to
 * three", "four oh five". They are digits only inside a digit string (below).
 */
const SOUND_ALIKE_DIGITS: Record<string, string> = { oh: '0', for: '4', to: '2', too: '2' };
/** Words after which a digit string may start with a sound-alike ("my number is for 1 5 5"). */
const DIGITS_LEAD_IN = new Set(['is', "it's", 'its']);

/**
 * The digits said one by one ("one nine eight five", "1 9 8 5", "oh four"), as one string;
 * empty when the text holds none. Other words are ignored.
 *
 * "oh", "for", "to" and "too" are digits only where a digit string is being said: "oh" next
 * to a digit with no punctuation between ("oh four", "four oh five"; not the "Oh," before
 * an answer), "for"/"to"/"too" between digits, after a digit at the end of the answer, or
 * before a digit at its start or after "is" ("for five six", "my number is for 1555"; not
 * "the code for 1 2 3 4" nor "1 2 3 4 for the account").
 */
export function spokenDigits(text: string): string {
  // Words and numerals, with sentence punctuation kept as a break between them.
  const tokens = text.toLowerCase().match(/[a-z0-9']+|[.,;:!?]/g) ?? [];
  const isDigit = (token: string | undefined) => token !== undefined && (/^\d+$/.test(token) || (token in DIGIT_WORDS && token !== 'o' && token !== 'oh'));
  const isWord = (token: string | undefined) => token !== undefined && /^[a-z0-9']/.test(token);
  const counted: boolean[] = [];
  let digits = '';
  for (const [i, token] of tokens.entries()) {
    let digit: string | undefined;
    if (isDigit(token)) digit = /^\d+$/.test(token) ? token : DIGIT_WORDS[token];
    else if (token in SOUND_ALIKE_DIGITS) {
      const prev = tokens[i - 1];
      const next = tokens[i + 1];
      const afterDigit = counted[i - 1] === true;
      const beforeDigit = isDigit(next);
      // "eight oh oh two": a run of "oh" is read as a whole.
      let afterOhs = i + 1;
      while (tokens[afterOhs] === 'oh') afterOhs++;
      const inString =
        token === 'oh'
          ? isDigit(tokens[afterOhs]) || (afterDigit && !isWord(tokens[afterOhs]))
          : (afterDigit && (beforeDigit || !isWord(next))) || (beforeDigit && (prev === undefined || !isWord(prev) || DIGITS_LEAD_IN.has(prev)));
      if (inString) digit = SOUND_ALIKE_DIGITS[token];
    }
    counted[i] = digit !== undefined;
    if (digit !== undefined) digits += digit;
  }
  return digits;
}

/** A number below 100 from one or two words ("eighty five", "seven"); undefined otherwise. */
function readBelowHundred(words: string[], i: number): { value: number; used: number; ordinal: boolean } | undefined {
  const w = words[i];
  if (w in ORDINAL_UNITS) return { value: ORDINAL_UNITS[w], used: 1, ordinal: true };
  if (w in ORDINAL_TENS) return { value: ORDINAL_TENS[w], used: 1, ordinal: true };
  if (w in UNITS) return { value: UNITS[w], used: 1, ordinal: false };
  if (w in TENS) {
    const next = words[i + 1];
    if (next !== undefined && next in ORDINAL_UNITS && ORDINAL_UNITS[next] < 10) return { value: TENS[w] + ORDINAL_UNITS[next], used: 2, ordinal: true };
    if (next !== undefined && next in UNITS && UNITS[next] > 0 && UNITS[next] < 10) return { value: TENS[w] + UNITS[next], used: 2, ordinal: false };
    return { value: TENS[w], used: 1, ordinal: false };
  }
  return undefined;
}

/** A number below 100 as words or as a numeral ("twelve", "12"), for the rest of a number after its hundreds. */
function readBelowHundredOrNumeral(words: string[], i: number): { value: number; used: number; ordinal: boolean } | undefined {
  const w = words[i];
  if (w !== undefined && /^\d{1,2}$/.test(w) && Number(w) > 0) return { value: Number(w), used: 1, ordinal: false };
  return w === undefined ? undefined : readBelowHundred(words, i);
}

/**
 * Replaces spoken numbers with numerals: "april third nineteen eighty five" → "april 3rd
 * 1985", "two thousand and one" → "2001", "twenty twenty four" → "2024". Years said as two
 * pairs ("nineteen eighty five") are read as years; other words stay as they are.
 */
export function spokenToNumerals(text: string): string {
  const words = numberTokens(text);
  const out: string[] = [];
  let i = 0;
  while (i < words.length) {
    // Hundreds or thousands as a numeral, the rest said after "and": "300 and 12" (Whisper's way of "three hundred and twelve").
    if (/^\d+$/.test(words[i]) && Number(words[i]) >= 100 && Number(words[i]) % 100 === 0 && words[i + 1] === 'and') {
      const rest = readBelowHundredOrNumeral(words, i + 2);
      if (rest && !rest.ordinal) {
        out.push(String(Number(words[i]) + rest.value));
        i += 2 + rest.used;
        continue;
      }
    }
    // A numeral with a scale word ("2 thousand", "5 hundred"), as Whisper writes some numbers.
    const numeralWithScale = /^\d{1,3}$/.test(words[i]) && (words[i + 1] === 'thousand' || words[i + 1] === 'hundred');
    const first = numeralWithScale ? { value: Number(words[i]), used: 1, ordinal: false } : readBelowHundred(words, i);
    if (!first) {
      out.push(words[i]);
      i++;
      continue;
    }
    let j = i + first.used;
    if (first.ordinal) {
      out.push(`${first.value}${ordinalSuffix(first.value)}`);
      i = j;
      continue;
    }
    // "two thousand (and) one", "nineteen hundred (and) five"
    if (words[j] === 'thousand' || words[j] === 'hundred') {
      let value = first.value * (words[j] === 'thousand' ? 1000 : 100);
      j++;
      // "one thousand two hundred (and) five": the hundreds belong to the same number.
      if (words[j - 1] === 'thousand' && words[j + 1] === 'hundred') {
        const hundreds = /^[1-9]$/.test(words[j] ?? '') ? Number(words[j]) : UNITS[words[j]];
        if (hundreds !== undefined && hundreds > 0 && hundreds < 10) {
          value += hundreds * 100;
          j += 2;
        }
      }
      if (words[j] === 'and') j++;
      const rest = readBelowHundredOrNumeral(words, j);
      if (rest && !rest.ordinal) {
        value += rest.value;
        j += rest.used;
      } else if (words[j - 1] === 'and') {
        j--;
      }
      out.push(String(value));
      i = j;
      continue;
    }
    // A year said as two pairs: "nineteen eighty five", "twenty twenty four", "nineteen oh five".
    if (first.value >= 10 && j < words.length) {
      if ((words[j] === 'oh' || words[j] === 'o') && words[j + 1] in UNITS && UNITS[words[j + 1]] < 10) {
        out.push(String(first.value * 100 + UNITS[words[j + 1]]));
        i = j + 2;
        continue;
      }
      const second = readBelowHundred(words, j);
      if (second && !second.ordinal && second.value >= 10) {
        out.push(String(first.value * 100 + second.value));
        i = j + second.used;
        continue;
      }
    }
    out.push(String(first.value));
    i = j;
  }
  return joinTokens(out);
}

const NUMBER_WORDS = new Set([...Object.keys(UNITS), ...Object.keys(TENS), ...Object.keys(ORDINAL_UNITS), ...Object.keys(ORDINAL_TENS)]);
/** Marks a punctuation token that was split off the word before it (joined back without a space). */
const ATTACHED = '\u0000';

/**
 * The lower-case words of `text`, with punctuation after a word as a token of its own (so
 * "third," is read as "third" and a comma ends a number) and hyphenated number words apart
 * ("twenty-one" → "twenty", "one").
 */
function numberTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const word of text.toLowerCase().split(/\s+/).filter(Boolean)) {
    const [, core, trail] = /^(.*?)([,.;:!?]*)$/.exec(word)!;
    const parts = core.split('-');
    if (parts.length > 1 && parts.every((p) => NUMBER_WORDS.has(p))) tokens.push(...parts);
    else if (core) tokens.push(core);
    if (trail) tokens.push(core ? ATTACHED + trail : trail);
  }
  return tokens;
}

function joinTokens(tokens: string[]): string {
  return tokens.reduce((text, token) => (token.startsWith(ATTACHED) ? text + token.slice(1) : text ? `${text} ${token}` : token), '');
}
