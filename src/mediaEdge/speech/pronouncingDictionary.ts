/**
 * A CMU-style pronouncing dictionary (`word PH O NE S`, alternates as `word(2) ...`), as
 * pocketsphinx reads it. Loaded once per file; a grammar's session gets a dictionary of
 * just the grammar's words, which pocketsphinx loads in a few milliseconds instead of
 * the 135,000 entries of the full one.
 */
import { readFile } from 'node:fs/promises';

export class PronouncingDictionary {
  private constructor(private readonly pronunciations: Map<string, string[]>) {}

  /** Parses dictionary text. */
  static parse(text: string): PronouncingDictionary {
    const map = new Map<string, string[]>();
    for (const line of text.split('\n')) {
      const space = line.indexOf(' ');
      if (space <= 0) continue;
      const word = line.slice(0, space).replace(/\(\d+\)$/, '').toLowerCase();
      const phones = line.slice(space + 1).trim();
      if (!phones) continue;
      const list = map.get(word);
      if (list) list.push(phones);
      else map.set(word, [phones]);
    }
    return new PronouncingDictionary(map);
  }

  get size(): number {
    return this.pronunciations.size;
  }

  has(word: string): boolean {
    return this.pronunciations.has(word.toLowerCase());
  }

  /** Dictionary text holding only `words` (unknown ones left out), alternates numbered as in the source. */
  subset(words: Iterable<string>): string {
    const lines: string[] = [];
    for (const word of new Set([...words].map((w) => w.toLowerCase()))) {
      const phones = this.pronunciations.get(word);
      phones?.forEach((p, i) => lines.push(`${i === 0 ? word : `${word}(${i + 1})`} ${p}`));
    }
    return `${lines.join('\n')}\n`;
  }
}

const loaded = new Map<string, Promise<PronouncingDictionary>>();

/** The dictionary in `file`, read once per process. */
export function loadPronouncingDictionary(file: string): Promise<PronouncingDictionary> {
  let dictionary = loaded.get(file);
  if (!dictionary) {
    dictionary = readFile(file, 'utf8').then((text) => PronouncingDictionary.parse(text));
    loaded.set(file, dictionary);
    dictionary.catch(() => loaded.delete(file));
  }
  return dictionary;
}
