import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findContactByPhone } from '../../src/db/repositories/contacts.js';
import type { ListContactsAddedEvent, ListContactsAddedListener } from '../../src/services/lists.js';
import type { TestApi, TestTeam } from '../support/app.js';
import { requestAs, startContactsApiWithTeams, teamRowCounts, twoTeams, uniquePhone } from '../support/contactsApp.js';

let app: TestApi;
let teamA: TestTeam;
let teamB: TestTeam;
let listener: ListContactsAddedListener | undefined;

/** Hears the app's list additions (its injected listener) until the returned function is called. */
function onListContactsAdded(heard: ListContactsAddedListener): () => void {
  listener = heard;
  return () => {
    listener = undefined;
  };
}

before(async () => {
  ({ app, teamA, teamB } = await startContactsApiWithTeams({ listContactsAdded: (event) => listener?.(event) }));
});

after(async () => {
  await app?.close();
});

const req = (team: TestTeam, method: string, path: string, body?: unknown) => requestAs(app, team, method, path, body);

async function newList(team: TestTeam, name = 'Leads'): Promise<string> {
  const res = await req(team, 'POST', '/api/v1/lists', { name });
  assert.equal(res.status, 201);
  return res.json.list_id;
}

describe('create and list lists', () => {
  test('POST /lists answers 201 with list_id and the empty list', async () => {
    const res = await req(teamA, 'POST', '/api/v1/lists', { name: 'Spring campaign' });
    assert.equal(res.status, 201);
    assert.deepEqual(res.json, {
      success: true,
      list_id: res.json.list_id,
      list: { id: res.json.list_id, name: 'Spring campaign', team_id: teamA.teamId, contact_count: 0, contacts: [] },
    });
  });

  for (const [what, body] of [
    ['a missing name', {}],
    ['an empty name', { name: '  ' }],
    ['a numeric name', { name: 5 }],
    ['an unknown field', { name: 'x', colour: 'red' }],
  ] as const) {
    test(`POST /lists with ${what} answers 400 naming the field`, async () => {
      const res = await req(teamA, 'POST', '/api/v1/lists', body);
      assert.equal(res.status, 400);
      assert.match(res.json.message, /name|colour/);
    });
  }

  test('GET /lists returns live lists newest first with counts and meta', async () => {
    const team = (await twoTeams(app.pool))[0];
    const first = await newList(team, 'first');
    const second = await newList(team, 'second');
    await req(team, 'POST', `/api/v1/lists/${first}/contacts`, { phone_number: uniquePhone() });
    const res = await req(team, 'GET', '/api/v1/lists');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.meta, { limit: 100, total: 2 });
    assert.deepEqual(
      res.json.lists.map((l: { id: string; contact_count: number }) => [l.id, l.contact_count]),
      [
        [second, 0],
        [first, 1],
      ],
    );
  });

  test('GET /lists clamps an out-of-range limit and rejects a non-integer one', async () => {
    assert.equal((await req(teamA, 'GET', '/api/v1/lists?limit=0')).json.meta.limit, 1);
    assert.equal((await req(teamA, 'GET', '/api/v1/lists?limit=-4')).json.meta.limit, 1);
    assert.equal((await req(teamA, 'GET', '/api/v1/lists?limit=100000')).json.meta.limit, 500);
    assert.equal((await req(teamA, 'GET', '/api/v1/lists?limit=1')).json.lists.length, 1);
    for (const bad of ['abc', '1.5', '', '1e2']) {
      const res = await req(teamA, 'GET', `/api/v1/lists?limit=${bad}`);
      assert.equal(res.status, 400, bad);
      assert.match(res.json.message, /limit/);
    }
  });
});

