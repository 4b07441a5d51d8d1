// Auth Check and script runtime costs, pure (no database, no Temporal): how a record-set
// check scales with the number of records, what semantic matching adds, and what the
// per-call script parse inside the workflow costs next to one Auth Check run.
//
//   npx tsx bench/authCheck.ts
//
// Knobs: BENCH_ROUNDS (7): rounds per measurement, the median is reported.
import { performance } from 'node:perf_hooks';
import { runAuthCheck, type AuthCheckSettings } from '../src/domain/authCheck/index.js';
import { parseScriptDefinition } from '../src/domain/scripts/definition.js';
import { DEMO_SCRIPT } from '../src/domain/scripts/demoScript.js';
import { getVariable, type Scope } from '../src/domain/scripts/templates.js';
import { upperMedian } from './support/stats.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

/** Median time of one call of fn, in microseconds, over ROUNDS rounds of `iterations` calls. */
function measure(iterations: number, fn: () => unknown): number {
  for (let i = 0; i < Math.min(iterations, 200); i++) fn(); // warm-up
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) fn();
    rounds.push(((performance.now() - start) * 1000) / iterations);
  }
  return upperMedian(rounds);
}

const run = (settings: AuthCheckSettings, scope: Scope) => runAuthCheck(settings, { lookup: (n) => getVariable(scope, n), region: 'US', transcript: [] });

// 1. Single record: exact only vs semantic allowed with one near miss.
const single = { contact: { full_name: 'Jane Smith' }, objects: { identity: { date_of_birth: '1985-04-03' } }, answers: { name: 'Jane Smyth', dob: 'April 3rd, 1985' } };
const singleSettings = { record_array: ['{{contact.full_name}}', '{{objects.identity.date_of_birth}}'], check_array: ['{{answers.name}}', '{{answers.dob}}'] };
const exactUs = measure(20_000, () => run(singleSettings, single));
const semanticUs = measure(20_000, () => run({ ...singleSettings, exact: 'No' }, single));

// 2. Record sets of growing size; the caller matches the last record only.
function recordSet(n: number): Scope {
  const records = Array.from({ length: n }, (_, i) => ({ id: i, name: `Person ${i} Example`, dob: `19${50 + (i % 50)}-0${1 + (i % 9)}-1${i % 10}` }));
  records[n - 1] = { id: n - 1, name: 'Jane Smith', dob: '1985-04-03' };
  return { lookup: JSON.stringify(records), answers: single.answers };
}
const setSettings = { record_array: ['{{lookup}}.name', '{{lookup}}.dob'], check_array: ['{{answers.name}}', '{{answers.dob}}'], raw_data: '{{lookup}}', exact: 'No' };
const sizes = [10, 1_000, 10_000];
const perRecord = sizes.map((n) => {
  const scope = recordSet(n);
  const us = measure(Math.max(3, Math.round(20_000 / n)), () => run(setSettings, scope));
  return { n, us, perRecordUs: us / n };
});

// 3. The script parse every call does in the workflow, next to one Auth Check run.
const parseUs = measure(5_000, () => parseScriptDefinition(DEMO_SCRIPT));

const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(2)} µs`);
console.log(`Auth Check benchmark (median of ${ROUNDS} rounds)\n`);
console.log('single record, 2 positions');
console.log(`  exact only            ${fmt(exactUs)}`);
console.log(`  semantic allowed      ${fmt(semanticUs)}   ratio to exact ${(semanticUs / exactUs).toFixed(2)}`);
console.log('\nrecord set (Raw Data), 2 positions, Exact No, the last record verifies');
for (const r of perRecord) {
  console.log(`  ${String(r.n).padStart(6)} records  ${fmt(r.us).padStart(10)}   per record ${fmt(r.perRecordUs)}   per-record ratio to 10 records ${(r.perRecordUs / perRecord[0].perRecordUs).toFixed(2)}`);
}
console.log('\nscript runtime');
console.log(`  parse the demo script ${fmt(parseUs)}   ratio to one single-record Auth Check ${(parseUs / exactUs).toFixed(2)}`);
