import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { availablePort } from '../localPorts.js';
import type { Logger } from '../logging/logger.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from './searchAttributes.js';

export interface DevServer {
  address: string;
  uiUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev` (Web UI included) with its SQLite file under the
 * data folder, so workflow history survives restarts. Ports move when taken.
 */
export async function startDevServer(opts: { cliPath: string; dataDir: string; port: number; uiPort: number; namespace: string; logger: Logger }): Promise<DevServer> {
  if (!existsSync(opts.cliPath)) {
    throw new Error(`Temporal CLI not found at ${opts.cliPath}: run \`node scripts/bootstrap.mjs\` (needs Go) or set TEMPORAL_ADDRESS to an existing server`);
  }
  await mkdir(opts.dataDir, { recursive: true });
  const port = await availablePort(opts.port);
  const uiPort = await availablePort(opts.uiPort);
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    '--ui-port', String(uiPort),
    '--db-filename', path.join(opts.dataDir, 'temporal.sqlite'),
    '--namespace', opts.namespace,
    '--log-level', 'warn',
    // SQLite in WAL mode, synced at checkpoints: half the server's CPU per workflow task
    // (docs/benchmarks.md, "Campaign scale"). A killed process loses nothing; a power cut
    // can lose the last transactions, never the file.
    '--sqlite-pragma', 'journal_mode=wal',
    '--sqlite-pragma', 'synchronous=normal',
    ...Object.entries(SEARCH_ATTRIBUTE_DEFINITIONS).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];
  // spawns: temporal (the CLI the bootstrap builds, or TEMPORAL_CLI_PATH)
  const child: ChildProcess = spawn(opts.cliPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr?.on('data', (d: Buffer) => opts.logger.debug({ temporal: d.toString().trim() }, 'temporal dev server'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code) => {
    if (code) opts.logger.error({ code }, 'temporal dev server exited');
  });
  return {
    address: `127.0.0.1:${port}`,
    uiUrl: `http://127.0.0.1:${uiPort}`,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
