import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { upsertContactByPhone } from '../../src/db/repositories/contacts.js';
import { linkObjectsToContact } from '../../src/services/objects.js';
import { objectDataForContacts } from '../../src/services/contacts.js';
import { httpStatus, type TestApi, type TestTeam } from '../support/app.js';
import { requestAs, startContactsApiWithTeams, teamRowCounts, twoTeams, uniquePhone } from '../support/contactsApp.js';

let app: TestApi;
let teamA: TestTeam;
let teamB: TestTeam;

before(async () => {
  ({ app, teamA, teamB } = await startContactsApiWithTeams());
});

after(async () => {
  await app?.close();
});

const req = (team: TestTeam, method: string, path: string, body?: unknown) => requestAs(app, team, method, path, body);
let typeSeq = 0;
async function newType(team: TestTeam, extra: Record<string, unknown> = {}): Promise<{ id: string; type_name: string }> {
  typeSeq += 1;
  const res = await req(team, 'POST', '/api/v1/object-types', { type_name: `type_${typeSeq}`, ...extra });
  assert.equal(res.status, 201, JSON.stringify(res.json));
  return res.json.object_type;
}
const upsert = (team: TestTeam, body: unknown) => req(team, 'POST', '/api/v1/upsert-object', body);

describe('object types', () => {
  test('POST /object-types answers 201 with object_type_id and every field', async () => {
    const res = await req(teamA, 'POST', '/api/v1/object-types', {
      type_name: 'insurance_policy',
      display_name: 'Insurance policy',
      description: 'Policies held by the contact',
      validation_mode: 'strict',
      unique_by_contact: true,
      schema: { policy_number: 'string', premium: 'number' },
    });
    assert.equal(res.status, 201);
    assert.deepEqual(res.json, {
      success: true,
      object_type_id: res.json.object_type_id,
      object_type: {
        id: res.json.object_type_id,
        type_name: 'insurance_policy',
        display_name: 'Insurance policy',
        description: 'Policies held by the contact',
        schema: { policy_number: 'string', premium: 'number' },
        validation_mode: 'strict',
        unique_by_contact: true,
      },
    });
  });

  test('the older route /create-object-type is accepted with defaults filled in', async () => {
    const res = await req(teamA, 'POST', '/api/v1/create-object-type', { type_name: 'legacy_type' });
    assert.equal(res.status, 201);
    assert.deepEqual(res.json.object_type, {
      id: res.json.object_type_id,
      type_name: 'legacy_type',
      display_name: 'legacy_type',
      description: '',
      schema: {},
      validation_mode: 'off',
      unique_by_contact: false,
    });
  });

  test('a duplicate type_name answers 409 on either route', async () => {
    await req(teamA, 'POST', '/api/v1/object-types', { type_name: 'dup_type' });
    const res = await req(teamA, 'POST', '/api/v1/create-object-type', { type_name: 'dup_type' });
    assert.equal(res.status, 409);
    assert.deepEqual(res.json, { success: false, message: 'Object type dup_type already exists' });
  });

  for (const [what, body, message] of [
    ['a missing type_name', {}, /type_name is required/],
    ['a type_name with spaces', { type_name: 'my type' }, /type_name/],
    ['an unknown validation_mode', { type_name: 'vm_x', validation_mode: 'lenient' }, /validation_mode/],
    ['a schema with an unknown type', { type_name: 'sch_x', schema: { a: 'date' } }, /schema\.a/],
    ['a non-boolean unique_by_contact', { type_name: 'ubc_x', unique_by_contact: 'yes' }, /unique_by_contact/],
  ] as const) {
    test(`${what} answers 400 naming the field`, async () => {
      const res = await req(teamA, 'POST', '/api/v1/object-types', body);
      assert.equal(res.status, 400);
      assert.match(res.json.message, message);
    });
  }

  test('GET /object-types lists the types with meta, and rejects a non-integer or out-of-range limit', async () => {
    const team = (await twoTeams(app.pool))[0];
    const t1 = await newType(team);
    const t2 = await newType(team);
    const res = await req(team, 'GET', '/api/v1/object-types');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.meta, { limit: 100, total: 2 });
    assert.deepEqual(res.json.object_types.map((t: { id: string }) => t.id), [t1.id, t2.id]);
    const one = await req(team, 'GET', '/api/v1/object-types?limit=1');
    assert.deepEqual([one.json.object_types.length, one.json.meta.total], [1, 2]);
    for (const bad of ['0', '501', 'abc', '2.5', '-1']) {
      const r = await req(team, 'GET', `/api/v1/object-types?limit=${bad}`);
      assert.equal(r.status, 400, bad);
      assert.match(r.json.message, /limit/);
    }
  });

  test('GET /object-types/by-name/{type_name} finds the type; an unknown name answers 404', async () => {
    const t = await newType(teamA, { display_name: 'Named' });
    const res = await req(teamA, 'GET', `/api/v1/object-types/by-name/${t.type_name}`);
    assert.equal(res.status, 200);
    assert.equal(res.json.object_type.id, t.id);
    const missing = await req(teamA, 'GET', '/api/v1/object-types/by-name/nothing_here');
    assert.deepEqual([missing.status, missing.json], [404, { success: false, message: 'Object type not found' }]);
  });
});

