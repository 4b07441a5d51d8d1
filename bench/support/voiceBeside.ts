// bench/voiceTurns.ts beside a campaign burst (bench/campaignScale.ts): the campaign bench
// starts the voice bench with its service's settings (Postgres, Temporal, task queue,
// recordings folder), so the browser calls' workflows run on the campaign's worker, on its
// live-call queue, where a burst's starts compete with them. The voice bench serves its own
// API and media edge, warms up, then measures a level of calls on each order: until it has
// enough turns (with no burst), or until the campaign bench stops it (during a burst).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { askChild } from './browserCallers.js';

/** Set in the voice bench's environment when a campaign bench drives it. */
export const BESIDE_CAMPAIGN_ENV = 'BENCH_BESIDE_CAMPAIGN';

/** A level of voice calls, in short. */
export interface VoiceLevelSummary {
  /** Calls at once. */
  calls: number;
  /** Calls made in the level, over its rounds. */
  callsRun: number;
  /** Turns timed at the edge. */
  turns: number;
  edgeP50: number;
  edgeP95: number;
  callerP50: number;
  callerP95: number;
  /** The workflow between two voice activities, median and p95 (ms). */
  workflowP50: number;
  workflowP95: number;
  failed: number;
  /** Answers the edge did not make out (reprompted). */
  unheard: number;
}

/**
 * The campaign bench to the voice bench: run a level, rounds of calls until it has `minTurns`
 * turns, or (without) until `stop`; `end` closes it.
 */
export type BesideOrder = { cmd: 'level'; minTurns?: number } | { cmd: 'stop' } | { cmd: 'end' };
/** The voice bench to the campaign bench: warmed up, then each level ordered. */
export type BesideReport = { event: 'ready' } | { event: 'level'; summary: VoiceLevelSummary } | { event: 'error'; message: string };

export interface VoiceBeside {
  /** A level of calls, rounds until it has `minTurns` turns; its summary. */
  level(minTurns: number): Promise<VoiceLevelSummary>;
  /** Starts a level of calls, rounds until `stop` is called; its summary once its last round ended. */
  startLevel(): { stop(): Promise<VoiceLevelSummary> };
  end(): Promise<void>;
}

/**
 * Starts bench/voiceTurns.ts with `env` (the service's settings) and `calls` calls at once;
 * resolves once it has warmed up. Its report lines go to this process's stdout.
 */
export async function startVoiceBeside(env: NodeJS.ProcessEnv, calls: number): Promise<VoiceBeside> {
  // Node with an IPC channel, as fork gives one: the orders and reports go over it.
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', path.join(PROJECT_ROOT, 'bench', 'voiceTurns.ts')], {
    cwd: PROJECT_ROOT,
    env: { ...env, [BESIDE_CAMPAIGN_ENV]: '1', BENCH_CALLS: String(calls) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failedEarly = exited.then(() => {
    throw new Error('bench/voiceTurns.ts exited before it was ready');
  });
  const ready = new Promise<void>((resolve, reject) => {
    const onMessage = (m: BesideReport) => {
      if (m.event === 'ready') resolve();
      else if (m.event === 'error') reject(new Error(m.message));
      else return;
      child.off('message', onMessage);
    };
    child.on('message', onMessage);
  });
  await Promise.race([ready, failedEarly]);
  failedEarly.catch(() => undefined);
  const summaryOf = async (answer: Promise<BesideReport>) => ((await answer) as Extract<BesideReport, { event: 'level' }>).summary;
  return {
    level: (minTurns) => summaryOf(askChild<BesideOrder, BesideReport>(child, { cmd: 'level', minTurns }, 'level')),
    startLevel() {
      const done = summaryOf(askChild<BesideOrder, BesideReport>(child, { cmd: 'level' }, 'level'));
      return {
        stop: async () => {
          child.send({ cmd: 'stop' } satisfies BesideOrder);
          return done;
        },
      };
    },
    async end() {
      if (child.exitCode !== null) return;
      child.send({ cmd: 'end' } satisfies BesideOrder);
      await exited;
    },
  };
}
