// The promises the chaos run checks at its end (issue 26, docs/reliability.md), each with
// the count it was checked over and, when broken, what broke it. They read the database,
// the workflow histories, the simulator's dial records and the webhook receiver's log,
// against the ledger of what the public API answered.
import type { Client } from '@temporalio/client';
import type { Pool } from '../src/db/pool.js';
import { callWorkflowId } from '../workflows/contracts.js';
import type { Cluster } from './cluster.js';
import type { FaultInjector } from './faults.js';
import type { Ledger } from './ledger.js';

export interface InvariantResult {
  name: string;
  held: boolean;
  /** What it was checked over ("412 calls"). */
  count: string;
  /** The first few violations. */
  broken: string[];
}

/**
 * A call must reach its terminal status within this long of its due time (or creation, if
 * later): on a busy two-core machine a worker takes a minute to restart, and calls due while
 * both are down wait for them.
 */
export const CALL_END_BOUND_SECONDS = 600;

const TERMINAL = new Set(['completed', 'voicemail', 'dropout', 'hang-up', 'rang-out', 'failed', 'cancelled', 'User rejected', 'User unavailable']);

function result(name: string, count: string, broken: string[]): InvariantResult {
  return { name, held: broken.length === 0, count, broken: broken.slice(0, 5).concat(broken.length > 5 ? [`… and ${broken.length - 5} more`] : []) };
}

interface CallRow {
  id: string;
  type: string;
  status: string;
  end_reason: string | null;
  to_number: string | null;
  end_time: Date | null;
  late_seconds: number | null;
  system_notes: Array<{ kind?: string; text?: string }>;
}

/**
 * What is wrong with how a browser call ended whose media edge was killed while it was live, if
 * anything: it ends dropout with a System Note, or, when its script had already run to its end
 * (only the agent's hang-up was left), completed with a note that the hang-up did not reach, or,
 * when the edge died before the call connected (the caller dialled, no media yet), failed /
 * not_connected, as any web call the edge never answers.
 */
export function endAfterEdgeKilled(c: Pick<CallRow, 'id' | 'status' | 'system_notes'> & Partial<Pick<CallRow, 'end_reason'>>): string | undefined {
  const notes = c.system_notes ?? [];
  if (c.status === 'failed' && c.end_reason === 'not_connected') return undefined;
  if (c.status === 'completed' && notes.some((n) => n.kind === 'media' && /hang-up did not reach/.test(n.text ?? ''))) return undefined;
  if (c.status !== 'dropout') return `browser call ${c.id} whose edge was killed ended ${c.status}`;
  if (notes.length === 0) return `browser call ${c.id} ended dropout without a System Note`;
  return undefined;
}

