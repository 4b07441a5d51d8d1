// The slot dispatcher's SQL (src/db/repositories/concurrencySlots.ts) over the test database:
// first come first served along the line, the exact ceiling under concurrency, a release
// handing the slot to exactly the next call, dead slots reclaimed, the count kept.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import {
  countedSlots,
  countLiveSlots,
  grantFreeSlots,
  releaseSlot,
  releaseSlotAndGrant,
  requestCallSlot,
  tryAcquireSessionSlot,
} from '../../src/db/repositories/concurrencySlots.js';
import { testPool } from '../support/app.js';
import { insertCallRowTeam, insertPhoneCalls, type CallRowTeam } from '../support/callRows.js';

let pool: Pool;

before(async () => {
  pool = await testPool();
});

after(async () => {
  await pool.end();
});

const team = (maxConcurrent: number) => insertCallRowTeam(pool, maxConcurrent);

/** `n` phone calls of the team scheduled at `at` (default: a minute ago), in creation order. */
const calls = (t: CallRowTeam, n: number, at?: Date) => insertPhoneCalls(pool, t, n, { at });

async function end(callId: string): Promise<void> {
  await pool.query(`UPDATE calls SET status = 'completed', end_reason = 'agent_hangup', end_time = now(), progress = 'analysing' WHERE id = $1`, [callId]);
}

async function start(callId: string): Promise<void> {
  await pool.query(`UPDATE calls SET status = 'in-progress', actual_time = now(), progress = 'dialling' WHERE id = $1 AND status = 'scheduled'`, [callId]);
}

const progressOf = async (callId: string) => (await pool.query<{ progress: string }>('SELECT progress FROM calls WHERE id = $1', [callId])).rows[0].progress;

/** The count team_slots keeps equals the rows it counts. */
async function assertCounted(teamId: string): Promise<void> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM concurrency_slots WHERE team_id = $1', [teamId]);
  assert.equal(await countedSlots(pool, teamId), rows[0].n, 'team_slots.in_use counts the rows');
}

