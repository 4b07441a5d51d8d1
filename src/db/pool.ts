import pg from 'pg';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
export type Queryable = Pick<pg.Pool, 'query'>;

// Return BIGINT counts as numbers and keep DATE columns as plain 'YYYY-MM-DD' strings.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);

export function createPool(connectionString: string, max = 10): Pool {
  // allowExitOnIdle: an idle pool never keeps a CLI run or a test process alive.
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000, allowExitOnIdle: true });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // Nor may a checked-out one between two queries (a Postgres restart terminates every
  // connection): the pool listens only to idle clients, and its next query fails instead.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** Runs fn inside one transaction on one client; rolls back on any error. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
