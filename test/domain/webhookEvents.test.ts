// Event ids and the retry schedule of event webhooks (src/domain/webhookEvents.ts), and the
// WEBHOOK_* configuration that reads them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { parseRetrySchedule, retryDelayAfter, webhookEventId } from '../../src/domain/webhookEvents.js';

const CALL = '3f5b1c9e-8d2a-4b6f-9c1e-2a7d4e8f0b13';

test('an event id is derived from the entity and the type: the same pair always, another pair never', () => {
  assert.equal(webhookEventId('call.ended', CALL), webhookEventId('call.ended', CALL));
  assert.match(webhookEventId('call.ended', CALL), /^evt_[0-9a-f]{32}$/);
  assert.notEqual(webhookEventId('call.ended', CALL), webhookEventId('call.analyzed', CALL));
  assert.notEqual(webhookEventId('call.ended', CALL), webhookEventId('call.ended', CALL.replace('3f5b', '3f5c')));
  // Pinned: ids already handed out to receivers must never change.
  assert.equal(webhookEventId('call.ended', CALL), 'evt_0056987e837b857a93f4cd537fa1b7d3');
});

test('the retry schedule: seconds separated by commas, each the delay before the next attempt', () => {
  const schedule = parseRetrySchedule('5,300,1800,7200,18000,36000,36000')!;
  assert.deepEqual(schedule, [5, 300, 1800, 7200, 18000, 36000, 36000]);
  assert.equal(schedule.reduce((a, b) => a + b, 0), 99_305, 'about 27 hours');
  assert.equal(retryDelayAfter(schedule, 1), 5);
  assert.equal(retryDelayAfter(schedule, 7), 36000);
  assert.equal(retryDelayAfter(schedule, 8), null, 'the 8th attempt is the last');
  assert.deepEqual(parseRetrySchedule(' 1, 0.5 ,2'), [1, 0.5, 2]);
  for (const bad of ['', '5,,10', '-1', '0', 'five', '5;10', '1e3', String(31 * 24 * 3600)]) assert.equal(parseRetrySchedule(bad), undefined, bad);
});

test('WEBHOOK_* settings: defaults, and a bad value stops start-up naming the variable', () => {
  const config = loadConfig({});
  assert.deepEqual(config.WEBHOOK_RETRY_SCHEDULE, [5, 300, 1800, 7200, 18000, 36000, 36000]);
  assert.equal(config.WEBHOOK_ALLOW_PRIVATE_URLS, false);
  assert.equal(config.WEBHOOK_MAX_CONCURRENT_SENDS, 500);
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1,2' }).WEBHOOK_RETRY_SCHEDULE, [1, 2]);
  assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE_URLS: 'true' }).WEBHOOK_ALLOW_PRIVATE_URLS, true);
  assert.throws(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '5,x' }), (err: unknown) => err instanceof ConfigError && err.variable === 'WEBHOOK_RETRY_SCHEDULE');
  assert.throws(() => loadConfig({ WEBHOOK_ALLOW_PRIVATE_URLS: 'maybe' }), (err: unknown) => err instanceof ConfigError && err.variable === 'WEBHOOK_ALLOW_PRIVATE_URLS');
  assert.throws(() => loadConfig({ WEBHOOK_MAX_CONCURRENT_SENDS: '0' }), (err: unknown) => err instanceof ConfigError && err.variable === 'WEBHOOK_MAX_CONCURRENT_SENDS');
});
