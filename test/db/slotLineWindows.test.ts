// The slot line and calling windows (migration 1401) over the test database: a call outside
// its window (dial_after ahead) is not in line, so it neither holds back the calls behind it
// nor receives a released slot; once its window opens it joins the line at its opening.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import { deferScheduledCall, insertCall } from '../../src/db/repositories/calls.js';
import { countedSlots, releaseSlotAndGrant, requestCallSlot } from '../../src/db/repositories/concurrencySlots.js';
import { upsertContactByPhone } from '../../src/db/repositories/contacts.js';
import { insertScript } from '../../src/db/repositories/scripts.js';
import { insertTeam } from '../../src/db/repositories/teams.js';
import { DEMO_SCRIPT } from '../../src/domain/scripts/demoScript.js';
import { testPool } from '../support/app.js';

let pool: Pool;
let seq = 0;

before(async () => {
  pool = await testPool();
});

after(async () => {
  await pool.end();
});

async function team(maxConcurrent: number) {
  const t = await insertTeam(pool, { name: 'windows', maxConcurrent });
  const script = await insertScript(pool, { teamId: t.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
  return { id: t.id, scriptId: script.id };
}

/** A phone call scheduled at `at`, not dialled before `dialAfter`. */
async function call(t: { id: string; scriptId: string }, at: Date, dialAfter: Date): Promise<string> {
  seq += 1;
  const phone = `+1415${String(200 + (process.pid % 700)).padStart(3, '0')}${String(2000 + seq).padStart(4, '0')}`;
  const { contact } = await upsertContactByPhone(pool, t.id, { phone_number: phone });
  const { call: row } = await insertCall(pool, {
    id: randomUUID(),
    teamId: t.id,
    contactId: contact.id,
    scriptId: t.scriptId,
    type: 'outbound',
    fromNumber: '+12125550100',
    toNumber: phone,
    scheduledTime: at,
    dialAfter,
    progress: 'waiting_for_scheduled_time',
  });
  return row.id;
}

const minutes = (n: number) => new Date(Date.now() + n * 60_000);

describe('the slot line and calling windows', () => {
  test('a call waiting for its window does not hold back a later call, and a release passes it over', async () => {
    const t = await team(1);
    const outside = await call(t, minutes(-10), minutes(60)); // due ten minutes ago, window opens in an hour
    const due = await call(t, minutes(-5), minutes(-5));
    assert.equal((await requestCallSlot(pool, t.id, due)).outcome, 'granted', 'nobody ahead: the earlier call is not due');
    const next = await call(t, minutes(-1), minutes(-1));
    assert.equal((await requestCallSlot(pool, t.id, next)).outcome, 'waiting');
    const released = await releaseSlotAndGrant(pool, due);
    assert.deepEqual(released.woken, [next], 'the slot went to the next due call, not to the one outside its window');
    const { rows } = await pool.query('SELECT slot_granted_at IS NOT NULL AS granted FROM calls WHERE id = $1', [outside]);
    assert.equal(rows[0].granted, false);
    assert.equal(await countedSlots(pool, t.id), 1);
  });

  test('without a window the same earlier call goes first (the order of scheduled times)', async () => {
    const t = await team(1);
    const earlier = await call(t, minutes(-10), minutes(-10));
    const later = await call(t, minutes(-5), minutes(-5));
    assert.equal((await requestCallSlot(pool, t.id, later)).outcome, 'waiting', 'the earlier due call is served first');
    const { rows } = await pool.query('SELECT slot_granted_at IS NOT NULL AS granted FROM calls WHERE id = $1', [earlier]);
    assert.equal(rows[0].granted, true);
  });

  test('a call deferred after its grant leaves the line and frees its slot for the next', async () => {
    const t = await team(1);
    const a = await call(t, minutes(-10), minutes(-10));
    assert.equal((await requestCallSlot(pool, t.id, a)).outcome, 'granted');
    const b = await call(t, minutes(-5), minutes(-5));
    assert.equal((await requestCallSlot(pool, t.id, b)).outcome, 'waiting');
    // a's window closed before it could start: it is deferred (what deferCallToWindow does), then its slot is released.
    await deferScheduledCall(pool, a, minutes(120), 'waiting_for_window');
    const released = await releaseSlotAndGrant(pool, a);
    assert.deepEqual(released.woken, [b]);
    const { rows } = await pool.query('SELECT progress, slot_granted_at FROM calls WHERE id = $1', [a]);
    assert.deepEqual(rows[0], { progress: 'waiting_for_window', slot_granted_at: null });
  });

  test('once its window has opened, a call joins the line at its opening, ahead of calls due after it', async () => {
    const t = await team(1);
    const holder = await call(t, minutes(-30), minutes(-30));
    assert.equal((await requestCallSlot(pool, t.id, holder)).outcome, 'granted');
    const windowed = await call(t, minutes(-20), minutes(-3)); // its window opened three minutes ago
    const plain = await call(t, minutes(-1), minutes(-1));
    assert.equal((await requestCallSlot(pool, t.id, plain)).outcome, 'waiting');
    assert.equal((await requestCallSlot(pool, t.id, windowed)).outcome, 'waiting');
    const released = await releaseSlotAndGrant(pool, holder);
    assert.deepEqual(released.woken, [windowed], 'its opening (three minutes ago) is before the other call’s time (one minute ago)');
  });
});
