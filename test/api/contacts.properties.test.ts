// Property-based: random bodies, queries and path values at every contacts, lists and
// objects endpoint never produce a 500, and a 400 never writes anything.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import type { TestApi, TestTeam } from '../support/app.js';
import { startContactsApi, teamRowCounts, twoTeams } from '../support/contactsApp.js';

let app: TestApi;
let team: TestTeam;
let listId: string;
let contactId: string;

before(async () => {
  app = await startContactsApi();
  [team] = await twoTeams(app.pool);
  listId = (await app.request('POST', '/api/v1/lists', { key: team.apiKey, body: { name: 'fuzz' } })).json.list_id;
  contactId = (await app.request('POST', '/api/v1/create-contact', { key: team.apiKey, body: { phone_number: '+14155550150', first_name: 'Fuzz' } })).json.contact_id;
  await app.request('POST', '/api/v1/object-types', {
    key: team.apiKey,
    body: { type_name: 'fuzz_strict', validation_mode: 'strict', schema: { a: 'string', n: 'number' } },
  });
  await app.request('POST', '/api/v1/object-types', { key: team.apiKey, body: { type_name: 'order' } });
});

after(async () => {
  await app?.close();
});

// Values that look almost right, so that random bodies reach deep into validation.
const phoneish = fc.oneof(
  { arbitrary: fc.integer({ min: 2_000_000, max: 9_999_999 }).map((n) => `+1628${n}`), weight: 3 },
  { arbitrary: fc.constantFrom('+14155550151', '(415) 555-0152', '415.555.0153', '+44 20 7946 0958'), weight: 2 },
  { arbitrary: fc.constantFrom('+1', '+999999999999999', '0', '', ' ', '+1415555015x'), weight: 1 },
  { arbitrary: fc.string({ maxLength: 20 }), weight: 1 },
);
const pathish = fc.oneof(
  fc.constantFrom('$.id', '$.a.b', "$['x']", '$[0]', '$', '$..a', '$[*]', '$.', "$['", '$[00]', '$.external_ids.hs.property_id'),
  fc.string({ maxLength: 30 }).map((s) => `$${s}`),
  fc.string({ maxLength: 30 }),
);
const typeNameish = fc.oneof(fc.constantFrom('fuzz_strict', 'order', 'a', 'x'.repeat(65), '1abc', 'with space'), fc.string({ maxLength: 10 }));
// Strings Postgres cannot store (NUL, unpaired surrogates) mixed with ordinary characters.
const awkwardUnit = fc.constantFrom('a', 'Z', ' ', '.', '$', "'", '\u0000', '\ud800', '\udc00', '\ud83d\ude00', 'é');
const awkwardString = fc.string({ unit: awkwardUnit, maxLength: 6 });
const anyJson = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.jsonValue({ maxDepth: 2, stringUnit: awkwardUnit }));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
// Mostly plausible values, sometimes anything at all.
const valueOr = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ arbitrary: arb, weight: 6 }, { arbitrary: anyJson, weight: 1 }, { arbitrary: awkwardString, weight: 1 });
/** Records with any subset of the keys, or with at least the keys an endpoint requires. */
const someOf = <T extends Record<string, fc.Arbitrary<unknown>>>(shape: T, required: (keyof T)[]) =>
  fc.oneof(fc.record(shape, { requiredKeys: [] }), fc.record(shape, { requiredKeys: required as never[] }));
const withUnknownField = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ arbitrary: arb, weight: 6 }, { arbitrary: fc.tuple(arb, fc.string({ maxLength: 8 }), anyJson).map(([b, k, v]) => ({ ...(b as object), [k]: v })), weight: 1 });