describe('add contacts to a list', () => {
  test('an array of contacts creates new ones, reuses existing numbers unchanged, and counts each case', async () => {
    const listId = await newList(teamA);
    const existingPhone = uniquePhone();
    const existing = await req(teamA, 'POST', '/api/v1/create-contact', { phone_number: existingPhone, first_name: 'Kept' });
    const fresh = [uniquePhone(), uniquePhone()];
    const res = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, {
      contacts: [
        { phone_number: fresh[0], first_name: 'New', last_name: 'One' },
        { phone_number: existingPhone, first_name: 'Overwritten?' },
        { phone_number: fresh[1] },
      ],
    });
    assert.equal(res.status, 201);
    assert.equal(res.json.totalContactsAdded, 3);
    assert.equal(res.json.newContactsCount, 2);
    assert.equal(res.json.existingContactsCount, 1);
    assert.equal(res.json.alreadyInListCount, 0);
    assert.deepEqual(
      res.json.list_contacts.map((c: { phone_number: string }) => c.phone_number),
      [fresh[0], existingPhone, fresh[1]],
    );
    assert.deepEqual(res.json.list_contacts[0], {
      id: res.json.list_contacts[0].id,
      team_id: teamA.teamId,
      phone_number: fresh[0],
      first_name: 'New',
      last_name: 'One',
      full_name: 'New One',
      email: null,
      timezone: null,
      object_data: {},
    });
    assert.equal(res.json.list_contacts[1].id, existing.json.contact_id);
    assert.equal(res.json.list_contacts[1].first_name, 'Kept');

    const again = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, {
      contacts: [{ phone_number: fresh[0] }, { phone_number: '(415) 555-0177' }, { phone_number: '+14155550177' }],
    });
    assert.equal(again.status, 201);
    assert.deepEqual(
      [again.json.totalContactsAdded, again.json.newContactsCount, again.json.existingContactsCount, again.json.alreadyInListCount],
      [1, 1, 1, 1],
    );
    assert.equal(again.json.list_contacts.length, 2, 'one number in two formats is one contact');
    const list = await req(teamA, 'GET', `/api/v1/lists/${listId}`);
    assert.equal(list.json.list.contact_count, 4);
  });

  test('a single contact object is accepted', async () => {
    const listId = await newList(teamA);
    const phone = uniquePhone();
    const res = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { phone_number: phone, first_name: 'Solo', email: 'solo@example.com' });
    assert.equal(res.status, 201);
    assert.equal(res.json.newContactsCount, 1);
    assert.equal(res.json.list_contacts[0].email, 'solo@example.com');

    const wrapped = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contact: { phone_number: uniquePhone(), first_name: 'Wrapped' } });
    assert.equal(wrapped.status, 201);
    assert.equal(wrapped.json.newContactsCount, 1);
    assert.equal(wrapped.json.list_contacts[0].first_name, 'Wrapped');
    const badWrapped = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contact: { phone_number: 'nope' } });
    assert.equal(badWrapped.status, 400);
    assert.match(badWrapped.json.message, /contact\.phone_number is not a valid phone number/);
    const both = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contact: { phone_number: uniquePhone() }, phone_number: uniquePhone() });
    assert.equal(both.status, 400);
    assert.match(both.json.message, /only one of/);
  });

  test('contact_ids adds existing contacts; an unknown id answers 404 and adds nothing', async () => {
    const listId = await newList(teamA);
    const a = await req(teamA, 'POST', '/api/v1/create-contact', { phone_number: uniquePhone(), first_name: 'A' });
    const b = await req(teamA, 'POST', '/api/v1/create-contact', { phone_number: uniquePhone(), first_name: 'B' });
    const res = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contact_ids: [a.json.contact_id, b.json.contact_id, a.json.contact_id] });
    assert.equal(res.status, 201);
    assert.deepEqual([res.json.totalContactsAdded, res.json.newContactsCount, res.json.existingContactsCount, res.json.alreadyInListCount], [2, 0, 2, 0]);

    const other = await newList(teamA);
    const missing = '00000000-0000-4000-8000-000000000000';
    const bad = await req(teamA, 'POST', `/api/v1/lists/${other}/contacts`, { contact_ids: [a.json.contact_id, missing] });
    assert.equal(bad.status, 404);
    assert.equal(bad.json.message, `Contact ${missing} not found`);
    assert.equal((await req(teamA, 'GET', `/api/v1/lists/${other}`)).json.list.contact_count, 0);
  });

  const invalidBodies: [string, unknown, RegExp][] = [
    ['an invalid phone number in the array', { contacts: [{ phone_number: '+14155550188' }, { phone_number: 'nope' }] }, /contacts\[1\]\.phone_number is not a valid phone number/],
    ['more than 500 contacts', { contacts: Array.from({ length: 501 }, (_, i) => ({ phone_number: `+1415666${String(i).padStart(4, '0')}` })) }, /contacts: must have at most 500 items/],
    ['an empty array', { contacts: [] }, /contacts/],
    ['a contact without phone_number', { contacts: [{ first_name: 'X' }] }, /contacts\[0\]\.phone_number is required/],
    ['two forms at once', { contacts: [{ phone_number: '+14155550188' }], contact_ids: ['00000000-0000-4000-8000-000000000000'] }, /only one of/],
    ['an empty body object', {}, /phone_number/],
    ['a malformed contact id', { contact_ids: ['x'] }, /contact_ids\[0\]/],
    ['an unknown field on a contact', { contacts: [{ phone_number: '+14155550188', shoe: 9 }] }, /shoe/],
  ];
  for (const [what, body, message] of invalidBodies) {
    test(`${what} answers 400 naming the field and writes nothing`, async () => {
      const listId = await newList(teamA);
      const before = await teamRowCounts(app.pool, teamA.teamId);
      const res = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, body);
      assert.equal(res.status, 400);
      assert.match(res.json.message, message);
      assert.deepEqual(await teamRowCounts(app.pool, teamA.teamId), before);
      assert.equal(await findContactByPhone(app.pool, teamA.teamId, '+14155550188'), undefined);
    });
  }

  test('listeners hear only the contacts that became members', async () => {
    const listId = await newList(teamA);
    const heard: ListContactsAddedEvent[] = [];
    const off = onListContactsAdded((e) => {
      heard.push(e);
    });
    try {
      const phones = [uniquePhone(), uniquePhone()];
      const first = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: [{ phone_number: phones[0] }] });
      await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: phones.map((p) => ({ phone_number: p })) });
      await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: [{ phone_number: phones[0] }] });
      assert.equal(heard.length, 2, 'an addition that adds nobody tells nobody');
      assert.deepEqual(heard[0], { teamId: teamA.teamId, listId, contactIds: [first.json.list_contacts[0].id] });
      assert.equal(heard[1].contactIds.length, 1);
      assert.notEqual(heard[1].contactIds[0], first.json.list_contacts[0].id);
    } finally {
      off();
    }
  });

  test('a failing listener does not fail the request', async () => {
    const listId = await newList(teamA);
    const off = onListContactsAdded(() => {
      throw new Error('listener down');
    });
    try {
      const res = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { phone_number: uniquePhone() });
      assert.equal(res.status, 201);
    } finally {
      off();
    }
  });
});

