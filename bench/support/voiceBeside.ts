// bench/voiceTurns.ts beside a campaign burst (bench/campaignScale.ts): the campaign bench
// forks the voice bench with its service's settings (Postgres, Temporal, task queue,
// recordings folder), so the browser calls' workflows run on the campaign's worker, on its
// live-call queue, where a burst's starts compete with them. The voice bench serves its own
// API and media edge, measures one level with no burst, then a level per burst on order.
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { askChild } from './browserCallers.js';

/** Set in the voice bench's environment when a campaign bench drives it. */
export const BESIDE_CAMPAIGN_ENV = 'BENCH_BESIDE_CAMPAIGN';

/** A level of voice calls, in short. */
export interface VoiceLevelSummary {
  calls: number;
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

/** The campaign bench to the voice bench: run a level until `stop`; `end` closes it. */
export type BesideOrder = { cmd: 'level' } | { cmd: 'stop' } | { cmd: 'end' };
/** The voice bench to the campaign bench: the no-burst level once ready, then each level ordered. */
export type BesideReport = { event: 'ready'; summary: VoiceLevelSummary } | { event: 'level'; summary: VoiceLevelSummary } | { event: 'error'; message: string };

export interface VoiceBeside {
  /** The level measured before any burst. */
  baseline: VoiceLevelSummary;
  /** Starts a level of calls (rounds until `stop` is called); its summary once its last round ended. */
  startLevel(): { stop(): Promise<VoiceLevelSummary> };
  end(): Promise<void>;
}

/**
 * Forks bench/voiceTurns.ts with `env` (the service's settings) and `calls` calls a level;
 * resolves once its no-burst level is measured. Its report lines go to this process's stdout.
 */
export async function startVoiceBeside(env: NodeJS.ProcessEnv, calls: number): Promise<VoiceBeside> {
  const child: ChildProcess = fork(path.join(PROJECT_ROOT, 'bench', 'voiceTurns.ts'), [], {
    cwd: PROJECT_ROOT,
    execArgv: ['--import', 'tsx'],
    env: { ...env, [BESIDE_CAMPAIGN_ENV]: '1', BENCH_CALLS: String(calls) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failedEarly = exited.then(() => {
    throw new Error('bench/voiceTurns.ts exited before it was ready');
  });
  const ready = (await Promise.race([
    new Promise<BesideReport>((resolve, reject) => {
      child.on('message', (m: BesideReport) => (m.event === 'ready' ? resolve(m) : m.event === 'error' ? reject(new Error(m.message)) : undefined));
    }),
    failedEarly,
  ])) as Extract<BesideReport, { event: 'ready' }>;
  failedEarly.catch(() => undefined);
  return {
    baseline: ready.summary,
    startLevel() {
      const done = askChild<BesideOrder, BesideReport>(child, { cmd: 'level' }, 'level');
      return {
        stop: async () => {
          child.send({ cmd: 'stop' } satisfies BesideOrder);
          return ((await done) as Extract<BesideReport, { event: 'level' }>).summary;
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
