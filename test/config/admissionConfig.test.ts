// The admission line's settings (docs/calls.md, "Admission") are checked at start-up like
// every other variable: a bad one stops start-up with a message naming it; unset, the defaults.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/index.js';
import { configError } from '../support/configErrors.js';

test('a bad admission setting stops start-up naming the variable', () => {
  for (const [env, message] of [
    [{ ADMISSION_RATE_PER_SECOND: '0' }, 'Invalid configuration: ADMISSION_RATE_PER_SECOND must be positive'],
    [{ ADMISSION_RATE_PER_SECOND: 'fast' }, 'Invalid configuration: ADMISSION_RATE_PER_SECOND must be a number'],
    [{ ADMISSION_RATE_PER_SECOND: '20000' }, 'Invalid configuration: ADMISSION_RATE_PER_SECOND must be at most 10000'],
    [{ ADMISSION_SAFETY_NET_SECONDS: '-1' }, 'Invalid configuration: ADMISSION_SAFETY_NET_SECONDS must not be negative'],
    [{ ADMISSION_SAFETY_NET_SECONDS: '1.5' }, 'Invalid configuration: ADMISSION_SAFETY_NET_SECONDS must be a whole number'],
    [{ ADMISSION_SAFETY_NET_SECONDS: '90000' }, 'Invalid configuration: ADMISSION_SAFETY_NET_SECONDS must be at most 86400'],
  ] as const) {
    assert.equal(configError(env), message, JSON.stringify(env));
  }
});

test('unset: 50 admissions a second per worker, a safety net an hour past the due time; fractions of a call a second allowed', () => {
  const config = loadConfig({});
  assert.equal(config.ADMISSION_RATE_PER_SECOND, 50);
  assert.equal(config.ADMISSION_SAFETY_NET_SECONDS, 3600);
  assert.equal(loadConfig({ ADMISSION_RATE_PER_SECOND: '0.5', ADMISSION_SAFETY_NET_SECONDS: '0' }).ADMISSION_RATE_PER_SECOND, 0.5);
});
