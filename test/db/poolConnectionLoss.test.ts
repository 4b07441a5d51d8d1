// A Postgres restart ends every connection with "terminating connection due to administrator
// command" (57P01). A client checked out of the pool at that moment, between two queries
// (inside a transaction waiting on something else), must not crash the process with an
// unhandled 'error' event: its next query fails, and the pool goes on with new connections.
// The termination is real: pg_terminate_backend on the test database.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createPool, type Pool } from '../../src/db/pool.js';

let pool: Pool;
let admin: Pool;

before(() => {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the tests with `npm test`');
  pool = createPool(url, 2);
  admin = createPool(url, 1);
});

after(async () => {
  await pool?.end();
  await admin?.end();
});

test('a checked-out client whose connection the server terminates neither crashes the process nor poisons the pool', async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
    // The server's notice arrives on the idle socket; give it time to be read.
    await new Promise((r) => setTimeout(r, 300));
    await assert.rejects(client.query('SELECT 1'));
    client.release(true);
    assert.deepEqual(uncaught, []);
    const again = await pool.query<{ one: number }>('SELECT 1 AS one');
    assert.equal(again.rows[0].one, 1);
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});