describe('upsert-object', () => {
  test('creates with 201 and action created, then updates by the default $.id key with 200', async () => {
    const t = await newType(teamA);
    const created = await upsert(teamA, { type_name: t.type_name, name: 'Order 1', data: { id: 'o-1', total: 10 } });
    assert.equal(created.status, 201);
    assert.deepEqual(created.json, {
      success: true,
      object_id: created.json.object_id,
      object: { id: created.json.object_id, name: 'Order 1', type_id: t.id, parent_id: null, data: { id: 'o-1', total: 10 } },
      action: 'created',
      upsert_key: { path: '$.id', value: 'o-1' },
    });
    const updated = await upsert(teamA, { type_id: t.id, data: { id: 'o-1', total: 12 } });
    assert.equal(updated.status, 200);
    assert.equal(updated.json.action, 'updated');
    assert.equal(updated.json.object_id, created.json.object_id);
    assert.deepEqual(updated.json.object.data, { id: 'o-1', total: 12 });
    assert.equal(updated.json.object.name, 'Order 1', 'name is kept when not sent');
  });

  test('without upsert_key, $.external_ids.<system>.property_id is tried before $.id', async () => {
    const t = await newType(teamA);
    const first = await upsert(teamA, { type_name: t.type_name, data: { id: 'x', external_ids: { hubspot: { property_id: 'hs-9' } } } });
    assert.deepEqual(first.json.upsert_key, { path: '$.external_ids.hubspot.property_id', value: 'hs-9' });
    const byExternal = await upsert(teamA, { type_name: t.type_name, data: { id: 'y', external_ids: { hubspot: { property_id: 'hs-9' } } } });
    assert.equal(byExternal.json.action, 'updated');
    assert.equal(byExternal.json.object_id, first.json.object_id);
    const byId = await upsert(teamA, { type_name: t.type_name, data: { id: 'y', external_ids: { salesforce: { property_id: 'sf-1' } } } });
    assert.equal(byId.json.action, 'updated', 'falls back to $.id when no external id matches');
    assert.equal(byId.json.object_id, first.json.object_id);
    assert.deepEqual(byId.json.upsert_key, { path: '$.id', value: 'y' });
  });

  test('an explicit upsert_key finds the object by that path; numbers match their text', async () => {
    const t = await newType(teamA);
    const first = await upsert(teamA, { type_name: t.type_name, data: { policy: { number: 4711 } }, upsert_key: { path: '$.policy.number', value: '4711' } });
    assert.equal(first.status, 201);
    const second = await upsert(teamA, { type_name: t.type_name, data: { policy: { number: 4711 }, note: 'b' }, upsert_key: { path: "$['policy'].number", value: 4711 } });
    assert.equal(second.status, 200);
    assert.equal(second.json.object_id, first.json.object_id);
  });

  test('without any key every request creates a new object and upsert_key is null', async () => {
    const t = await newType(teamA);
    const a = await upsert(teamA, { type_name: t.type_name, data: { note: 'a' } });
    const b = await upsert(teamA, { type_name: t.type_name, data: { note: 'a' } });
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.json.object_id, b.json.object_id);
    assert.equal(a.json.upsert_key, null);
  });

  test('unique_key: another object of the type with that value answers 409; the object itself does not conflict', async () => {
    const t = await newType(teamA);
    const a = await upsert(teamA, { type_name: t.type_name, data: { id: 'a', email: 'x@example.com' }, unique_key: { path: '$.email', value: 'x@example.com' } });
    assert.equal(a.status, 201);
    const again = await upsert(teamA, { type_name: t.type_name, data: { id: 'a', email: 'x@example.com', v: 2 }, unique_key: { path: '$.email', value: 'x@example.com' } });
    assert.equal(again.status, 200);
    const before = await teamRowCounts(app.pool, teamA.teamId);
    const clash = await upsert(teamA, { type_name: t.type_name, data: { id: 'b', email: 'x@example.com' }, unique_key: { path: '$.email', value: 'x@example.com' } });
    assert.equal(clash.status, 409);
    assert.match(clash.json.message, /already exists/);
    assert.deepEqual(await teamRowCounts(app.pool, teamA.teamId), before);
  });

  test('concurrent upserts of one key create exactly one object', async () => {
    const t = await newType(teamA);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => upsert(teamA, { type_name: t.type_name, data: { id: 'same', n: i } })));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
    assert.equal(new Set(results.map((r) => r.json.object_id)).size, 1);
  });

  test('strict validation names each offending field; off accepts anything', async () => {
    const strict = await newType(teamA, { validation_mode: 'strict', schema: { name: 'string', age: 'integer', tags: 'array' } });
    const ok = await upsert(teamA, { type_name: strict.type_name, data: { name: 'n', age: 3 } });
    assert.equal(ok.status, 201);
    const bad = await upsert(teamA, { type_name: strict.type_name, data: { name: 5, age: 2.5, tags: [], colour: 'red' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.message, `Invalid request: data.name must be a string; data.age must be an integer; data.colour is not a field of object type ${strict.type_name}`);
    const off = await newType(teamA, { validation_mode: 'off', schema: { name: 'string' } });
    assert.equal((await upsert(teamA, { type_name: off.type_name, data: { name: 5, anything: { x: 1 } } })).status, 201);
  });

  const malformedPaths = ['id', '$.', '$..id', '$.*', '$[*]', '$[?(@.id)]', '$["unterminated]', '$[01]', '$.a b', '$', '$[-1]', '$.a[1:2]', "$['a'", '$.1abc', `$${'.a'.repeat(40)}`, '$[99999999999]'];
  for (const path of malformedPaths) {
    test(`a malformed path ${JSON.stringify(path.slice(0, 20))} answers 400 naming upsert_key.path and writes nothing`, async () => {
      const t = await newType(teamA);
      const before = await teamRowCounts(app.pool, teamA.teamId);
      const res = await upsert(teamA, { type_name: t.type_name, data: { id: 1 }, upsert_key: { path, value: '1' } });
      assert.equal(res.status, 400);
      assert.match(res.json.message, /upsert_key\.path/);
      const u = await upsert(teamA, { type_name: t.type_name, data: { id: 1 }, unique_key: { path, value: '1' } });
      assert.equal(u.status, 400);
      assert.match(u.json.message, /unique_key\.path/);
      assert.deepEqual(await teamRowCounts(app.pool, teamA.teamId), before);
    });
  }

  for (const [what, body, status, message] of [
    ['no type', { data: {} }, 400, /type_name or type_id is required/],
    ['no data', { type_name: 'x' }, 400, /data is required/],
    ['data that is an array', { type_name: 'x', data: [1] }, 400, /data/],
    ['a malformed type_id', { type_id: 'abc', data: {} }, 400, /type_id/],
    ['an unknown type_name', { type_name: 'never_made', data: {} }, 404, /Object type not found/],
    ['an unknown type_id', { type_id: '00000000-0000-4000-8000-000000000000', data: {} }, 404, /Object type not found/],
  ] as const) {
    test(`${what} answers ${status}`, async () => {
      const res = await upsert(teamA, body);
      assert.equal(res.status, status);
      assert.match(res.json.message, message);
    });
  }

  test('type_id and type_name of different types answer 400', async () => {
    const t1 = await newType(teamA);
    const t2 = await newType(teamA);
    const res = await upsert(teamA, { type_id: t1.id, type_name: t2.type_name, data: {} });
    assert.equal(res.status, 400);
    assert.match(res.json.message, /type_id and type_name/);
  });

  test('parent_id links to a parent object of the team; an unknown parent answers 404', async () => {
    const t = await newType(teamA);
    const parent = await upsert(teamA, { type_name: t.type_name, data: { id: 'parent' } });
    const child = await upsert(teamA, { type_name: t.type_name, data: { id: 'child' }, parent_id: parent.json.object_id });
    assert.equal(child.json.object.parent_id, parent.json.object_id);
    const bad = await upsert(teamA, { type_name: t.type_name, data: { id: 'orphan' }, parent_id: '00000000-0000-4000-8000-000000000000' });
    assert.deepEqual([bad.status, bad.json.message], [404, 'parent_id not found']);
  });
});

