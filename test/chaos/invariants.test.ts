// The chaos run's rule for a browser call whose media edge was killed while it was live
// (chaos/invariants.ts, "Browser calls end cleanly"): dropout with a System Note, completed
// when its script had already run to its end and only the agent's hang-up failed to reach, or
// failed / not_connected when the edge died before the call connected.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { endAfterEdgeKilled } from '../../chaos/invariants.js';

const hangUpNote = { kind: 'media', text: "The agent's hang-up did not reach the caller: The media edge holding the call stopped answering (hangUpCaller was never picked up); the script had already run to its end." };

test('dropout with a System Note holds; dropout without one is named', () => {
  assert.equal(endAfterEdgeKilled({ id: 'a', status: 'dropout', system_notes: [{ kind: 'media', text: 'The media edge holding the call stopped answering' }] }), undefined);
  assert.equal(endAfterEdgeKilled({ id: 'a', status: 'dropout', system_notes: [] }), 'browser call a ended dropout without a System Note');
});

test('completed holds only when the script had run to its end and the hang-up is the note', () => {
  assert.equal(endAfterEdgeKilled({ id: 'b', status: 'completed', system_notes: [{ kind: 'script_result', text: 'Script "x" ran to its end' }, hangUpNote] }), undefined);
  assert.equal(endAfterEdgeKilled({ id: 'b', status: 'completed', system_notes: [] }), 'browser call b whose edge was killed ended completed');
  assert.equal(endAfterEdgeKilled({ id: 'c', status: 'in-progress', system_notes: [hangUpNote] }), 'browser call c whose edge was killed ended in-progress');
});

test('failed holds only as not_connected: the edge died before the call connected', () => {
  assert.equal(endAfterEdgeKilled({ id: 'd', status: 'failed', end_reason: 'not_connected', system_notes: [] }), undefined);
  assert.equal(endAfterEdgeKilled({ id: 'd', status: 'failed', end_reason: 'provider_error', system_notes: [hangUpNote] }), 'browser call d whose edge was killed ended failed');
});
