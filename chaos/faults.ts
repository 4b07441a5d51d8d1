// The faults of the chaos run, each kind many times at moments drawn from the seed, and the
// time the service takes to recover from each: from the end of the fault (the part back) to
// the end of a canary call created right then, through the public API.
import type { Cluster } from './cluster.js';
import type { ApiClient, LoadTeam } from './load.js';
import type { Ledger } from './ledger.js';
import type { SeededRandom } from './seededRandom.js';

export type FaultKind =
  | 'SIGKILL a worker, restart'
  | 'SIGKILL the API mid-request, restart'
  | 'SIGKILL the media edge with calls talking, restart'
  | 'restart the Temporal dev server'
  | 'restart Postgres'
  | 'stop Redis for 30 s'
  | 'SIGSTOP a worker past the heartbeat timeouts'
  | 'webhook receiver answers 500 for a minute';

/** Per minute of run, so a 30-minute run kills a worker 54 times. */
const RATE_PER_MINUTE: Record<FaultKind, number> = {
  'SIGKILL a worker, restart': 1.8,
  'SIGKILL the API mid-request, restart': 0.4,
  'SIGKILL the media edge with calls talking, restart': 0.25,
  'restart the Temporal dev server': 0.15,
  'restart Postgres': 0.15,
  'stop Redis for 30 s': 0.1,
  'SIGSTOP a worker past the heartbeat timeouts': 0.2,
  'webhook receiver answers 500 for a minute': 0.1,
};

/** Faults that take the API's dependencies or the API away: one at a time, so each recovery is its own. */
const EXCLUSIVE = new Set<FaultKind>(['SIGKILL the API mid-request, restart', 'SIGKILL the media edge with calls talking, restart', 'restart the Temporal dev server', 'restart Postgres']);

/** The activity heartbeat timeouts are 5 s (edge) and 10 s (dial): a worker stopped this long misses them. */
const PAUSE_MS = 15_000;
const REDIS_DOWN_MS = 30_000;
const WEBHOOK_FAIL_MS = 60_000;
/** Postgres stays down this long, so requests meet the outage. */
const POSTGRES_DOWN_MS = 5_000;
/**
 * The Temporal dev server stays down this long once it has exited: its outage window is this
 * span, in which the health poll (about one a second) must find it down. A quick machine stops
 * and starts it within a second, and a window from the stop's beginning held only a sample
 * taken while it was still shutting down (answering), never one of the outage.
 */
const TEMPORAL_DOWN_MS = 3_000;

export interface PlannedFault {
  kind: FaultKind;
  /** Milliseconds after the load started. */
  at: number;
}

export interface InjectedFault extends PlannedFault {
  startedAt: number;
  endedAt?: number;
  /** The part hit (which worker). */
  target?: string;
  /** From endedAt to the end of the canary call, or undefined when it did not end in time. */
  recoveryMs?: number;
  /** A Node part killed: from its spawn to its ready line (what `recoveryMs` does not count). */
  restartMs?: number;
  note?: string;
}