export async function checkInvariants(pool: Pool, temporal: Client, teamIds: string[], ledger: Ledger, cluster: Cluster, faults: FaultInjector): Promise<{ results: InvariantResult[]; maxEndSeconds: number }> {
  const results: InvariantResult[] = [];
  const { rows: calls } = await pool.query<CallRow>(
    `SELECT id, type, status, end_reason, to_number, end_time, system_notes,
            extract(epoch FROM end_time - greatest(scheduled_time, created_at))::float AS late_seconds
       FROM calls WHERE team_id = ANY($1)`,
    [teamIds],
  );
  const byId = new Map(calls.map((c) => [c.id, c]));
  let maxEndSeconds = 0;

  // Calls end once: terminal, within the bound, the workflow closed, and every call.ended
  // the receiver got carries the final status.
  {
    const broken: string[] = [];
    const endedStatus = new Map<string, Set<string>>();
    for (const r of cluster.receiver.received) if (r.type === 'call.ended' && r.callId && r.callStatus) endedStatus.set(r.callId, (endedStatus.get(r.callId) ?? new Set()).add(r.callStatus));
    const open: string[] = [];
    for (const c of calls) {
      if (!TERMINAL.has(c.status)) open.push(c.id);
      else if ((c.late_seconds ?? 0) > CALL_END_BOUND_SECONDS) broken.push(`call ${c.id} ended ${c.late_seconds?.toFixed(0)} s after it was due`);
      maxEndSeconds = Math.max(maxEndSeconds, c.late_seconds ?? 0);
      const seen = endedStatus.get(c.id);
      if (seen && (seen.size > 1 || !seen.has(c.status))) broken.push(`call ${c.id} ended as ${[...seen].join(' and ')} (final ${c.status})`);
    }
    for (const id of open) broken.push(`call ${id} is still ${byId.get(id)!.status}`);
    const stillRunning = await mapLimit(calls, 8, async (c) => {
      try {
        const d = await temporal.workflow.getHandle(callWorkflowId(c.id)).describe();
        return d.status.name === 'RUNNING' ? c.id : undefined;
      } catch {
        return undefined;
      }
    });
    // A workflow still finishing its last steps (the row is terminal) gets half a minute.
    let running = stillRunning.filter((id): id is string => !!id);
    for (let i = 0; i < 15 && running.length; i++) {
      await new Promise((r) => setTimeout(r, 2000));
      const again = await mapLimit(running, 8, async (id) => {
        const d = await temporal.workflow.getHandle(callWorkflowId(id)).describe().catch(() => undefined);
        return d?.status.name === 'RUNNING' ? id : undefined;
      });
      running = again.filter((id): id is string => !!id);
    }
    for (const id of running) broken.push(`the workflow of call ${id} is still running`);
    results.push(result('Calls end once', `${calls.length} calls (every one of the two teams), longest ${maxEndSeconds.toFixed(0)} s from due to end (bound ${CALL_END_BOUND_SECONDS} s)`, broken));
  }

  // Browser calls whose edge was killed end dropout with a System Note; their slots are free (checked under Slots too).
  {
    const { rows: sessions } = await pool.query<{ id: string; call_id: string | null }>('SELECT id, call_id FROM web_sessions WHERE team_id = ANY($1)', [teamIds]);
    const callOfSession = new Map(sessions.map((s) => [s.id, s.call_id]));
    const broken: string[] = [];
    let killed = 0;
    for (const b of ledger.browserCalls) {
      b.callId = callOfSession.get(b.sessionId) ?? undefined;
      if (!b.edgeKilled || !b.callId) continue;
      killed += 1;
      const c = byId.get(b.callId);
      const why = c ? endAfterEdgeKilled(c) : `browser call ${b.callId} has no row`;
      if (why) broken.push(why);
    }
    const outcomes = new Map<string, number>();
    for (const b of ledger.browserCalls) {
      const outcome = (b.outcome ?? 'unfinished').replace(/^error: .*/, 'error');
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    const seen = [...outcomes].map(([o, n]) => `${n} ${o}`).join(', ');
    results.push(result('Browser calls end cleanly', `${ledger.browserCalls.length} browser calls (${seen || 'none'}), ${killed} with their edge killed${killed === 0 ? ' (not exercised: no browser call was talking when the edge was killed)' : ''}`, broken));
  }

  // No double dial: each call id dialled at most once, numbers on the do-not-call list never.
  {
    const dials = new Map<string, number>();
    for (const d of cluster.dials) dials.set(d.callId, (dials.get(d.callId) ?? 0) + 1);
    const broken = [...dials].filter(([, n]) => n > 1).map(([id, n]) => `call ${id} dialled ${n} times`);
    for (const c of calls) if (c.to_number && ledger.doNotCall.has(c.to_number) && dials.has(c.id)) broken.push(`call ${c.id} to a do-not-call number was dialled`);
    results.push(result('No double dial', `${cluster.dials.length} dials of ${dials.size} calls`, broken));
  }

  // Slots: never above the ceiling at a sample, none live at the end.
  {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM concurrency_slots s WHERE s.team_id = ANY($1) AND (
         (s.kind = 'session' AND s.expires_at > clock_timestamp())
         OR (s.kind = 'call' AND EXISTS (SELECT 1 FROM calls c WHERE c.id = s.call_id AND c.status IN ('scheduled', 'in-progress'))))`,
      [teamIds],
    );
    const broken: string[] = [];
    if (ledger.slotOverruns > 0) broken.push(`${ledger.slotOverruns} samples saw more live slots than max_concurrent`);
    if (rows[0].n > 0) broken.push(`${rows[0].n} slots still live at the end`);
    results.push(result('Slots', `${ledger.slotSamples} samples, at most ${ledger.maxSlots} live at once`, broken));
  }

  // Idempotency: one call per key.
  {
    const broken: string[] = [];
    const numbers = [...ledger.idempotent.values()].map((e) => e.toNumber);
    const { rows } = await pool.query<{ to_number: string; n: number }>('SELECT to_number, count(*)::int AS n FROM calls WHERE team_id = ANY($1) AND to_number = ANY($2) GROUP BY to_number', [teamIds, numbers]);
    const perNumber = new Map(rows.map((r) => [r.to_number, r.n]));
    for (const [key, e] of ledger.idempotent) {
      if (new Set(e.callIds).size > 1) broken.push(`Idempotency-Key ${key} answered ${new Set(e.callIds).size} different calls`);
      if ((perNumber.get(e.toNumber) ?? 0) > 1) broken.push(`Idempotency-Key ${key} made ${perNumber.get(e.toNumber)} calls`);
    }
    const retried = [...ledger.idempotent.values()].reduce((a, e) => a + e.callIds.length, 0);
    results.push(result('Idempotency', `${ledger.idempotent.size} keys, ${retried} 2xx answers`, broken));
  }

  // Hooks: each accepted delivery id ran once (one run id, one claim, one call).
  {
    const broken: string[] = [];
    const numbers = [...ledger.hookDeliveries.values()].map((e) => e.toNumber);
    const { rows } = await pool.query<{ to_number: string; n: number }>('SELECT to_number, count(*)::int AS n FROM calls WHERE team_id = ANY($1) AND to_number = ANY($2) GROUP BY to_number', [teamIds, numbers]);
    const perNumber = new Map(rows.map((r) => [r.to_number, r.n]));
    const { rows: claims } = await pool.query<{ delivery_id: string; n: number }>('SELECT delivery_id, count(*)::int AS n FROM hook_deliveries WHERE delivery_id = ANY($1) GROUP BY delivery_id', [[...ledger.hookDeliveries.keys()]]);
    const perDelivery = new Map(claims.map((r) => [r.delivery_id, r.n]));
    for (const [id, e] of ledger.hookDeliveries) {
      if (e.runIds.size !== 1) broken.push(`delivery ${id} answered ${e.runIds.size} run ids`);
      if (perDelivery.get(id) !== 1) broken.push(`delivery ${id} has ${perDelivery.get(id) ?? 0} claims`);
      if (perNumber.get(e.toNumber) !== 1) broken.push(`delivery ${id} made ${perNumber.get(e.toNumber) ?? 0} calls`);
    }
    results.push(result('Hooks', `${ledger.hookDeliveries.size} accepted delivery ids`, broken));
  }

  // Web sessions: each ended used or expired; no token redeemed twice (one web call per used session, no web call without one).
  {
    const { rows: sessions } = await pool.query<{ id: string; status: string; call_id: string | null }>('SELECT id, status, call_id FROM web_sessions WHERE team_id = ANY($1)', [teamIds]);
    const broken: string[] = [];
    for (const s of sessions) if (s.status !== 'used' && s.status !== 'expired') broken.push(`session ${s.id} is still ${s.status}`);
    const sessionCalls = new Set(sessions.map((s) => s.call_id).filter(Boolean));
    const webCalls = calls.filter((c) => c.type === 'web');
    for (const c of webCalls) if (!sessionCalls.has(c.id)) broken.push(`web call ${c.id} belongs to no session (a token redeemed twice?)`);
    const used = sessions.filter((s) => s.status === 'used').length;
    if (webCalls.length !== used) broken.push(`${webCalls.length} web calls for ${used} used sessions`);
    results.push(result('Web sessions', `${sessions.length} sessions (${used} used, ${sessions.filter((s) => s.status === 'expired').length} expired)`, broken));
  }

  // Event webhooks: every event delivered (a 200) at least once; one id per event.
  {
    const { rows: events } = await pool.query<{ id: string; type: string; call_id: string | null }>('SELECT id, type, call_id FROM webhook_events WHERE team_id = ANY($1)', [teamIds]);
    const delivered = new Set(cluster.receiver.received.filter((r) => r.status === 200).map((r) => r.id));
    const broken: string[] = [];
    for (const e of events) if (!delivered.has(e.id)) broken.push(`event ${e.id} (${e.type}) never reached the receiver`);
    const idsOf = new Map<string, Set<string>>();
    for (const r of cluster.receiver.received) if (r.callId) idsOf.set(`${r.type} ${r.callId}`, (idsOf.get(`${r.type} ${r.callId}`) ?? new Set()).add(r.id));
    for (const [what, ids] of idsOf) if (ids.size > 1) broken.push(`${what} arrived under ${ids.size} ids`);
    const repeats = cluster.receiver.received.length - delivered.size;
    results.push(result('Event webhooks', `${events.length} events, ${cluster.receiver.received.length} requests received (${repeats} repeats or failures)`, broken));
  }

  // API: no 500; 503s shaped and with Retry-After; health degraded naming the part in each outage.
  {
    const broken: string[] = [];
    const answered = ledger.exchanges.filter((x) => x.status !== 'no-answer');
    for (const x of answered) {
      if (x.status === 500) broken.push(`${x.method} ${x.path} (${x.kind}) answered 500: ${x.message}`);
      if (x.status === 503 && !x.retryAfter && x.kind !== 'health') broken.push(`${x.method} ${x.path} answered 503 without Retry-After`);
      if (!x.errorShaped && x.kind !== 'health') broken.push(`${x.method} ${x.path} answered ${x.status} without { success: false, message }`);
    }
    for (const o of faults.outages) {
      const samples = ledger.health.filter((h) => h.at >= o.from && h.at <= o.to && h.status !== 'no-answer');
      if (samples.length > 0 && !samples.some((h) => h.state === 'degraded' && h.checks?.[o.part] === 'down')) broken.push(`health never said degraded with ${o.part} down during its outage (${samples.length} samples)`);
    }
    const status = (n: number) => answered.filter((x) => x.status === n).length;
    const unanswered = ledger.exchanges.length - answered.length;
    results.push(result('API', `${ledger.exchanges.length} requests: ${status(503)} answered 503, ${unanswered} unanswered (the API killed or stopped), ${faults.outages.length} outages`, broken));
  }

  // Writes: every 2xx is in the database.
  {
    const broken: string[] = [];
    for (const [id, c] of ledger.calls) if (!byId.has(id)) broken.push(`call ${id} (${c.via}) answered 2xx is not in the database`);
    const { rows: members } = await pool.query<{ phone_number: string }>(
      'SELECT c.phone_number FROM list_contacts l JOIN contacts c ON c.id = l.contact_id WHERE l.list_id = (SELECT id FROM lists WHERE team_id = ANY($1) ORDER BY created_at LIMIT 1)',
      [teamIds],
    );
    const inList = new Set(members.map((m) => m.phone_number));
    for (const n of ledger.listContacts) if (!inList.has(n)) broken.push(`list contact ${n} answered 2xx is not in the list`);
    const { rows: dnc } = await pool.query<{ phone_number: string }>('SELECT phone_number FROM do_not_call WHERE team_id = ANY($1)', [teamIds]);
    const onList = new Set(dnc.map((d) => d.phone_number));
    for (const n of ledger.doNotCall) if (!onList.has(n)) broken.push(`do-not-call ${n} answered 2xx is not on the list`);
    results.push(result('Writes', `${ledger.calls.size} calls, ${ledger.listContacts.length} list contacts, ${ledger.doNotCall.size} do-not-call numbers answered 2xx`, broken));
  }
  return { results, maxEndSeconds };
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}
