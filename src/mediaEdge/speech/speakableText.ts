/**
 * Preparing agent text for a synthesiser: plain ASCII words (the offline voices know no
 * other), cut at sentence ends so the first sentence can play while the next is made, and
 * the silence engines put around an utterance trimmed so the first frame already speaks.
 */
import { SAMPLE_RATE } from '../media/channel.js';
import { dbfs } from '../audio/level.js';

/** Sentences shorter than this are joined to the next ("Dr. Smith", "Yes. Thank you."). */
const MIN_CHUNK_CHARS = 24;
/**
 * Longer pieces are cut (at a comma, else between words): one piece is one command to the
 * Festival process every call of the edge shares, and a sentence of thousands of characters
 * would hold it for a second while other calls wait.
 */
export const MAX_CHUNK_CHARS = 240;

/** ASCII text without control characters; accents dropped ("José" → "Jose"). */
export function plainText(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** True when there is something to say (an engine given only punctuation may fail or crash). */
export function hasWords(text: string): boolean {
  return /[A-Za-z0-9]/.test(text);
}

/** The text in sentence-sized pieces worth synthesising one at a time. */
export function speakableChunks(text: string): string[] {
  const sentences = plainText(text)
    .split(/(?<=[.!?;])\s+/)
    .filter(hasWords);
  const chunks: string[] = [];
  let pending = '';
  for (const sentence of sentences) {
    pending = pending ? `${pending} ${sentence}` : sentence;
    if (pending.length >= MIN_CHUNK_CHARS) {
      chunks.push(pending);
      pending = '';
    }
  }
  if (pending) {
    if (chunks.length > 0 && pending.length < MIN_CHUNK_CHARS) chunks[chunks.length - 1] += ` ${pending}`;
    else chunks.push(pending);
  }
  return chunks.flatMap(cutLong);
}

/** A piece in parts of at most MAX_CHUNK_CHARS: cut after the last comma (or ; :) in the second half of the limit, else at the last space, else anywhere. */
function cutLong(chunk: string): string[] {
  const parts: string[] = [];
  let rest = chunk;
  while (rest.length > MAX_CHUNK_CHARS) {
    const head = rest.slice(0, MAX_CHUNK_CHARS + 1);
    const pause = Math.max(head.lastIndexOf(', '), head.lastIndexOf('; '), head.lastIndexOf(': '));
    const space = head.lastIndexOf(' ');
    const cut = pause >= MAX_CHUNK_CHARS / 2 ? pause + 1 : space > 0 ? space : MAX_CHUNK_CHARS;
    parts.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest) parts.push(rest);
  return parts.filter(hasWords);
}

/** Below this a 10 ms window counts as the silence around an utterance. */
const EDGE_SILENCE_DBFS = -50;
const WINDOW = SAMPLE_RATE / 100;

/**
 * The samples without the silence before the first sound and after the last, keeping
 * `keepLeadMs` and `keepTrailMs` of it (a cut right at the first sound clicks).
 */
export function trimEdgeSilence(samples: Int16Array, keepLeadMs: number, keepTrailMs: number, sampleRate = SAMPLE_RATE): Int16Array {
  const window = Math.round((WINDOW * sampleRate) / SAMPLE_RATE);
  let first = -1;
  let last = -1;
  for (let at = 0; at < samples.length; at += window) {
    if (dbfs(samples.subarray(at, at + window)) > EDGE_SILENCE_DBFS) {
      if (first < 0) first = at;
      last = Math.min(samples.length, at + window);
    }
  }
  if (first < 0) return samples.subarray(0, 0);
  const from = Math.max(0, first - Math.round((keepLeadMs * sampleRate) / 1000));
  const to = Math.min(samples.length, last + Math.round((keepTrailMs * sampleRate) / 1000));
  return samples.subarray(from, to);
}
