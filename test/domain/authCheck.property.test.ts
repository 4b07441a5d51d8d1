// Properties of Auth Check matching (fast-check): exact matching is symmetric and blind to
// case, spacing, commas and full stops; semantic matching never fires for dates or for
// values whose first letters differ.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { exactMatch, runAuthCheck, semanticMatch } from '../../src/domain/authCheck/index.js';
import { canonicalText, spokenDate } from '../../src/domain/dates.js';

const REGIONS = ['US', 'GB'];
const letters = 'abcdefghijklmnopqrstuvwxyzéüñABCDEFGHIJKLMNOPQRSTUVWXYZ';
const chars = `${letters}0123456789'-/ ,.`;
const value = fc.string({ unit: fc.constantFrom(...chars), maxLength: 24 });
const word = fc.string({ unit: fc.constantFrom(...letters), minLength: 1, maxLength: 12 });

/** Inserts spaces, commas and full stops at random places and flips the case of random characters. */
const perturbation = fc.array(fc.tuple(fc.nat(), fc.constantFrom(' ', ',', '.', '  ', ', ', '. ', '\t', '')), { maxLength: 6 });
function perturb(v: string, edits: Array<[number, string]>, flips: number[]): string {
  let out = Array.from(v)
    .map((c, i) => (flips.includes(i) ? (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) : c))
    .join('');
  for (const [at, s] of edits) {
    const i = at % (out.length + 1);
    out = out.slice(0, i) + s + out.slice(i);
  }
  return out;
}

const isoDate = fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2099-12-31T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
const dateSpellings = isoDate.chain((iso) => {
  const [y, m, d] = iso.split('-');
  return fc.constantFrom(iso, `${Number(m)}/${Number(d)}/${y}`, spokenDate(iso), `${Number(d)} ${spokenDate(iso).split(' ')[0]} ${y}`, `${iso}T12:00:00Z`);
});

describe('exact matching properties', () => {
  it('is symmetric', () => {
    fc.assert(
      fc.property(value, value, fc.constantFrom(...REGIONS), (a, b, region) => exactMatch(a, b, region) === exactMatch(b, a, region)),
      { numRuns: 2000 },
    );
  });

  it('is symmetric on dates in any spelling', () => {
    fc.assert(fc.property(dateSpellings, dateSpellings, (a, b) => exactMatch(a, b) === exactMatch(b, a)));
  });

  it('a value matches itself whenever it has anything left after normalisation', () => {
    fc.assert(fc.property(value, (a) => exactMatch(a, a) === (canonicalText(a) !== '')));
  });

  it('is unaffected by case, spacing, commas and full stops on either side', () => {
    fc.assert(
      fc.property(
        fc.oneof(value, dateSpellings),
        fc.oneof(value, dateSpellings),
        perturbation,
        perturbation,
        fc.array(fc.nat({ max: 30 })),
        fc.array(fc.nat({ max: 30 })),
        fc.constantFrom(...REGIONS),
        (a, b, ea, eb, fa, fb, region) => exactMatch(a, b, region) === exactMatch(perturb(a, ea, fa), perturb(b, eb, fb), region),
      ),
      { numRuns: 2000 },
    );
  });

  it('any spelling of a date matches its ISO form after perturbation', () => {
    fc.assert(
      fc.property(isoDate, perturbation, fc.array(fc.nat({ max: 30 })), (iso, edits, flips) => {
        const [y, m, d] = iso.split('-').map(Number);
        for (const spelled of [spokenDate(iso), `${m}/${d}/${y}`, `${d} ${spokenDate(iso).split(' ')[0]} ${y}`]) {
          if (!exactMatch(iso, perturb(spelled, edits, flips), 'US')) return false;
        }
        return true;
      }),
    );
  });
});

describe('semantic matching properties', () => {
  it('never fires for dates, on either side, in any spelling', () => {
    fc.assert(
      fc.property(dateSpellings, fc.oneof(value, dateSpellings), (date, other) => !semanticMatch(date, other) && !semanticMatch(other, date)),
      { numRuns: 2000 },
    );
  });

  it('never fires when the first letters differ', () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        const [ca, cb] = [canonicalText(a), canonicalText(b)];
        fc.pre(ca !== '' && cb !== '' && Array.from(ca)[0] !== Array.from(cb)[0]);
        return !semanticMatch(a, b);
      }),
      { numRuns: 3000 },
    );
  });

  it('never fires for a word against a different word with another first letter but the same rest (Bob/Rob)', () => {
    fc.assert(
      fc.property(word, fc.constantFrom(...'bcdfghjklmnpqrstvwxz'), fc.constantFrom(...'aeiouy'), (w, x, y) => !semanticMatch(x + w, y + w)),
    );
  });

  it('is symmetric', () => {
    fc.assert(fc.property(value, value, (a, b) => semanticMatch(a, b) === semanticMatch(b, a)), { numRuns: 2000 });
  });

  it('never fires for a proper prefix (an abbreviation) of a word', () => {
    fc.assert(
      fc.property(word, fc.nat(), (w, cut) => {
        fc.pre(w.length > 1);
        const short = w.slice(0, 1 + (cut % (w.length - 1)));
        return !semanticMatch(short, w);
      }),
    );
  });

  it('an Auth Check with Exact No never verifies a date position by near spelling', () => {
    fc.assert(
      fc.property(isoDate, isoDate, (a, b) => {
        fc.pre(a !== b);
        const r = runAuthCheck({ record_array: [a], check_array: [b], exact: 'No' }, { lookup: () => undefined, region: 'US', transcript: [] });
        return r.variables.status === 'failed' && !r.variables.semantic_match;
      }),
    );
  });
});

describe('date spellings', () => {
  it('every generated spelling normalises to the same day', () => {
    fc.assert(fc.property(isoDate, (iso) => exactMatch(iso, spokenDate(iso))));
  });

  it('a known example: April 3rd, 1985', () => {
    assert.equal(spokenDate('1985-04-03'), 'April 3rd, 1985');
  });
});
