import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findContactByPhone } from '../../src/db/repositories/contacts.js';
import { insertObjectType } from '../../src/db/repositories/objectTypes.js';
import { linkObjectsToContact } from '../../src/services/objects.js';
import type { TestApi, TestTeam } from '../support/app.js';
import { startContactsApiWithTeams, uniquePhone } from '../support/contactsApp.js';

let app: TestApi;
let teamA: TestTeam;
let teamB: TestTeam;

before(async () => {
  ({ app, teamA, teamB } = await startContactsApiWithTeams());
});

after(async () => {
  await app?.close();
});

const create = (team: TestTeam, body: unknown) => app.request('POST', '/api/v1/create-contact', { key: team.apiKey, body });
const get = (team: TestTeam, phone: string) => app.request('GET', `/api/v1/get-contact/${encodeURIComponent(phone)}`, { key: team.apiKey });

describe('create-contact', () => {
  test('answers 201 with contact_id, and get-contact returns every field', async () => {
    const phone = uniquePhone();
    const res = await create(teamA, {
      phone_number: phone,
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      address: '12 St James Square',
      location: 'London',
      gender: 'female',
      age: 36,
      title: 'Countess',
      timezone: 'europe/london',
    });
    assert.equal(res.status, 201);
    assert.equal(res.json.success, true);
    assert.match(res.json.contact_id, /^[0-9a-f-]{36}$/);

    const got = await get(teamA, phone);
    assert.equal(got.status, 200);
    const { created_at, updated_at, ...contact } = got.json.contact;
    assert.deepEqual(contact, {
      id: res.json.contact_id,
      team_id: teamA.teamId,
      phone_number: phone,
      first_name: 'Ada',
      last_name: 'Lovelace',
      full_name: 'Ada Lovelace',
      email: 'ada@example.com',
      address: '12 St James Square',
      location: 'London',
      gender: 'female',
      age: 36,
      title: 'Countess',
      timezone: 'Europe/London',
      object_data: {},
    });
    assert.ok(!Number.isNaN(Date.parse(created_at)) && !Number.isNaN(Date.parse(updated_at)));
  });

  test('a local-format number is stored as E.164 and found by either form', async () => {
    const res = await create(teamA, { phone_number: '(415) 555-0134', first_name: 'Local' });
    assert.equal(res.status, 201);
    const byE164 = await app.request('GET', '/api/v1/get-contact/%2B14155550134', { key: teamA.apiKey });
    assert.equal(byE164.status, 200);
    assert.equal(byE164.json.contact.phone_number, '+14155550134');
    const byLocal = await get(teamA, '415-555-0134');
    assert.equal(byLocal.json.contact.id, res.json.contact_id);
  });

  test('the same number in another format answers 409 Contact already exists with the existing id', async () => {
    const first = await create(teamA, { phone_number: '+1 415 555 0135', first_name: 'One' });
    assert.equal(first.status, 201);
    const second = await create(teamA, { phone_number: '(415) 555-0135', first_name: 'Two' });
    assert.equal(second.status, 409);
    assert.deepEqual(second.json, { success: false, message: 'Contact already exists', contact_id: first.json.contact_id });
    assert.equal((await findContactByPhone(app.pool, teamA.teamId, '+14155550135'))?.first_name, 'One');
  });

  test('two concurrent creates of one number give one 201 and one 409', async () => {
    const phone = uniquePhone();
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => create(teamA, { phone_number: phone, first_name: `C${i}` })));
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409]);
  });

  const invalid: [string, unknown, RegExp][] = [
    ['an invalid phone number', { phone_number: '12345', first_name: 'X' }, /phone_number is not a valid phone number/],
    ['letters as phone number', { phone_number: 'call me', first_name: 'X' }, /phone_number is not a valid phone number/],
    ['a missing phone number', { first_name: 'X' }, /phone_number is required/],
    ['a missing first_name', { phone_number: '+14155550136' }, /first_name is required/],
    ['an empty first_name', { phone_number: '+14155550136', first_name: '' }, /first_name/],
    ['a bad email', { phone_number: '+14155550136', first_name: 'X', email: 'nope' }, /email/],
    ['a string age', { phone_number: '+14155550136', first_name: 'X', age: '36' }, /age/],
    ['a negative age', { phone_number: '+14155550136', first_name: 'X', age: -1 }, /age/],
    ['an unknown field', { phone_number: '+14155550136', first_name: 'X', nickname: 'x' }, /nickname/],
    ['a non-object body', [1, 2], /body/],
  ];
  for (const [what, body, message] of invalid) {
    test(`${what} answers 400 naming the field and creates nothing`, async () => {
      const res = await create(teamA, body);
      assert.equal(res.status, 400);
      assert.equal(res.json.success, false);
      assert.match(res.json.message, message);
      assert.equal(await findContactByPhone(app.pool, teamA.teamId, '+14155550136'), undefined);
    });
  }
});

describe('get-contact', () => {
  test('an unknown number answers 404', async () => {
    const res = await get(teamA, uniquePhone());
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { success: false, message: 'Contact not found' });
  });

  test('an invalid number in the path answers 400 naming phone_number', async () => {
    const res = await app.request('GET', '/api/v1/get-contact/abc', { key: teamA.apiKey });
    assert.equal(res.status, 400);
    assert.match(res.json.message, /phone_number/);
  });

  test('object_data holds linked objects by type name: one object for unique_by_contact types, an array otherwise', async () => {
    const phone = uniquePhone();
    const created = await create(teamA, { phone_number: phone, first_name: 'Obj' });
    await insertObjectType(app.pool, teamA.teamId, { type_name: 'policy_c', display_name: 'Policy', description: '', schema: {}, validation_mode: 'off', unique_by_contact: true });
    await insertObjectType(app.pool, teamA.teamId, { type_name: 'order_c', display_name: 'Order', description: '', schema: {}, validation_mode: 'off', unique_by_contact: false });
    await linkObjectsToContact(app.pool, teamA.teamId, created.json.contact_id, { policy_c: { number: 'P-1' }, order_c: { id: 'o-1', total: 5 } });
    await linkObjectsToContact(app.pool, teamA.teamId, created.json.contact_id, { policy_c: { number: 'P-2' }, order_c: { id: 'o-2', total: 7 } });
    const res = await get(teamA, phone);
    assert.deepEqual(res.json.contact.object_data, {
      policy_c: { number: 'P-2' },
      order_c: [
        { id: 'o-1', total: 5 },
        { id: 'o-2', total: 7 },
      ],
    });
  });
});

describe('two teams', () => {
  test("another team's contact is a 404, and the same number is a separate contact per team", async () => {
    const phone = uniquePhone();
    const a = await create(teamA, { phone_number: phone, first_name: 'A' });
    assert.equal((await get(teamB, phone)).status, 404);
    const b = await create(teamB, { phone_number: phone, first_name: 'B' });
    assert.equal(b.status, 201);
    assert.notEqual(b.json.contact_id, a.json.contact_id);
    assert.equal((await get(teamA, phone)).json.contact.first_name, 'A');
    assert.equal((await get(teamB, phone)).json.contact.first_name, 'B');
  });
});