describe('objects map linked to a contact', () => {
  test('unique_by_contact types keep one object per contact, updated in place', async () => {
    const t = await newType(teamA, { unique_by_contact: true });
    const { contact } = await upsertContactByPhone(app.pool, teamA.teamId, { phone_number: uniquePhone(), first_name: 'M' });
    const first = await linkObjectsToContact(app.pool, teamA.teamId, contact.id, { [t.type_name]: { plan: 'basic' } });
    const second = await linkObjectsToContact(app.pool, teamA.teamId, contact.id, { [t.type_name]: { plan: 'gold' } });
    assert.deepEqual(first.map((l) => l.action), ['created']);
    assert.deepEqual(second.map((l) => l.action), ['updated']);
    assert.equal(first[0].object_id, second[0].object_id);
    assert.deepEqual((await objectDataForContacts(app.pool, teamA.teamId, [contact.id])).get(contact.id), { [t.type_name]: { plan: 'gold' } });
  });

  test('an unknown type or a strict violation answers 400 naming objects.<type> and writes nothing', async () => {
    const strict = await newType(teamA, { validation_mode: 'strict', schema: { plan: 'string' } });
    const { contact } = await upsertContactByPhone(app.pool, teamA.teamId, { phone_number: uniquePhone(), first_name: 'M' });
    const before = await teamRowCounts(app.pool, teamA.teamId);
    await assert.rejects(
      linkObjectsToContact(app.pool, teamA.teamId, contact.id, { [strict.type_name]: { plan: 'ok' }, missing_type: { a: 1 } }),
      (err: Error) => httpStatus(err) === 400 && /objects\.missing_type: object type not found/.test(err.message),
    );
    await assert.rejects(
      linkObjectsToContact(app.pool, teamA.teamId, contact.id, { [strict.type_name]: { plan: 1 } }),
      (err: Error) => httpStatus(err) === 400 && err.message.includes(`objects.${strict.type_name}.plan must be a string`),
    );
    assert.deepEqual(await teamRowCounts(app.pool, teamA.teamId), before);
  });

  test("another team's type name is unknown to the map", async () => {
    const t = await newType(teamA);
    const { contact } = await upsertContactByPhone(app.pool, teamB.teamId, { phone_number: uniquePhone(), first_name: 'B' });
    await assert.rejects(linkObjectsToContact(app.pool, teamB.teamId, contact.id, { [t.type_name]: { a: 1 } }), /object type not found/);
  });
});