const contactBody = someOf(
  {
    phone_number: valueOr(phoneish),
    first_name: valueOr(fc.string({ maxLength: 10 })),
    last_name: valueOr(fc.string({ maxLength: 10 })),
    email: valueOr(fc.constantFrom('a@example.com', 'b@example.org', 'bad', '')),
    age: valueOr(fc.integer({ min: -5, max: 200 })),
    title: valueOr(fc.string({ maxLength: 10 })),
  },
  ['phone_number', 'first_name'],
).chain((b) => withUnknownField(fc.constant(b)));
const validPhone = fc.integer({ min: 2_000_000, max: 9_999_999 }).map((n) => `+1628${n}`);
const nearValidContact = fc.record(
  { phone_number: validPhone, first_name: fc.string({ minLength: 1, maxLength: 8 }), last_name: fc.string({ maxLength: 8 }), age: fc.integer({ min: -1, max: 151 }) },
  { requiredKeys: ['phone_number', 'first_name'] },
);
const listBody = withUnknownField(fc.record({ name: valueOr(fc.string({ maxLength: 10 })) }, { requiredKeys: [] }));
const addBody = fc.oneof(
  contactBody,
  fc.record({ contacts: fc.array(nearValidContact, { minLength: 1, maxLength: 5 }) }),
  fc.record({ contacts: fc.oneof(fc.array(contactBody, { maxLength: 5 }), anyJson) }, { requiredKeys: [] }),
  fc.record({ contact_ids: fc.oneof(fc.array(fc.oneof(fc.uuid(), fc.constant('CONTACT'), fc.string()), { maxLength: 4 }), anyJson) }),
  fc.record({ contacts: fc.array(contactBody, { maxLength: 2 }), contact_ids: fc.array(fc.uuid(), { maxLength: 2 }) }),
);
const typeBody = someOf(
  {
    type_name: valueOr(typeNameish),
    display_name: valueOr(fc.string({ maxLength: 10 })),
    description: valueOr(fc.string({ maxLength: 10 })),
    validation_mode: valueOr(fc.constantFrom('off', 'strict', 'loose')),
    unique_by_contact: valueOr(fc.boolean()),
    schema: valueOr(fc.dictionary(fc.string({ maxLength: 5 }), fc.constantFrom('string', 'number', 'integer', 'date', 'boolean'), { maxKeys: 3 })),
  },
  ['type_name'],
);
const keyObj = valueOr(fc.record({ path: valueOr(pathish), value: valueOr(fc.oneof(fc.string({ maxLength: 5 }), fc.integer())) }, { requiredKeys: [] }));
const objectData = fc.oneof(
  fc.record({ a: fc.string({ maxLength: 4 }), n: fc.integer(), id: fc.constantFrom('1', '2', 3) }, { requiredKeys: [] }),
  fc.dictionary(fc.constantFrom('a', 'n', 'id', 'external_ids', 'zz'), anyJson, { maxKeys: 4 }),
);
const nearValidObjectBody = fc.record(
  {
    type_name: fc.constantFrom('order', 'fuzz_strict'),
    data: objectData,
    upsert_key: fc.record({ path: fc.constantFrom('$.id', '$.a', "$['n']"), value: fc.constantFrom('1', '2', 'x') }),
    unique_key: fc.record({ path: fc.constantFrom('$.a', '$.n'), value: fc.constantFrom('x', '1') }),
  },
  { requiredKeys: ['type_name', 'data'] },
);
const objectBody = someOf(
  {
    type_name: valueOr(fc.oneof(fc.constantFrom('order', 'fuzz_strict'), typeNameish)),
    type_id: valueOr(fc.oneof(fc.uuid(), fc.string({ maxLength: 5 }))),
    data: valueOr(objectData),
    name: valueOr(fc.string({ maxLength: 10 })),
    parent_id: valueOr(fc.oneof(fc.uuid(), fc.constant(null))),
    upsert_key: keyObj,
    unique_key: keyObj,
  },
  ['type_name', 'data'],
);
const query = fc.oneof(
  fc.constant(''),
  fc.record({ limit: maybe(fc.oneof(fc.integer({ min: -10, max: 1000 }).map(String), fc.string({ maxLength: 6 }))), cursor: maybe(fc.oneof(fc.string({ maxLength: 30 }), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()))) }).map(
    (q) => '?' + new URLSearchParams(Object.entries(q).filter((e): e is [string, string] => e[1] !== undefined)).toString(),
  ),
);
const pathValue = fc.oneof(fc.string({ maxLength: 20 }), fc.uuid(), phoneish, awkwardString);

