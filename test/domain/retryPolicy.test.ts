// Retries by outcome (src/domain/retryPolicy.ts): which statuses retry, how often, how long after.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RETRY_POLICY_STATUSES, retryDelaySeconds, retryPolicyProblems } from '../../src/domain/retryPolicy.js';

const policy = { 'rang-out': { max_attempts: 3, delay_seconds: 3600 }, voicemail: { max_attempts: 2, delay_seconds: 7200 } };

test('the statuses a policy names are the retryable terminal ones without completed and cancelled', () => {
  assert.deepEqual([...RETRY_POLICY_STATUSES].sort(), ['User rejected', 'User unavailable', 'dropout', 'failed', 'hang-up', 'rang-out', 'voicemail']);
});

test('the next attempt follows the rule of the status until max_attempts, which counts the first call', () => {
  assert.equal(retryDelaySeconds(policy, { status: 'rang-out', endReason: 'no_answer', attempt: 1 }), 3600);
  assert.equal(retryDelaySeconds(policy, { status: 'rang-out', endReason: 'no_answer', attempt: 2 }), 3600);
  assert.equal(retryDelaySeconds(policy, { status: 'rang-out', endReason: 'no_answer', attempt: 3 }), undefined);
  assert.equal(retryDelaySeconds(policy, { status: 'voicemail', endReason: 'voicemail', attempt: 1 }), 7200);
  assert.equal(retryDelaySeconds(policy, { status: 'voicemail', endReason: 'voicemail', attempt: 2 }), undefined);
  assert.equal(retryDelaySeconds(policy, { status: 'hang-up', endReason: 'User Hangup', attempt: 1 }), undefined);
  assert.equal(retryDelaySeconds(policy, { status: 'completed', endReason: 'agent_hangup', attempt: 1 }), undefined);
  assert.equal(retryDelaySeconds(policy, { status: 'cancelled', endReason: 'cancelled', attempt: 1 }), undefined);
  assert.equal(retryDelaySeconds(null, { status: 'rang-out', endReason: 'no_answer', attempt: 1 }), undefined);
});

test('a call failed by the do-not-call list never retries, whatever the policy says about failed', () => {
  const failing = { failed: { max_attempts: 5, delay_seconds: 60 } };
  assert.equal(retryDelaySeconds(failing, { status: 'failed', endReason: 'provider_error', attempt: 1 }), 60);
  assert.equal(retryDelaySeconds(failing, { status: 'failed', endReason: 'do_not_call', attempt: 1 }), undefined);
});

test('a number that does not exist (invalid_number: 404 or 484 from the trunk) is never redialled, though the policy retries failed; the trunk’s own failure is', () => {
  const failing = { failed: { max_attempts: 5, delay_seconds: 60 } };
  assert.equal(retryDelaySeconds(failing, { status: 'failed', endReason: 'invalid_number', attempt: 1 }), undefined);
  assert.equal(retryDelaySeconds(failing, { status: 'failed', endReason: 'trunk_error', attempt: 1 }), 60);
});

test('validation names each field: unknown statuses, attempts above 10, delays outside 60 to 604800', () => {
  assert.deepEqual(retryPolicyProblems(policy), []);
  assert.deepEqual(retryPolicyProblems({}), []);
  assert.deepEqual(retryPolicyProblems([]).map(([f]) => f), ['']);
  assert.deepEqual(
    retryPolicyProblems({
      completed: { max_attempts: 2, delay_seconds: 60 },
      cancelled: { max_attempts: 2, delay_seconds: 60 },
      'rang-out': { max_attempts: 11, delay_seconds: 59 },
      voicemail: { max_attempts: 0, delay_seconds: 604_801, colour: 1 },
      dropout: 3,
      failed: { max_attempts: 1.5, delay_seconds: '60' },
    }).map(([f]) => f),
    ['completed', 'cancelled', 'rang-out.max_attempts', 'rang-out.delay_seconds', 'voicemail', 'voicemail.max_attempts', 'voicemail.delay_seconds', 'dropout', 'failed.max_attempts', 'failed.delay_seconds'],
  );
  assert.deepEqual(retryPolicyProblems({ 'hang-up': { max_attempts: 10, delay_seconds: 604_800 }, failed: { max_attempts: 1, delay_seconds: 60 } }), []);
});
