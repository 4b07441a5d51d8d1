// The admission line's SQL (migration 1600_admission_line.sql, src/db/repositories/
// concurrencySlots.ts) over the test database: the pacer's step hands free slots to the head
// of the line in order and never past the ceiling, the longest-waiting team first, the head
// first with thousands in line, a release hands on only the slot it freed, and the calls
// sleeping in the line are the ones named to wake.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { admissionLineTeams, admitFromLine, countedSlots, countLiveSlots, releaseSlotAndGrant, requestCallSlot, teamsWithWaitingCalls, waitingCallsByTeam } from '../../src/db/repositories/concurrencySlots.js';
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

async function end(callId: string): Promise<void> {
  await pool.query(`UPDATE calls SET status = 'completed', end_reason = 'agent_hangup', end_time = now(), progress = 'analysing' WHERE id = $1`, [callId]);
}

/** The teams the pacer would serve, in its order, among `ours` (the lane's database holds other files' rows too). */
async function lineTeams(ours: string[]): Promise<string[]> {
  return (await admissionLineTeams(pool, 100_000)).filter((t) => ours.includes(t));
}

/** `n` calls of the team due at one instant, written in one statement (a campaign falling due), in line order. */
async function bulkDue(t: CallRowTeam, n: number, at: Date): Promise<string[]> {
  const { rows: contact } = await pool.query<{ id: string }>(
    `INSERT INTO contacts (team_id, phone_number, first_name) VALUES ($1, '+14155550199', 'Line') RETURNING id`,
    [t.id],
  );
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO calls (id, team_id, contact_id, script_id, type, from_number, to_number, scheduled_time, progress, wakes_on_grant)
     SELECT gen_random_uuid(), $1, $2, $3, 'outbound', '+12125550100', '+14155550199', $4, 'waiting_for_scheduled_time', true
       FROM generate_series(1, $5)
     RETURNING id, seq`,
    [t.id, contact[0].id, t.scriptId, at, n],
  );
  return (rows as unknown as { id: string; seq: string }[]).sort((a, b) => Number(a.seq) - Number(b.seq)).map((r) => r.id);
}

describe('admission line', () => {
  test('a step hands free slots to the head of the line in order, at most its limit, never past the ceiling', async () => {
    const t = await team(5);
    const line = await insertPhoneCalls(pool, t, 8, { at: new Date(Date.now() - 60_000), wakesOnGrant: true });
    const [future] = await insertPhoneCalls(pool, t, 1, { at: new Date(Date.now() + 3600_000), wakesOnGrant: true });
    const first = await admitFromLine(pool, t.id, 2);
    assert.deepEqual(first.granted, line.slice(0, 2), 'the first two in line');
    assert.deepEqual(first.woken, line.slice(0, 2), 'both sleep in the line: both are woken');
    assert.deepEqual((await admitFromLine(pool, t.id, 2)).granted, line.slice(2, 4));
    assert.deepEqual((await admitFromLine(pool, t.id, 10)).granted, line.slice(4, 5), 'one slot was left under the ceiling of five');
    assert.deepEqual((await admitFromLine(pool, t.id, 10)).granted, []);
    assert.deepEqual(await lineTeams([t.id]), [], 'a team with no free slot is not served');
    assert.equal(await countLiveSlots(pool, t.id), 5);
    assert.equal(await countedSlots(pool, t.id), 5);
    const row = await pool.query<{ slot_granted_at: Date | null }>('SELECT slot_granted_at FROM calls WHERE id = $1', [future]);
    assert.equal(row.rows[0].slot_granted_at, null, 'a call not yet due is not in line');
  });

  test('the team whose head has waited longest is served first; a team without due calls not at all', async () => {
    const late = await team(3);
    const early = await team(3);
    const notDue = await team(3);
    await insertPhoneCalls(pool, late, 2, { at: new Date(Date.now() - 10_000) });
    await insertPhoneCalls(pool, early, 2, { at: new Date(Date.now() - 50_000) });
    await insertPhoneCalls(pool, notDue, 2, { at: new Date(Date.now() + 60_000) });
    assert.deepEqual(await lineTeams([late.id, early.id, notDue.id]), [early.id, late.id]);
  });

  test('with 3,000 calls due at one instant under a ceiling of 100, the first 100 in line are admitted, and no other', async () => {
    const t = await team(100);
    const line = await bulkDue(t, 3000, new Date(Date.now() - 1000));
    const admitted = await admitFromLine(pool, t.id, 1000);
    assert.deepEqual(admitted.granted, line.slice(0, 100), 'the head of the line, in order');
    assert.deepEqual(admitted.woken, line.slice(0, 100));
    // A call far back in line whose own timer fired asks: no slot is left, it waits.
    const asked = await requestCallSlot(pool, t.id, line[2999]);
    assert.deepEqual([asked.outcome, asked.woken], ['waiting', []]);
    const { rows } = await pool.query<{ id: string }>('SELECT id FROM calls WHERE team_id = $1 AND slot_granted_at IS NOT NULL ORDER BY seq', [t.id]);
    assert.deepEqual(
      rows.map((r) => r.id),
      line.slice(0, 100),
    );
    assert.equal(await countedSlots(pool, t.id), 100);
  });

  test('a release hands on only the slot it freed; the other free slots are left to the pacer, in order', async () => {
    const t = await team(10);
    const [a] = await insertPhoneCalls(pool, t, 1, { at: new Date(Date.now() - 60_000) });
    assert.equal((await requestCallSlot(pool, t.id, a)).outcome, 'granted');
    const [b, c, d] = await insertPhoneCalls(pool, t, 3, { at: new Date(Date.now() - 30_000), wakesOnGrant: true });
    await end(a);
    assert.deepEqual((await releaseSlotAndGrant(pool, a)).woken, [b], 'b, sleeping in the line, is granted and woken; c and d wait for the pacer');
    assert.deepEqual((await admitFromLine(pool, t.id, 10)).woken, [c, d]);
    assert.equal(await countedSlots(pool, t.id), 3);
  });

  test('a call that asks itself while calls sleeping in the line are due ahead of it waits behind them: no burst of grants, and the pacer reaches it in order', async () => {
    const t = await team(50);
    const sleeping = await insertPhoneCalls(pool, t, 5, { at: new Date(Date.now() - 30_000), wakesOnGrant: true });
    const [asks] = await insertPhoneCalls(pool, t, 1, { at: new Date(Date.now() - 1000) });
    const asked = await requestCallSlot(pool, t.id, asks);
    assert.deepEqual([asked.outcome, asked.woken], ['waiting', []], 'nothing granted on its way: the free slots are the pacer to hand out');
    assert.equal(await countedSlots(pool, t.id), 0);
    const step = await admitFromLine(pool, t.id, 10);
    assert.deepEqual(step.granted, [...sleeping, asks]);
    assert.deepEqual(step.woken, [...sleeping, asks], 'the asking call waits (waiting_for_slot): it is woken too');
  });

  test("the reconciler's repair leaves a team's free slots to the pacer while calls sleep due in its line", async () => {
    const paced = await team(50);
    await insertPhoneCalls(pool, paced, 3, { at: new Date(Date.now() - 30_000), wakesOnGrant: true });
    const [behind] = await insertPhoneCalls(pool, paced, 1, { at: new Date(Date.now() - 1000) });
    assert.equal((await requestCallSlot(pool, paced.id, behind)).outcome, 'waiting');
    const plain = await team(1);
    const [holder, waits] = await insertPhoneCalls(pool, plain, 2, { at: new Date(Date.now() - 1000) });
    await requestCallSlot(pool, plain.id, holder);
    assert.equal((await requestCallSlot(pool, plain.id, waits)).outcome, 'waiting');
    const teams = await teamsWithWaitingCalls(pool);
    assert.ok(teams.includes(plain.id), 'a team whose waiting calls asked themselves is repaired');
    assert.ok(!teams.includes(paced.id), 'a team with calls sleeping due in its line is the pacer’s');
  });

  test('the waiting gauge counts the due calls sleeping in the line with those waiting after asking, not the future ones nor the granted', async () => {
    const t = await team(1);
    await insertPhoneCalls(pool, t, 3, { at: new Date(Date.now() - 30_000), wakesOnGrant: true });
    await insertPhoneCalls(pool, t, 2, { at: new Date(Date.now() + 3600_000), wakesOnGrant: true });
    const [asked] = await insertPhoneCalls(pool, t, 1, { at: new Date(Date.now() - 1000) });
    await pool.query(`UPDATE calls SET progress = 'waiting_for_slot' WHERE id = $1`, [asked]);
    const count = async () => (await waitingCallsByTeam(pool)).find((r) => r.team_id === t.id)?.n;
    assert.equal(await count(), 4);
    await admitFromLine(pool, t.id, 1);
    assert.equal(await count(), 3, 'the granted one left the line');
  });

  test('a granted call is named to wake when it sleeps in the line or waits after asking, not when its workflow will ask', async () => {
    const t = await team(3);
    const [asksItself] = await insertPhoneCalls(pool, t, 1, { at: new Date(Date.now() - 30_000) });
    const [sleeps] = await insertPhoneCalls(pool, t, 1, { at: new Date(Date.now() - 20_000), wakesOnGrant: true });
    const [waits] = await insertPhoneCalls(pool, t, 1, { at: new Date(Date.now() - 10_000) });
    await pool.query(`UPDATE calls SET progress = 'waiting_for_slot' WHERE id = $1`, [waits]);
    const admitted = await admitFromLine(pool, t.id, 3);
    assert.deepEqual(admitted.granted, [asksItself, sleeps, waits]);
    assert.deepEqual(admitted.woken, [sleeps, waits]);
  });
});