/** Every UTF-8 byte percent-encoded (the standard encoder throws on unpaired surrogates). */
const pct = (v: string) => Array.from(Buffer.from(v, 'utf8'), (b) => `%${b.toString(16).padStart(2, '0')}`).join('');

type Req = { method: string; path: string; body?: unknown; rawBody?: string };
const requests: fc.Arbitrary<Req> = fc.oneof(
  contactBody.map((body) => ({ method: 'POST', path: '/api/v1/create-contact', body })),
  anyJson.map((body) => ({ method: 'POST', path: '/api/v1/create-contact', body })),
  nearValidContact.map((body) => ({ method: 'POST', path: '/api/v1/create-contact', body })),
  pathValue.map((v) => ({ method: 'GET', path: `/api/v1/get-contact/${pct(v)}` })),
  listBody.map((body) => ({ method: 'POST', path: '/api/v1/lists', body })),
  query.map((q) => ({ method: 'GET', path: `/api/v1/lists${q}` })),
  fc.tuple(fc.oneof(fc.constant('LIST'), pathValue), query).map(([id, q]) => ({ method: 'GET', path: `/api/v1/lists/${id === 'LIST' ? listId : pct(id)}${q}` })),
  listBody.map((body) => ({ method: 'PATCH', path: `/api/v1/lists/${listId}`, body })),
  addBody.map((body) => ({ method: 'POST', path: `/api/v1/lists/${listId}/contacts`, body })),
  fc.oneof(fc.record({ contact_ids: fc.oneof(fc.array(fc.oneof(fc.uuid(), fc.constant('CONTACT')), { maxLength: 3 }), anyJson) }), anyJson).map((body) => ({ method: 'DELETE', path: `/api/v1/lists/${listId}/contacts`, body })),
  typeBody.map((body) => ({ method: 'POST', path: '/api/v1/object-types', body })),
  typeBody.map((body) => ({ method: 'POST', path: '/api/v1/create-object-type', body })),
  query.map((q) => ({ method: 'GET', path: `/api/v1/object-types${q}` })),
  pathValue.map((v) => ({ method: 'GET', path: `/api/v1/object-types/by-name/${pct(v)}` })),
  objectBody.map((body) => ({ method: 'POST', path: '/api/v1/upsert-object', body })),
  nearValidObjectBody.map((body) => ({ method: 'POST', path: '/api/v1/upsert-object', body })),
  fc.string({ maxLength: 40 }).map((rawBody) => ({ method: 'POST', path: '/api/v1/upsert-object', rawBody })),
  fc.string({ maxLength: 40 }).map((rawBody) => ({ method: 'POST', path: `/api/v1/lists/${listId}/contacts`, rawBody })),
);

/** Real ids in place of placeholders, so that some requests hit existing rows. */
function withIds(value: unknown): unknown {
  if (value === 'CONTACT') return contactId;
  if (Array.isArray(value)) return value.map(withIds);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withIds(v)]));
  return value;
}

test('random requests to the contacts, lists and objects endpoints never answer 500, and a 400 writes nothing', async () => {
  await fc.assert(
    fc.asyncProperty(requests, async (r) => {
      const before = await teamRowCounts(app.pool, team.teamId);
      const res = await app.request(r.method, r.path, { key: team.apiKey, body: r.body === undefined ? undefined : withIds(r.body), rawBody: r.rawBody });
      assert.ok(res.status < 500, `${r.method} ${r.path} answered ${res.status}: ${res.text}`);
      assert.equal(res.json?.success, res.status < 300, res.text);
      if (res.status === 400) {
        assert.equal(typeof res.json.message, 'string');
        assert.deepEqual(await teamRowCounts(app.pool, team.teamId), before, `${r.method} ${r.path} wrote on a 400: ${res.text}`);
      }
    }),
    { numRuns: 300 },
  );
});
