// Calls in the admission line for the tests of the line and its pacer (docs/calls.md,
// "Admission"): calls due together, and a line that holds only the calling file's calls.
import { admissionLineTeams, admitFromLine } from '../../src/db/repositories/concurrencySlots.js';
import { cancelCall, type CallServiceDeps } from '../../src/services/calls.js';
import { createTestTeam, type TestTeam } from './app.js';
import { scheduleSimulatedCall } from './callWorkflowEnv.js';

/** `n` calls of the team due together at `at`, written at once; their ids in line order (creation). */
export async function dueTogether(deps: CallServiceDeps, team: TestTeam, n: number, at: Date): Promise<string[]> {
  const written = await Promise.all(Array.from({ length: n }, () => scheduleSimulatedCall(deps, team, '2468', { scheduledTime: at })));
  const { rows } = await deps.pool.query<{ id: string }>('SELECT id FROM calls WHERE id = ANY($1::uuid[]) ORDER BY seq', [written.map((c) => c.callId)]);
  return rows.map((r) => r.id);
}

/**
 * The lane's database holds earlier files' calls (rows without workflows): they are handed
 * their slots first, once per file, so the line holds only the file's own calls. Call it
 * before each test that needs the line to itself.
 */
export function lineOfThisFile(deps: () => CallServiceDeps): () => Promise<void> {
  let drained: Promise<void> | undefined;
  return () =>
    (drained ??= (async () => {
      const { pool } = deps();
      // And the first start of a workflow in this process (seconds on a busy machine) is made now,
      // not between the calls a test means to fall due together.
      const warm = await createTestTeam(pool);
      const first = await scheduleSimulatedCall(deps(), warm, '2468', { scheduledTime: new Date(Date.now() + 3600_000) });
      await cancelCall(deps(), warm.teamId, first.callId);
      for (;;) {
        const teams = await admissionLineTeams(pool, 1000);
        if (teams.length === 0) return;
        for (const teamId of teams) await admitFromLine(pool, teamId, 100_000);
      }
    })());
}
