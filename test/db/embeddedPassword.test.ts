// The embedded Postgres of a local install (src/db/embedded.ts) takes a generated password;
// a data folder made when the password was the fixed `postgres` gets the generated one on its
// next start, so the fixed one stops working.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';

async function canLogIn(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === '28P01') return false;
    throw err;
  } finally {
    await client.end().catch(() => {});
  }
}

test('a cluster made with the former fixed password is moved to the generated one', async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'embedded-password-'));
  const former = await startEmbeddedPostgres(dataDir, 'postgres');
  const formerUrl = former.url;
  await former.stop();

  const generated = 'generated-password-for-this-test-7f3a';
  const db = await startEmbeddedPostgres(dataDir, generated);
  try {
    assert.ok(db.url.includes(encodeURIComponent(generated)));
    assert.equal(await canLogIn(db.url), true);
    const port = new URL(db.url).port;
    assert.equal(await canLogIn(formerUrl.replace(/:\d+\//, `:${port}/`)), false, 'the fixed password no longer logs in');
    // Attaching to the running cluster (the CLI beside npm start) uses the same password.
    const attached = await startEmbeddedPostgres(dataDir, generated);
    assert.equal(attached.url, db.url);
  } finally {
    await db.stop();
  }
});