describe('slot dispatcher', () => {
  test('free slots go to the line in order, ahead of a call whose workflow asks first; the rest wait', async () => {
    const t = await team(2);
    const [a, b, c, d] = await calls(t, 4);
    // c asks before a and b: the two free slots go to the calls ahead of it, and c waits.
    const asked = await requestCallSlot(pool, t.id, c);
    assert.equal(asked.outcome, 'waiting');
    assert.deepEqual(asked.woken, [], 'a and b had not asked: nobody to wake');
    assert.equal(await progressOf(c), 'waiting_for_slot');
    assert.equal((await requestCallSlot(pool, t.id, a)).outcome, 'granted', 'a holds the slot it was granted');
    assert.equal((await requestCallSlot(pool, t.id, b)).outcome, 'granted');
    assert.equal((await requestCallSlot(pool, t.id, d)).outcome, 'waiting');
    assert.equal(await countLiveSlots(pool, t.id), 2);
    await assertCounted(t.id);
  });

  test('a release hands the slot to exactly the next call in line and names it only if it waits', async () => {
    const t = await team(2);
    const [a, b, c, d, e] = await calls(t, 5);
    for (const id of [a, b, c, d]) await requestCallSlot(pool, t.id, id);
    await start(a);
    await start(b);
    await end(a);
    assert.deepEqual((await releaseSlotAndGrant(pool, a)).woken, [c], 'c, first in line, is granted and woken');
    assert.equal((await requestCallSlot(pool, t.id, c)).outcome, 'granted');
    await start(c);
    await end(b);
    assert.deepEqual((await releaseSlotAndGrant(pool, b)).woken, [d]);
    await start(d);
    // e never asked: it is granted on release but not woken; it finds its slot when it asks.
    await end(c);
    assert.deepEqual((await releaseSlotAndGrant(pool, c)).woken, []);
    assert.equal((await requestCallSlot(pool, t.id, e)).outcome, 'granted');
    assert.deepEqual((await releaseSlotAndGrant(pool, c)).woken, [], 'a second release of the same holder changes nothing');
    assert.equal(await countLiveSlots(pool, t.id), 2);
    await assertCounted(t.id);
  });

  test('the line is due calls in order of scheduled time, then creation; a call not yet due is not granted ahead', async () => {
    const t = await team(1);
    const [later] = await calls(t, 1, new Date(Date.now() - 1000));
    const [earlier] = await calls(t, 1, new Date(Date.now() - 60_000));
    const [future] = await calls(t, 1, new Date(Date.now() + 3600_000));
    assert.equal((await requestCallSlot(pool, t.id, later)).outcome, 'waiting', 'the earlier call got the slot');
    assert.equal((await requestCallSlot(pool, t.id, earlier)).outcome, 'granted');
    await end(earlier);
    assert.deepEqual((await releaseSlotAndGrant(pool, earlier)).woken, [later]);
    await end(later);
    assert.deepEqual((await releaseSlotAndGrant(pool, later)).woken, [], 'the future call is not in line yet');
    // Its workflow asks when its own clock says it is due (a time-skipping test): it is served.
    assert.equal((await requestCallSlot(pool, t.id, future)).outcome, 'granted');
  });

  test('a call cancelled after its grant gives the slot to the next call when it asks', async () => {
    const t = await team(1);
    const [a, b] = await calls(t, 2);
    assert.equal((await requestCallSlot(pool, t.id, a)).outcome, 'granted');
    assert.equal((await requestCallSlot(pool, t.id, b)).outcome, 'waiting');
    await pool.query(`UPDATE calls SET status = 'cancelled', progress = 'done' WHERE id = $1`, [a]);
    const again = await requestCallSlot(pool, t.id, a);
    assert.deepEqual([again.outcome, again.status, again.woken], ['not_scheduled', 'cancelled', [b]]);
    await assertCounted(t.id);
  });

  test('dead slots (an expired session, a call that ended without releasing) are reclaimed when the team is full', async () => {
    const t = await team(2);
    const session = randomUUID();
    assert.equal((await tryAcquireSessionSlot(pool, t.id, session, new Date(Date.now() + 60_000))).granted, true);
    const [a, b, c] = await calls(t, 3);
    assert.equal((await requestCallSlot(pool, t.id, a)).outcome, 'granted');
    assert.equal((await requestCallSlot(pool, t.id, b)).outcome, 'waiting');
    await pool.query(`UPDATE concurrency_slots SET expires_at = now() - interval '1 second' WHERE holder_id = $1`, [session]);
    await end(a);
    // Nobody released anything: the next request finds the team full, reclaims both and is served in order.
    assert.equal((await requestCallSlot(pool, t.id, c)).outcome, 'granted');
    assert.equal((await requestCallSlot(pool, t.id, b)).outcome, 'granted', 'b, ahead of c, was granted on the way');
    assert.equal(await countLiveSlots(pool, t.id), 2);
    await assertCounted(t.id);
    assert.equal(await releaseSlot(pool, session), undefined, 'the expired session holds nothing any more');
  });

  test('a raised ceiling is handed out by grantFreeSlots, first in line first', async () => {
    const t = await team(1);
    const [a, b, c] = await calls(t, 3);
    for (const id of [a, b, c]) await requestCallSlot(pool, t.id, id);
    await pool.query('UPDATE teams SET max_concurrent = 3 WHERE id = $1', [t.id]);
    assert.deepEqual(await grantFreeSlots(pool, t.id), [b, c]);
    assert.deepEqual(await grantFreeSlots(pool, t.id), []);
    await assertCounted(t.id);
  });

  test('exact under concurrency: forty requests, sessions and releases at once never pass a ceiling of five, and the count stays exact', async () => {
    const t = await team(5);
    const ids = await calls(t, 40);
    const results = await Promise.all(ids.map((id) => requestCallSlot(pool, t.id, id)));
    assert.equal(results.filter((r) => r.outcome === 'granted').length, 5);
    assert.deepEqual(
      results.flatMap((r, i) => (r.outcome === 'granted' ? [i] : [])),
      [0, 1, 2, 3, 4],
      'the first five in line',
    );
    // Churn: every granted call ends and releases while sessions try to get in and the rest ask again.
    for (let round = 0; round < 8; round++) {
      const holders = (await pool.query<{ call_id: string }>(`SELECT call_id FROM concurrency_slots WHERE team_id = $1 AND kind = 'call'`, [t.id])).rows.map((r) => r.call_id);
      for (const id of holders) await end(id);
      const ops: Promise<unknown>[] = [
        ...holders.map((id) => releaseSlotAndGrant(pool, id)),
        ...ids.map((id) => requestCallSlot(pool, t.id, id)),
        ...Array.from({ length: 3 }, () => tryAcquireSessionSlot(pool, t.id, randomUUID(), new Date(Date.now() - 1))),
      ];
      await Promise.all(ops);
      assert.ok((await countLiveSlots(pool, t.id)) <= 5, 'never above the ceiling');
      await assertCounted(t.id);
      assert.ok((await countedSlots(pool, t.id)) <= 5);
    }
  });
});
