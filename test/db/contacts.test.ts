import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../../src/db/pool.js';
import {
  findContactById,
  findContactByPhone,
  getOrCreateSharedWebContact,
  insertContact,
  upsertContactByPhone,
} from '../../src/db/repositories/contacts.js';
import { insertTeam } from '../../src/db/repositories/teams.js';
import { testPool } from '../support/app.js';

let pool: Pool;
let teamA: string;
let teamB: string;

before(async () => {
  pool = await testPool();
  teamA = (await insertTeam(pool, { name: 'a', maxConcurrent: 10 })).id;
  teamB = (await insertTeam(pool, { name: 'b', maxConcurrent: 10 })).id;
});

after(async () => {
  await pool.end();
});

describe('contacts repository', () => {
  test('upsertContactByPhone creates, then updates only the fields sent', async () => {
    const first = await upsertContactByPhone(pool, teamA, { phone_number: '+14155550101', first_name: 'Ada', email: 'ada@example.com' });
    assert.equal(first.created, true);
    assert.equal(first.contact.full_name, 'Ada');
    const second = await upsertContactByPhone(pool, teamA, { phone_number: '+14155550101', last_name: 'Lovelace' });
    assert.equal(second.created, false);
    assert.equal(second.contact.id, first.contact.id);
    assert.equal(second.contact.first_name, 'Ada');
    assert.equal(second.contact.last_name, 'Lovelace');
    assert.equal(second.contact.full_name, 'Ada Lovelace');
    assert.equal(second.contact.email, 'ada@example.com');
  });

  test('one number is one contact per team, and each team has its own', async () => {
    const a = await upsertContactByPhone(pool, teamA, { phone_number: '+14155550102', first_name: 'A' });
    const b = await upsertContactByPhone(pool, teamB, { phone_number: '+14155550102', first_name: 'B' });
    assert.notEqual(a.contact.id, b.contact.id);
    assert.equal((await findContactByPhone(pool, teamA, '+14155550102'))?.first_name, 'A');
    assert.equal(await findContactById(pool, teamB, a.contact.id), undefined);
    assert.equal(await findContactById(pool, teamB, 'not-a-uuid'), undefined);
  });

  test('of two concurrent inserts of one number exactly one succeeds', async () => {
    const results = await Promise.all([
      insertContact(pool, teamA, { phone_number: '+14155550103', first_name: 'X' }),
      insertContact(pool, teamA, { phone_number: '+14155550103', first_name: 'Y' }),
    ]);
    assert.equal(results.filter(Boolean).length, 1);
  });

  test('the shared web contact is created once per team and has no number', async () => {
    const [c1, c2] = await Promise.all([getOrCreateSharedWebContact(pool, teamA), getOrCreateSharedWebContact(pool, teamA)]);
    assert.equal(c1.id, c2.id);
    assert.equal(c1.phone_number, null);
    const other = await getOrCreateSharedWebContact(pool, teamB);
    assert.notEqual(other.id, c1.id);
  });
});
