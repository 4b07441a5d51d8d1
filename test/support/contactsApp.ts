// The real API for the contacts, lists and objects tests. These endpoints never touch
// Temporal, so the client's connection is lazy and points nowhere; rate limits are off so
// that a test can send as many requests as it needs from one key.
import { Client, Connection } from '@temporalio/client';
import type { Pool } from '../../src/db/pool.js';
import type { ListContactsAddedListener } from '../../src/services/lists.js';
import { createTestTeam, startTestApi, type TestApi, type TestTeam } from './app.js';

export async function startContactsApi(opts: { listContactsAdded?: ListContactsAddedListener } = {}): Promise<TestApi> {
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:9' }) });
  return startTestApi({ temporal, config: { RATE_LIMITS_ENABLED: 'false' }, listContactsAdded: opts.listContactsAdded });
}

export async function twoTeams(pool: Pool): Promise<[TestTeam, TestTeam]> {
  return [await createTestTeam(pool, { name: 'team A' }), await createTestTeam(pool, { name: 'team B' })];
}

/** The contacts API (startContactsApi) and two teams on it, A and B (twoTeams). */
export async function startContactsApiWithTeams(opts: Parameters<typeof startContactsApi>[0] = {}): Promise<{ app: TestApi; teamA: TestTeam; teamB: TestTeam }> {
  const app = await startContactsApi(opts);
  const [teamA, teamB] = await twoTeams(app.pool);
  return { app, teamA, teamB };
}

/** A request to `app` with `team`'s API key. */
export function requestAs(app: TestApi, team: TestTeam, method: string, path: string, body?: unknown): ReturnType<TestApi['request']> {
  return app.request(method, path, { key: team.apiKey, body });
}

/** Row counts of every table this feature writes, for one team. */
export async function teamRowCounts(pool: Pool, teamId: string): Promise<Record<string, number>> {
  const { rows } = await pool.query<Record<string, number>>(
    `SELECT (SELECT count(*) FROM contacts WHERE team_id = $1) AS contacts,
            (SELECT count(*) FROM lists WHERE team_id = $1) AS lists,
            (SELECT count(*) FROM lists WHERE team_id = $1 AND deleted_at IS NOT NULL) AS deleted_lists,
            (SELECT count(*) FROM list_contacts WHERE team_id = $1) AS list_contacts,
            (SELECT count(*) FROM object_types WHERE team_id = $1) AS object_types,
            (SELECT count(*) FROM objects WHERE team_id = $1) AS objects,
            (SELECT count(*) FROM contact_objects WHERE team_id = $1) AS contact_objects,
            (SELECT coalesce(max(updated_at), 'epoch')::text FROM contacts WHERE team_id = $1) AS contacts_updated,
            (SELECT coalesce(max(updated_at), 'epoch')::text FROM lists WHERE team_id = $1) AS lists_updated,
            (SELECT coalesce(max(updated_at), 'epoch')::text FROM objects WHERE team_id = $1) AS objects_updated`,
    [teamId],
  );
  return rows[0];
}

let phoneSeq = 0;
/** A valid US number unique within this test process (555-01xx numbers are fictional but valid). */
export function uniquePhone(): string {
  phoneSeq += 1;
  const n = (process.pid * 7919 + phoneSeq) % 10_000_000;
  return `+1415${String(2000000 + (n % 8000000)).padStart(7, '0')}`;
}
