// Keyset cursors that are date-times (src/domain/cursor.ts) and the call lifecycle rules.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { END_REASONS, isRetryable, isTerminalStatus, TERMINAL_STATUSES, transcriptText } from '../../src/domain/calls.js';
import { decodeCursor, encodeCursor } from '../../src/domain/cursor.js';
import { simulatedOutcome } from '../../src/telephony/simulator.js';

describe('date-time cursors', () => {
  test('a cursor is a valid date-time at the row’s instant and decodes to its exact position', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 4_102_444_800_000_000n }), // up to 2100, in microseconds
        fc.integer({ min: 1, max: 999_999_999_999 }),
        (micros, seq) => {
          const cursor = encodeCursor(micros, seq);
          // RFC 3339 date-time (any number of fraction digits). V8's Date.parse reads long
          // fractions loosely, so only "is a date" is asked of it.
          assert.match(cursor, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{18}Z$/);
          assert.ok(!Number.isNaN(Date.parse(cursor)), cursor);
          const position = decodeCursor(cursor);
          assert.equal(position?.seq, seq);
          const fraction = position!.at.match(/\.(\d{6})Z$/)![1];
          assert.equal(BigInt(Date.parse(position!.at)) * 1000n + BigInt(Number(fraction) % 1000), micros);
        },
      ),
    );
  });

  test('a plain date-time is a position before that instant; anything else is not a cursor', () => {
    assert.deepEqual(decodeCursor('2026-01-01T12:00:00Z'), { at: '2026-01-01T12:00:00.000Z' });
    assert.deepEqual(decodeCursor('2026-01-01T14:00:00.5+02:00'), { at: '2026-01-01T12:00:00.500Z' });
    for (const bad of ['', 'yesterday', '2026-01-01', '12345', '2026-13-01T00:00:00Z']) assert.equal(decodeCursor(bad), undefined, bad);
  });
});

describe('call lifecycle rules', () => {
  test('retryable: terminal, not completed, not web', () => {
    for (const status of TERMINAL_STATUSES) {
      assert.equal(isRetryable({ status, type: 'outbound' }), status !== 'completed', status);
      assert.equal(isRetryable({ status, type: 'web' }), false, status);
    }
    assert.equal(isRetryable({ status: 'scheduled', type: 'outbound' }), false);
    assert.equal(isRetryable({ status: 'in-progress', type: 'outbound' }), false);
  });

  test('every end reason belongs to a terminal status', () => {
    for (const status of Object.values(END_REASONS)) assert.ok(isTerminalStatus(status));
  });

  test('the simulator picks the outcome by the last four digits', () => {
    const table: [string, string, string][] = [
      ['+14152340001', 'rang-out', 'no_answer'],
      ['+14152340002', 'voicemail', 'voicemail'],
      ['+14152340003', 'User rejected', 'declined'],
      ['+14152340004', 'failed', 'provider_error'],
      ['+14152340005', 'User unavailable', 'unreachable'],
      ['+14152340006', 'hang-up', 'User Hangup'],
      ['+14152340007', 'dropout', 'connection_lost'],
      ['+14152340008', 'completed', 'agent_hangup'],
      ['+14152343668', 'hang-up', 'User Hangup'],
      ['+14152341001', 'completed', 'agent_hangup'],
    ];
    for (const [number, status, endReason] of table) {
      const outcome = simulatedOutcome(number);
      assert.deepEqual([outcome.status, outcome.endReason], [status, endReason], number);
    }
  });

  test('the transcript is role-prefixed lines', () => {
    assert.equal(transcriptText([{ role: 'agent', text: 'Hello.' }, { role: 'user', text: 'Hi.' }]), 'Agent: Hello.\nUser: Hi.');
  });
});