describe('get a list with paged contacts', () => {
  test('pages most recently added first without skipping or repeating, even within one addition', async () => {
    const listId = await newList(teamA);
    const phones = Array.from({ length: 25 }, () => uniquePhone());
    await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: phones.slice(0, 20).map((p) => ({ phone_number: p })) });
    await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: phones.slice(20).map((p) => ({ phone_number: p })) });
    const seen: string[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const q: string = cursor ? `?limit=10&cursor=${encodeURIComponent(cursor)}` : '?limit=10';
      const res = await req(teamA, 'GET', `/api/v1/lists/${listId}${q}`);
      assert.equal(res.status, 200);
      assert.equal(res.json.meta.total, 25);
      assert.equal(res.json.meta.limit, 10);
      assert.equal(res.json.list.contact_count, 25);
      sizes.push(res.json.list.contacts.length);
      seen.push(...res.json.list.contacts.map((c: { phone_number: string }) => c.phone_number));
      cursor = res.json.meta.next_cursor;
      if (cursor) assert.ok(!Number.isNaN(Date.parse(cursor)), 'next_cursor is a date-time');
    } while (cursor);
    assert.deepEqual(sizes, [10, 10, 5]);
    assert.deepEqual(seen, [...phones].reverse());
  });

  test('a plain date-time cursor returns contacts added strictly before it', async () => {
    const listId = await newList(teamA);
    await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { phone_number: uniquePhone() });
    const future = await req(teamA, 'GET', `/api/v1/lists/${listId}?cursor=${encodeURIComponent('2999-01-01T00:00:00Z')}`);
    assert.equal(future.json.list.contacts.length, 1);
    const past = await req(teamA, 'GET', `/api/v1/lists/${listId}?cursor=2000-01-01T00:00:00Z`);
    assert.equal(past.json.list.contacts.length, 0);
    assert.equal(past.json.meta.next_cursor, null);
  });

  test('an invalid limit or cursor answers 400 naming it', async () => {
    const listId = await newList(teamA);
    for (const q of ['limit=0', 'limit=501', 'limit=abc', 'limit=2.5']) {
      const res = await req(teamA, 'GET', `/api/v1/lists/${listId}?${q}`);
      assert.equal(res.status, 400, q);
      assert.match(res.json.message, /limit/);
    }
    const res = await req(teamA, 'GET', `/api/v1/lists/${listId}?cursor=yesterday`);
    assert.equal(res.status, 400);
    assert.match(res.json.message, /cursor/);
  });

  test('an unknown or malformed list id answers 404', async () => {
    assert.equal((await req(teamA, 'GET', '/api/v1/lists/00000000-0000-4000-8000-000000000000')).status, 404);
    const res = await req(teamA, 'GET', '/api/v1/lists/not-a-list');
    assert.equal(res.status, 404);
    assert.deepEqual(res.json, { success: false, message: 'List not found' });
  });
});

