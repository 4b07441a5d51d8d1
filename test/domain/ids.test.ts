// Name-based UUIDs (src/domain/ids.ts): the ids of batch calls, hook-run calls and
// idempotent creates are stored, so the same name must give the same id forever.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deriveIdempotentId } from '../../src/api/middleware/idempotency.js';
import { isUuid, nameBasedUuid } from '../../src/domain/ids.js';
import { batchCallId } from '../../src/services/batchEngine.js';
import { hookRunCallId } from '../../src/services/hookAutomations.js';

describe('name-based UUIDs', () => {
  test('the ids already handed out stay the same', () => {
    assert.equal(batchCallId('0b6c1b1e-8f0a-4f3e-9a53-2f4f3f8f1d10', '5a1e2c3d-4b5a-4c6d-8e7f-901a2b3c4d5e'), '4ededffd-7bd4-5cbd-ae59-51526206fbe7');
    assert.equal(hookRunCallId('7d3f0f5e-1c2b-4a39-8d4e-5f6a7b8c9d0e'), '12ff140f-0d5b-8c59-a7d1-bc10235156b2');
    const ref = { teamId: 't', endpoint: 'POST /api/v1/create-contact', key: 'k-1' };
    assert.equal(deriveIdempotentId(ref, new Date(1767225600000)), 'ddacf635-ebee-8ac9-b864-2a8943a2b040');
    assert.equal(deriveIdempotentId(ref, new Date(1767225600000), 'contact'), '056d8803-543f-89d6-a228-69d29862bb4d');
  });

  test('version 5 matches the example of RFC 9562 (Appendix A.4: www.example.com in the DNS namespace)', () => {
    const dnsNamespace = Buffer.from('6ba7b8109dad11d180b400c04fd430c8', 'hex');
    assert.equal(nameBasedUuid('www.example.com', dnsNamespace), '2ed6657d-e927-568b-95e1-2665a8aea6a2');
  });

  test('version 5 with a namespace, version 8 without; always the RFC 9562 variant', () => {
    const v5 = nameBasedUuid('a', Buffer.alloc(16));
    const v8 = nameBasedUuid('a');
    assert.match(v5, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.match(v8, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.notEqual(nameBasedUuid('b'), v8);
    assert.ok(isUuid(v5) && isUuid(v8.toUpperCase()));
    assert.ok(!isUuid(`${v8}0`) && !isUuid('not-a-uuid'));
  });
});
