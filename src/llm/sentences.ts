/**
 * Splits a model's streamed text into speakable sentences as the deltas arrive, so the
 * synthesiser can start on the first sentence while the model is still writing the rest
 * (docs/agents.md, "Latency"). Pure: no I/O, no clocks.
 */

/** Words whose trailing period does not end a sentence ("Dr. Smith", "e.g. Monday"). */
const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'vs', 'etc', 'e.g', 'i.e', 'a.m', 'p.m', 'no', 'approx', 'appt', 'dept']);

/** A sentence end: terminal punctuation (closing quotes/brackets allowed) followed by white space. */
const END_RE = /[.!?…]+["'”’)\]]*(?=\s)|\n+/g;
/** A clause end: a comma, semicolon, colon or dash followed by white space (so "1,200" stays whole). */
const CLAUSE_RE = /[,;:—–]+(?=\s)|\s-(?=\s)/g;

export class SentenceSplitter {
  private pending = '';
  /** Nothing given yet: the first piece may end at a clause. */
  private first = true;

  /**
   * `firstClauseWords`: the answer's first piece may end at a clause (a comma, …) once it has at
   * least this many words, so the synthesiser starts on it before the first sentence is
   * finished (a converse turn's first audio waits on it); later pieces are whole sentences.
   * 0 (default): sentences only.
   */
  constructor(private readonly options: { firstClauseWords?: number } = {}) {}

  /** Adds a delta; returns the sentences it completed, trimmed, in order. */
  push(delta: string): string[] {
    this.pending += delta;
    const out: string[] = [];
    let start = 0;
    END_RE.lastIndex = 0;
    for (let m = END_RE.exec(this.pending); m; m = END_RE.exec(this.pending)) {
      const end = m.index + m[0].length;
      if (m[0][0] === '.' && isAbbreviation(this.pending.slice(start, m.index))) continue;
      const sentence = this.pending.slice(start, end).trim();
      if (sentence) out.push(sentence);
      start = end;
    }
    this.pending = this.pending.slice(start);
    if (this.first && out.length === 0) {
      const clause = this.firstClause();
      if (clause) out.push(clause);
    }
    if (out.length) this.first = false;
    return out;
  }

  /** The first clause of what is pending when it has enough words (taken from `pending`), else undefined. */
  private firstClause(): string | undefined {
    const words = this.options.firstClauseWords ?? 0;
    if (words <= 0) return undefined;
    CLAUSE_RE.lastIndex = 0;
    for (let m = CLAUSE_RE.exec(this.pending); m; m = CLAUSE_RE.exec(this.pending)) {
      const end = m.index + m[0].length;
      const clause = this.pending.slice(0, end).trim();
      if (clause.split(/\s+/).length < words) continue;
      this.pending = this.pending.slice(end);
      return clause;
    }
    return undefined;
  }

  /** The text left once the stream has ended (a last sentence without its punctuation), or undefined. */
  flush(): string | undefined {
    const rest = this.pending.trim();
    this.pending = '';
    return rest || undefined;
  }
}

function isAbbreviation(before: string): boolean {
  const word = /([A-Za-z.]+)$/.exec(before)?.[1];
  if (!word) return false;
  // A single letter is an initial ("J. Smith").
  return ABBREVIATIONS.has(word.toLowerCase()) || /^[A-Za-z]$/.test(word);
}

/** Every sentence of a whole text, as the splitter would give them streamed. */
export function splitSentences(text: string): string[] {
  const splitter = new SentenceSplitter();
  const out = splitter.push(text);
  const rest = splitter.flush();
  return rest ? [...out, rest] : out;
}