describe('rename, remove contacts, delete', () => {
  test('PATCH renames the list', async () => {
    const listId = await newList(teamA, 'old');
    const res = await req(teamA, 'PATCH', `/api/v1/lists/${listId}`, { name: 'new' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { success: true, list: { id: listId, name: 'new', team_id: teamA.teamId, contact_count: 0 } });
    assert.equal((await req(teamA, 'GET', `/api/v1/lists/${listId}`)).json.list.name, 'new');
    assert.equal((await req(teamA, 'PATCH', `/api/v1/lists/${listId}`, { name: '' })).status, 400);
  });

  test('DELETE /lists/{id}/contacts removes members and keeps the contacts', async () => {
    const listId = await newList(teamA);
    const phones = [uniquePhone(), uniquePhone()];
    const added = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { contacts: phones.map((p) => ({ phone_number: p })) });
    const ids = added.json.list_contacts.map((c: { id: string }) => c.id);
    const res = await req(teamA, 'DELETE', `/api/v1/lists/${listId}/contacts`, { contact_ids: [ids[0], '00000000-0000-4000-8000-000000000000'] });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { success: true, list_id: listId, removedCount: 1 });
    const list = await req(teamA, 'GET', `/api/v1/lists/${listId}`);
    assert.deepEqual(list.json.list.contacts.map((c: { id: string }) => c.id), [ids[1]]);
    assert.equal((await req(teamA, 'GET', `/api/v1/get-contact/${encodeURIComponent(phones[0])}`)).status, 200);
    assert.equal((await req(teamA, 'DELETE', `/api/v1/lists/${listId}/contacts`, { contact_ids: [] })).status, 400);
  });

  test('a deleted list answers 404 everywhere and its contacts remain', async () => {
    const listId = await newList(teamA);
    const phone = uniquePhone();
    const added = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { phone_number: phone });
    const del = await req(teamA, 'DELETE', `/api/v1/lists/${listId}`);
    assert.equal(del.status, 200);
    assert.deepEqual(del.json, { success: true, list_id: listId });
    const id = added.json.list_contacts[0].id;
    for (const [method, path, body] of [
      ['GET', `/api/v1/lists/${listId}`, undefined],
      ['PATCH', `/api/v1/lists/${listId}`, { name: 'x' }],
      ['DELETE', `/api/v1/lists/${listId}`, undefined],
      ['POST', `/api/v1/lists/${listId}/contacts`, { phone_number: uniquePhone() }],
      ['POST', `/api/v1/lists/${listId}/contacts`, { contact_ids: [id] }],
      ['DELETE', `/api/v1/lists/${listId}/contacts`, { contact_ids: [id] }],
    ] as const) {
      const res = await req(teamA, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.json.message, 'List not found');
    }
    const lists = await req(teamA, 'GET', '/api/v1/lists?limit=500');
    assert.ok(!lists.json.lists.some((l: { id: string }) => l.id === listId));
    assert.equal((await req(teamA, 'GET', `/api/v1/get-contact/${encodeURIComponent(phone)}`)).status, 200);
  });
});

