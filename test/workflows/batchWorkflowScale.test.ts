// A 1,000-contact batch under a ceiling of 5 in the time-skipping environment, with the
// real batch workflow and activities and the lean stand-in call workflow (see
// batchWorkflow.test.ts, whose other tests lanes run beside this one).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Pool } from '../../src/db/pool.js';
import { batchCallId } from '../../src/services/batchEngine.js';
import { showBatch, type BatchServiceDeps } from '../../src/services/batches.js';
import { BATCH_ID, BATCH_STATUS, TEAM_ID } from '../../src/temporal/searchAttributes.js';
import { batchWorkflowId, type BatchWorkflowResult } from '../../workflows/contracts.js';
import { createTestTeam, type TestTeam } from '../support/app.js';
import { assertEachCalledOnce, batchWorkflowEnv, callsPerContact, listWithContacts, maxInProgress, startBatch as startTeamBatch } from '../support/batches.js';

let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: BatchServiceDeps;
batchWorkflowEnv((started) => ({ env, pool, deps } = started));
const startBatch = (team: TestTeam, listId: string) => startTeamBatch(deps, team, listId);

const handle = (batchId: string) => env.client.workflow.getHandle(batchWorkflowId(batchId));
/** Awaiting the result lets the test server skip time until the batch ends. */
const finished = (batchId: string): Promise<BatchWorkflowResult> => handle(batchId).result();

describe('batch workflow at scale', () => {
  test('a batch over 1,000 contacts with a ceiling of 5 calls everyone exactly once, never more than five at a time', { timeout: 240_000 }, async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 5 });
    const { listId, contactIds } = await listWithContacts(pool, team.teamId, 1000);
    const batch = await startBatch(team, listId);
    const result = await finished(batch.id);

    assert.equal(result.status, 'completed');
    assert.equal(result.endReason, 'all_called');
    assert.deepEqual(result.progress, { total: 1000, pending: 0, calling: 0, in_progress: 0, skipped: 0, skipped_dnc: 0, done: { completed: 1000 }, done_total: 1000, attempts: 1000 });
    assertEachCalledOnce(await callsPerContact(pool, team.teamId), contactIds);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM calls WHERE team_id = $1 AND status = $2', [team.teamId, 'completed']);
    assert.equal(rows[0].n, 1000);
    assert.equal(await maxInProgress(pool, team.teamId), 5, 'five calls at a time, never more');
    // The call of a contact is named by (batch, contact): a second attempt finds the same call.
    const one = await pool.query('SELECT id FROM calls WHERE team_id = $1 AND contact_id = $2', [team.teamId, contactIds[0]]);
    assert.equal(one.rows[0].id, batchCallId(batch.id, contactIds[0]));

    const shown = await showBatch(deps, batch.id);
    assert.equal(shown.batch.status, 'completed');
    assert.deepEqual(shown.progress, result.progress);
    const description = await handle(batch.id).describe();
    assert.equal(description.typedSearchAttributes.get(BATCH_STATUS), 'completed');
    assert.equal(description.typedSearchAttributes.get(BATCH_ID), batch.id);
    assert.equal(description.typedSearchAttributes.get(TEAM_ID), team.teamId);
  });
});