/** The faults of a run of `minutes`, at times drawn from the seed within [from, until] ms. */
export function planFaults(random: SeededRandom, minutes: number, from: number, until: number): PlannedFault[] {
  const plan: PlannedFault[] = [];
  for (const [kind, rate] of Object.entries(RATE_PER_MINUTE) as Array<[FaultKind, number]>) {
    const count = Math.max(1, Math.round(rate * minutes));
    for (let i = 0; i < count; i++) plan.push({ kind, at: random.int(from, until) });
  }
  return plan.sort((a, b) => a.at - b.at);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts a killed part again, recording the time from its spawn to its ready line on the fault. */
async function timedStart(part: { start(): Promise<void> }, fault: InjectedFault): Promise<void> {
  const started = Date.now();
  await part.start();
  fault.restartMs = Date.now() - started;
}

export class FaultInjector {
  readonly injected: InjectedFault[] = [];
  /** Windows in which a dependency was down, for the health and 503 invariants. */
  readonly outages: Array<{ part: 'database' | 'temporal' | 'redis'; from: number; to: number }> = [];
  private exclusive: Promise<void> = Promise.resolve();
  private liveBrowserCalls = 0;
  private canarySeq = 0;
  private readonly pending: Promise<void>[] = [];

  constructor(
    private readonly cluster: Cluster,
    private readonly api: ApiClient,
    private readonly ledger: Ledger,
    /** The canaries' own team, so they do not wait in the load's line for slots. */
    private readonly canaryTeam: Pick<LoadTeam, 'key' | 'scriptId' | 'from'>,
    private readonly random: SeededRandom,
    /** No canary is waited for past this instant (the run's time budget). */
    private readonly giveUpAt = Infinity,
  ) {}

  browserCallLive(delta: number): void {
    this.liveBrowserCalls += delta;
  }

  /** Injects the plan's faults at their times after `start`; each kind runs its own faults one after another. */
  run(plan: PlannedFault[], start: number): Promise<void> {
    const byKind = new Map<FaultKind, PlannedFault[]>();
    for (const f of plan) byKind.set(f.kind, [...(byKind.get(f.kind) ?? []), f]);
    const lanes = [...byKind.values()].map(async (faults) => {
      for (const fault of faults) {
        await sleep(Math.max(0, start + fault.at - Date.now()));
        await this.inject(fault);
      }
    });
    return Promise.all(lanes).then(() => Promise.all(this.pending)).then(() => undefined);
  }

  private async inject(fault: PlannedFault): Promise<void> {
    if (!EXCLUSIVE.has(fault.kind)) return this.injectNow(fault);
    const turn = this.exclusive.then(() => this.injectNow(fault));
    this.exclusive = turn.catch(() => {});
    return turn;
  }

  private async injectNow(planned: PlannedFault): Promise<void> {
    const fault: InjectedFault = { ...planned, startedAt: Date.now() };
    this.injected.push(fault);
    const c = this.cluster;
    switch (fault.kind) {
      case 'SIGKILL a worker, restart': {
        // A worker takes long to start on a busy machine: the next kill does not wait for the
        // restart, it takes a worker that is up (both may be down at once, as in production).
        for (let waited = 0; !c.workers.some((w) => w.running && w.ready && !w.paused) && waited < 120_000; waited += 200) await sleep(200);
        const up = c.workers.filter((w) => w.running && w.ready && !w.paused);
        if (up.length === 0) {
          fault.note = 'skipped: no worker was up for two minutes';
          return;
        }
        const worker = this.random.pick(up);
        fault.target = worker.name;
        await worker.kill();
        const restarted = sleep(this.random.int(200, 3000))
          .then(() => timedStart(worker, fault))
          .then(() => {
            fault.endedAt = Date.now();
          });
        this.pending.push(
          restarted.then(
            () => this.measureRecovery(fault),
            (err: unknown) => {
              fault.note = `restart failed: ${(err as Error).message}`;
            },
          ),
        );
        return;
      }
      case 'SIGKILL the API mid-request, restart': {
        const inFlight = await this.whenApiBusy();
        fault.note = inFlight ? 'a create in flight' : 'no request seen in flight';
        await c.api.kill();
        await sleep(500);
        await timedStart(c.api, fault);
        break;
      }
      case 'SIGKILL the media edge with calls talking, restart': {
        for (let waited = 0; this.liveBrowserCalls === 0 && waited < 60_000; waited += 500) await sleep(500);
        fault.note = `${this.liveBrowserCalls} browser call(s) talking`;
        const now = Date.now();
        for (const call of this.ledger.browserCalls) if (call.endedAt === undefined && call.startedAt <= now) call.edgeKilled = true;
        await c.edge.kill();
        await sleep(2000);
        await timedStart(c.edge, fault);
        break;
      }
      case 'restart the Temporal dev server': {
        await c.stopTemporal();
        // Down from its exit until it is started again: while it starts, its frontend answers
        // before the namespace is ready, so health may rightly say ok then.
        const from = Date.now();
        await sleep(TEMPORAL_DOWN_MS);
        this.outages.push({ part: 'temporal', from, to: Date.now() });
        await c.startTemporal();
        break;
      }
      case 'restart Postgres': {
        const from = Date.now();
        await c.stopPostgres();
        await sleep(POSTGRES_DOWN_MS);
        this.outages.push({ part: 'database', from, to: Date.now() });
        await c.startPostgres();
        break;
      }
      case 'stop Redis for 30 s': {
        const from = Date.now();
        await c.redis.kill();
        await sleep(REDIS_DOWN_MS);
        this.outages.push({ part: 'redis', from, to: Date.now() });
        await c.redis.start();
        break;
      }
      case 'SIGSTOP a worker past the heartbeat timeouts': {
        // Both workers may be between a kill and their restart: wait for a process to stop.
        for (let waited = 0; !c.workers.some((w) => w.running && !w.paused) && waited < 120_000; waited += 200) await sleep(200);
        const running = c.workers.filter((w) => w.running && !w.paused);
        if (running.length === 0) {
          fault.note = 'skipped: no worker process was running for two minutes';
          return;
        }
        const worker = this.random.pick(running);
        fault.target = worker.name;
        worker.pause();
        await sleep(PAUSE_MS);
        worker.resume();
        break;
      }
      case 'webhook receiver answers 500 for a minute': {
        c.receiver.failFor(WEBHOOK_FAIL_MS);
        await sleep(WEBHOOK_FAIL_MS);
        break;
      }
    }
    fault.endedAt = Date.now();
    this.pending.push(this.measureRecovery(fault));
  }

  /** Waits (up to 3 s) for a moment when a create is in flight, so the kill lands mid-request. */
  private async whenApiBusy(): Promise<boolean> {
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      const last = this.ledger.exchanges.at(-1);
      if (last && Date.now() - last.at < 100) return true;
      await sleep(20);
    }
    return false;
  }

  /** A canary call (answered, ~3 s) created once the fault is over; its end marks the recovery. */
  private async measureRecovery(fault: InjectedFault): Promise<void> {
    const seq = (this.canarySeq += 1);
    const to = `+1919${200 + (seq % 800)}9${String(seq).padStart(3, '0').slice(-3)}`;
    const deadline = Math.min(fault.endedAt! + 600_000, this.giveUpAt);
    let callId: string | undefined;
    while (!callId && Date.now() < deadline) {
      const created = await this.api.request('create-phone-call (canary)', 'POST', '/api/v1/create-phone-call', {
        key: this.canaryTeam.key,
        body: { from_number: this.canaryTeam.from, script_id: this.canaryTeam.scriptId, contact: { phone_number: to, first_name: 'Canary', last_name: String(seq) } },
        headers: { 'Idempotency-Key': `canary-${seq}` },
      });
      if (typeof created.status === 'number' && created.status < 300) callId = created.json.call_id as string;
      else await sleep(500);
    }
    while (callId && Date.now() < deadline) {
      const status = await this.api.request('get-call-status (canary)', 'GET', `/api/v1/get-call-status/${callId}`, { key: this.canaryTeam.key });
      const s = typeof status.status === 'number' && status.status < 300 ? (status.json?.call?.status as string | undefined) : undefined;
      if (s && s !== 'scheduled' && s !== 'in-progress') {
        fault.recoveryMs = Date.now() - fault.endedAt!;
        return;
      }
      await sleep(250);
    }
  }
}
