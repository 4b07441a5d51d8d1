/**
 * The worker's gauges of state kept in Postgres (docs/observability.md): slots in use and
 * calls waiting per team, and the progress of the batches still going. Read from the
 * database when scraped, so they are right whichever worker or API changed them; served by
 * the worker only (one reader of the shared state, not one per process). Also this worker's
 * own admission pace: its pacer's rate and its live calls' timer lateness.
 */
import { Gauge, Histogram, Registry } from 'prom-client';
import { activeBatchProgress } from '../db/repositories/batches.js';
import { liveSlotsByTeam, waitingCallsByTeam } from '../db/repositories/concurrencySlots.js';
import type { Queryable } from '../db/pool.js';

export const workerRegistry = new Registry();
const registers = [workerRegistry];

/** The database the gauges read; set by watchDatabase. */
let database: Queryable | undefined;

/** The pool the worker's gauges read from (the last one given). */
export function watchDatabase(pool: Queryable): void {
  database = pool;
}

/** Batch contact states always shown, so a dashboard sees 0 rather than no series. */
const BATCH_STATES = ['pending', 'calling', 'skipped', 'done'] as const;

export const slotsInUse = new Gauge({
  name: 'voice_agent_call_slots_in_use',
  help: "Live concurrency slots per team (calls and web sessions under teams.max_concurrent); teams holding none are absent.",
  labelNames: ['team_id'] as const,
  registers,
  async collect() {
    this.reset();
    if (!database) return;
    for (const row of await liveSlotsByTeam(database)) this.set({ team_id: row.team_id }, row.n);
  },
});

export const callsWaiting = new Gauge({
  name: 'voice_agent_calls_waiting_for_slot',
  help: 'Due phone calls per team waiting in line for a concurrency slot; teams with none waiting are absent.',
  labelNames: ['team_id'] as const,
  registers,
  async collect() {
    this.reset();
    if (!database) return;
    for (const row of await waitingCallsByTeam(database)) this.set({ team_id: row.team_id }, row.n);
  },
});

/** One query for both batch gauges per scrape. */
let batchRead: Promise<Awaited<ReturnType<typeof activeBatchProgress>>> | undefined;
function readBatches(db: Queryable) {
  batchRead ??= activeBatchProgress(db).finally(() => setImmediate(() => (batchRead = undefined)));
  return batchRead;
}

export const activeBatches = new Gauge({
  name: 'voice_agent_batches_active',
  help: 'Batches scheduled, running or paused.',
  registers,
  async collect() {
    this.set(database ? (await readBatches(database)).batches : 0);
  },
});

export const batchContacts = new Gauge({
  name: 'voice_agent_batch_contacts',
  help: 'Contacts of the active batches by state: pending, calling, skipped, done (batch progress).',
  labelNames: ['state'] as const,
  registers,
  async collect() {
    this.reset();
    const contacts = database ? (await readBatches(database)).contacts : {};
    for (const state of BATCH_STATES) this.set({ state }, contacts[state] ?? 0);
  },
});

export const admissionRate = new Gauge({
  name: 'voice_agent_admission_rate_per_second',
  help: "Due phone calls this worker's admission pacer admits a second now: ADMISSION_RATE_PER_SECOND, lowered while the live calls' workflow tasks wait to start.",
  registers,
});

export const liveTimerLateness = new Histogram({
  name: 'voice_agent_live_timer_lateness_seconds',
  help: 'How late the timers of calls on the live-call task queue fired (from when the workflow set them to when it saw them fire).',
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers,
});