describe('two teams', () => {
  test("another team's object type is a 404 on by-name and upsert, absent from the list, and its name is free", async () => {
    const t = await newType(teamA);
    assert.equal((await req(teamB, 'GET', `/api/v1/object-types/by-name/${t.type_name}`)).status, 404);
    assert.equal((await upsert(teamB, { type_id: t.id, data: { id: 1 } })).status, 404);
    assert.equal((await upsert(teamB, { type_name: t.type_name, data: { id: 1 } })).status, 404);
    const list = await req(teamB, 'GET', '/api/v1/object-types?limit=500');
    assert.ok(!list.json.object_types.some((x: { id: string }) => x.id === t.id));
    const same = await req(teamB, 'POST', '/api/v1/object-types', { type_name: t.type_name });
    assert.equal(same.status, 201);
    assert.notEqual(same.json.object_type_id, t.id);
  });

  test("upserts never find or conflict with another team's objects, nor take them as parent", async () => {
    const ta = await newType(teamA);
    const a = await upsert(teamA, { type_name: ta.type_name, data: { id: 'shared-id', email: 'e@example.com' } });
    await req(teamB, 'POST', '/api/v1/object-types', { type_name: ta.type_name });
    const b = await upsert(teamB, { type_name: ta.type_name, data: { id: 'shared-id', email: 'e@example.com' }, unique_key: { path: '$.email', value: 'e@example.com' } });
    assert.equal(b.status, 201);
    assert.notEqual(b.json.object_id, a.json.object_id);
    const parent = await upsert(teamB, { type_name: ta.type_name, data: { id: 'c' }, parent_id: a.json.object_id });
    assert.equal(parent.status, 404);
  });
});