describe('removed list paths', () => {
  const names = [
    'get-list',
    'create-list',
    'edit-list',
    'delete-list',
    'add-existing-contacts-to-list',
    'add-contacts-to-list',
    'delete-contacts-from-list',
    'get-lists',
    'create-lists',
    'edit-lists',
    'delete-lists',
    'add-existing-contact-to-list',
    'add-contact-to-list',
    'delete-contact-from-list',
  ];
  for (const name of names) {
    test(`/api/v1/${name} answers 404 with or without an id`, async () => {
      const listId = await newList(teamA);
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
        for (const path of [`/api/v1/${name}`, `/api/v1/${name}/${listId}`]) {
          const res = await req(teamA, method, path, method === 'GET' ? undefined : { name: 'x', list_id: listId, contacts: [{ phone_number: '+14155550199' }] });
          assert.equal(res.status, 404, `${method} ${path}`);
          assert.equal(res.json.success, false);
        }
      }
    });
  }
});

describe('two teams', () => {
  test("every list endpoint answers 404 for another team's list and changes nothing", async () => {
    const listId = await newList(teamA, 'A only');
    const added = await req(teamA, 'POST', `/api/v1/lists/${listId}/contacts`, { phone_number: uniquePhone() });
    const contactId = added.json.list_contacts[0].id;
    const beforeA = await teamRowCounts(app.pool, teamA.teamId);
    for (const [method, path, body] of [
      ['GET', `/api/v1/lists/${listId}`, undefined],
      ['PATCH', `/api/v1/lists/${listId}`, { name: 'stolen' }],
      ['DELETE', `/api/v1/lists/${listId}`, undefined],
      ['POST', `/api/v1/lists/${listId}/contacts`, { phone_number: uniquePhone() }],
      ['POST', `/api/v1/lists/${listId}/contacts`, { contact_ids: [contactId] }],
      ['DELETE', `/api/v1/lists/${listId}/contacts`, { contact_ids: [contactId] }],
    ] as const) {
      const res = await req(teamB, method, path, body);
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    assert.deepEqual(await teamRowCounts(app.pool, teamA.teamId), beforeA);
    const lists = await req(teamB, 'GET', '/api/v1/lists?limit=500');
    assert.ok(!lists.json.lists.some((l: { id: string }) => l.id === listId));
    assert.ok(lists.json.lists.every((l: { team_id: string }) => l.team_id === teamB.teamId));
  });

  test("another team's contact id cannot be added to a list", async () => {
    const a = await req(teamA, 'POST', '/api/v1/create-contact', { phone_number: uniquePhone(), first_name: 'A' });
    const listB = await newList(teamB);
    const res = await req(teamB, 'POST', `/api/v1/lists/${listB}/contacts`, { contact_ids: [a.json.contact_id] });
    assert.equal(res.status, 404);
    assert.equal((await req(teamB, 'GET', `/api/v1/lists/${listB}`)).json.list.contact_count, 0);
  });

  test("a number that belongs to another team's contact creates a new contact in this team", async () => {
    const phone = uniquePhone();
    const a = await req(teamA, 'POST', '/api/v1/create-contact', { phone_number: phone, first_name: 'A' });
    const listB = await newList(teamB);
    const res = await req(teamB, 'POST', `/api/v1/lists/${listB}/contacts`, { phone_number: phone });
    assert.equal(res.json.newContactsCount, 1);
    assert.notEqual(res.json.list_contacts[0].id, a.json.contact_id);
    assert.equal(res.json.list_contacts[0].team_id, teamB.teamId);
  });
});
