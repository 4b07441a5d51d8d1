// The embedded Postgres of `npm start` (src/db/embedded.ts) stops when asked, and stop() also
// returns when Postgres is already gone: a terminal's Ctrl-C signals the whole process group,
// so Postgres (a child of npm start) gets the SIGINT too and shuts down on its own before
// npm start, draining, comes to stop it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { runningEmbeddedPort, startEmbeddedPostgres } from '../../src/db/embedded.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'embedded-stop-'));

after(() => rmSync(dataDir, { recursive: true, force: true }));

test('stop() returns when Postgres already stopped on its own (SIGINT from the terminal)', async () => {
  const db = await startEmbeddedPostgres(dataDir, 'embedded-stop-test-password-0123');
  const port = runningEmbeddedPort(dataDir);
  assert.ok(port, 'running');
  const pid = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.kill(pid, 'SIGINT');
  // Gone, and reaped by this process (as when npm start comes to stop it after draining its calls).
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  while (alive()) await new Promise((r) => setTimeout(r, 50));
  // Hung for ever before: EmbeddedPostgres.stop() waits for an 'exit' event that has passed.
  await db.stop();

  // And a running one is stopped.
  const again = await startEmbeddedPostgres(dataDir, 'embedded-stop-test-password-0123');
  assert.ok(runningEmbeddedPort(dataDir));
  await again.stop();
  assert.equal(runningEmbeddedPort(dataDir), undefined);
});
