// A redis-server of one test or benchmark alone (free port, no persistence, its own folder),
// so it can be measured, killed, hung and restarted without touching anyone else's Redis.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../src/localPorts.js';

/** REDIS_BIN, else redis-server on PATH or in the usual system folders. */
function redisServerBinary(): string {
  if (process.env.REDIS_BIN) return process.env.REDIS_BIN;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).concat(['/usr/bin', '/usr/sbin', '/usr/local/bin'])) {
    if (dir && existsSync(path.join(dir, 'redis-server'))) return path.join(dir, 'redis-server');
  }
  throw new Error('redis-server not found: install it (node scripts/bootstrap.mjs --test) or set REDIS_BIN');
}

export class RedisServer {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(path.join(os.tmpdir(), 'redis-server-'));

  private constructor(readonly port: number) {}

  /** Starts one on a free port and waits until it answers PING. */
  static async start(): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The process id while it runs (for /proc measurements). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** (Re)starts it on the same port. */
  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir];
    this.child = spawn(redisServerBinary(), args, { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => {});
      try {
        await probe.connect();
        await probe.ping();
        return;
      } catch {
        if (Date.now() > deadline) throw new Error('redis-server did not start');
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        probe.disconnect();
      }
    }
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGSTOP hangs it (a slow Redis); SIGCONT lets it go on. */
  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.child?.kill(sig);
  }

  async stop(): Promise<void> {
    this.signal('SIGCONT');
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
