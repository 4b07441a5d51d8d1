/**
 * JSGF grammars for pocketsphinx from an answer hint. A grammar makes the recogniser pick
 * the closest sentence it allows instead of anything English: measured here with the
 * en-us model, digits said one by one come back exactly with the digits grammar and
 * wrong with the general language model, and so do spoken dates. Kinds with no useful
 * grammar (free text, a name without phrases) get none: the general model is used.
 *
 * Every fixed word is in cmudict-en-us; phrase words the dictionary lacks are left out
 * by the caller's `knownWord` (pocketsphinx refuses a grammar with an unknown word).
 *
 * Repetitions are written `<x> <x>*`, never `<x>+`: pocketsphinx 0.8 loops a `+` back to
 * the node it started from, and when that node begins an alternation the loop leads into
 * the other alternatives ("it's April 3rd" came back as "it's oh april third").
 */
import type { AnswerHint } from './interfaces.js';

export interface RecognitionGrammar {
  /** The grammar's name, also its public rule. */
  name: string;
  /** JSGF V1.0 source. */
  jsgf: string;
  /** Every word the grammar uses (for a dictionary of just those). */
  words: string[];
}

const UNITS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const ORDINAL_UNITS = ['first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth'];
const ORDINAL_TEENS = ['tenth', 'eleventh', 'twelfth', 'thirteenth', 'fourteenth', 'fifteenth', 'sixteenth', 'seventeenth', 'eighteenth', 'nineteenth'];
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const DIGIT_WORDS = ['zero', 'oh', ...UNITS];

const alternatives = (words: readonly string[]) => words.join(' | ');

/** Rules shared by the number-like grammars. */
const NUMBER_RULES = [
  `<digit> = ${alternatives(DIGIT_WORDS)};`,
  `<unit> = ${alternatives(UNITS)};`,
  `<teen> = ${alternatives(TEENS)};`,
  `<tens> = ${alternatives(TENS)};`,
  '<below_hundred> = <unit> | <teen> | <tens> [<unit>];',
  '<below_thousand> = (<unit> | a) hundred [[and] <below_hundred>] | <below_hundred>;',
];

const GRAMMARS: Record<'yes_no' | 'digits' | 'number' | 'date' | 'name', { lead: string[]; rules: string[]; body: string }> = {
  yes_no: {
    lead: [],
    body: '<answer> <answer>*',
    rules: [
      '<answer> = <yes> | <no> | <polite>;',
      // No "yep", "yup", "nope", "nah": short answers were heard as them ("no" as "nope"); said, they come out as yes, yeah or no.
      "<yes> = yes | yeah | sure | correct | right | absolutely | definitely | of course | okay | (that is | that's | it is | it's) (correct | right | true) | i do | i am | i did;",
      "<no> = no | not really | incorrect | wrong | (that is | that's | it is | it's) (wrong | incorrect | not (right | correct | true)) | it is not | it isn't | i don't | i do not | i am not | i didn't;",
      '<polite> = please | thanks | thank you;',
    ],
  },
  digits: {
    lead: ['it is', "it's", 'my number is', 'the number is'],
    body: '<group> <group>*',
    rules: [...NUMBER_RULES, '<group> = <digit> | double <digit> | triple <digit>;'],
  },
  number: {
    lead: ['it is', "it's", 'about', 'the number is'],
    body: '<digit> <digit>* | <cardinal>',
    rules: [...NUMBER_RULES, '<cardinal> = <below_thousand> [thousand [[and] <below_thousand>]] | zero;'],
  },
  date: {
    lead: ['it is', "it's", 'it was', 'my date of birth is', 'my birthday is', 'i was born on', 'born on', 'that is', "that's"],
    body: '<month> [the] <day> [[of] <year>] | [the] <day> [of] <month> [<year>] | <month> <year> | <digit> <digit>+',
    rules: [
      ...NUMBER_RULES,
      `<month> = ${alternatives(MONTHS)};`,
      `<ordinal> = ${alternatives([...ORDINAL_UNITS, ...ORDINAL_TEENS, 'twentieth', 'thirtieth'])} | twenty (${alternatives(ORDINAL_UNITS)}) | thirty first;`,
      '<day> = <ordinal> | <unit> | <teen> | twenty [<unit>] | thirty [one];',
      // Years in pairs ("nineteen eighty five", "twenty oh one"), in thousands, or digit by digit.
      '<pair> = oh <unit> | <teen> | <tens> [<unit>] | hundred;',
      '<year> = (eighteen | nineteen | twenty) <pair> | two thousand [[and] <below_hundred>] | <digit> <digit> <digit> <digit>;',
    ],
  },
  name: {
    lead: ['my name is', "my name's", 'the name is', 'it is', "it's", 'this is', "i'm", 'i am'],
    body: '<phrase>',
    rules: [],
  },
};

/** A phrase as grammar words: lower case, digits spelt out, punctuation dropped. */
export function phraseWords(phrase: string): string[] {
  return phrase
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\d/g, (d) => ` ${DIGIT_WORDS[d === '0' ? 0 : Number(d) + 1]} `)
    .replace(/[^a-z' ]+/g, ' ')
    .split(/\s+/)
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter(Boolean);
}

/**
 * The grammar for an answer hint, or undefined when the general language model should
 * listen (free text, or a name with no usable phrases). Phrases are extra sentences the
 * grammar also accepts; for a name they are the only names it accepts.
 */
export function grammarFor(hint: AnswerHint, options: { knownWord?: (word: string) => boolean } = {}): RecognitionGrammar | undefined {
  const known = options.knownWord ?? (() => true);
  const kind = hint.expect === 'text' ? 'free' : hint.expect;
  if (kind === 'free') return undefined;
  const phrases = [...new Set((hint.phrases ?? []).map((p) => phraseWords(p)).filter((w) => w.length > 0 && w.every(known)).map((w) => w.join(' ')))];
  if (kind === 'name' && phrases.length === 0) return undefined;
  const spec = GRAMMARS[kind];
  const lead = spec.lead.length > 0 ? `[${alternatives(spec.lead)}] ` : '';
  const rules = [...spec.rules];
  let body = spec.body;
  if (phrases.length > 0) {
    rules.push(`<phrase> = ${phrases.map((p) => `(${p})`).join(' | ')};`);
    if (kind !== 'name') body = `${body} | <phrase>`;
  }
  const source = ['#JSGF V1.0;', `grammar ${kind};`, `public <${kind}> = ${lead}(${body});`, ...rules].join('\n');
  return { name: kind, jsgf: `${source}\n`, words: grammarWords(source) };
}

/** The words of JSGF source: every token that is not syntax or a rule name. */
function grammarWords(source: string): string[] {
  const words = new Set<string>();
  for (const line of source.split('\n')) {
    if (line.startsWith('#') || line.startsWith('grammar ')) continue;
    const right = line.slice(line.indexOf('=') + 1).replace(/<[^>]+>/g, ' ');
    for (const token of right.split(/[\s|()[\];+*]+/)) if (token) words.add(token);
  }
  return [...words].sort();
}
