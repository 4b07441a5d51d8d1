// What one caller address may hold of the media edge, over real WebSockets: sockets per address
// and in total (HTTP 503 + Retry-After at the handshake), INVITEs that reach admission per
// minute, and refused admissions (503s included) counted across reconnects (SIP 503 +
// Retry-After, admission never asked). Another address is another caller: Linux routes all of
// 127.0.0.0/8 on loopback, so a client bound to 127.0.0.2 stands for a second machine.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { test } from 'node:test';
import { createLogger } from '../../src/logging/logger.js';
import type { AdmissionResult, CallAdmission } from '../../src/mediaEdge/admission.js';
import { addressKey, callerAddress, type CallerLimitsOptions } from '../../src/mediaEdge/callerLimits.js';
import { getHeader, type SipRequest, type SipResponse } from '../../src/mediaEdge/sip/message.js';
import { loadMediaEdgeConfig, startMediaEdge, type MediaEdge } from '../../src/mediaEdge/server.js';
import { FakeMediaAnswerer } from '../support/fakeMedia.js';
import { SipTestClient, type RefusedConnection } from '../support/sipClient.js';
import { eventually } from '../support/eventually.js';

const CALL_ID = '5a1c7e2b-9d3f-4e6a-8b0c-1d2e3f4a5b6c';
const ONE = { localAddress: '127.0.0.1' };
const OTHER = { localAddress: '127.0.0.2' };
const THIRD = { localAddress: '127.0.0.3' };

/** Every token admission was asked about, in order. */
const asked: string[] = [];
const admission: CallAdmission = {
  admit(invite: SipRequest): Promise<AdmissionResult> {
    const token = getHeader(invite, 'X-Session-Token') ?? '(none)';
    asked.push(token);
    if (token === 'wst_good') return Promise.resolve({ callId: CALL_ID, credential: 'session_token' });
    // The service did not answer in time: nothing spent, but it counts against the address.
    if (token === 'wst_unreachable') return Promise.resolve({ reject: 503, reason: 'Service unavailable' });
    return Promise.resolve({ reject: 404, reason: 'Session token not found' });
  },
};

async function withEdge(limits: Partial<CallerLimitsOptions>, run: (edge: MediaEdge, clients: SipTestClient[]) => Promise<void>): Promise<void> {
  asked.length = 0;
  const edge = await startMediaEdge({ wsUrl: 'ws://127.0.0.1:0/ws', admission, media: new FakeMediaAnswerer(), logger: createLogger('silent'), callerLimits: limits });
  const clients: SipTestClient[] = [];
  try {
    await run(edge, clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await edge.close();
  }
}

const isRefused = (c: SipTestClient | RefusedConnection): c is RefusedConnection => !(c instanceof SipTestClient);

async function connected(url: string, options: { localAddress: string }, clients: SipTestClient[]): Promise<SipTestClient> {
  const c = await SipTestClient.attempt(url, options);
  assert.ok(!isRefused(c), `${options.localAddress} refused with ${isRefused(c) ? c.status : ''}`);
  clients.push(c);
  return c;
}

async function refused(url: string, options: { localAddress: string }): Promise<RefusedConnection> {
  const c = await SipTestClient.attempt(url, options);
  if (!isRefused(c)) {
    await c.close();
    assert.fail(`${options.localAddress} was let in`);
  }
  return c;
}

const inviteWith = (c: SipTestClient, token: string): Promise<SipResponse> => c.finalResponse(c.invite({ headers: { 'X-Session-Token': token } }).invite);

test('sockets past the per-address cap and past the total are refused 503 with Retry-After; a closed socket frees its place', async () => {
  await withEdge({ maxSocketsPerAddress: 3, maxSockets: 4 }, async (edge, clients) => {
    for (let i = 0; i < 3; i++) await connected(edge.url, ONE, clients);
    const fourth = await refused(edge.url, ONE);
    assert.deepEqual(fourth, { status: 503, retryAfter: '5' });

    // Another caller still gets through, and takes the last place in total.
    const other = await connected(edge.url, OTHER, clients);
    assert.equal((await other.finalResponse(other.request('OPTIONS'))).status, 200);
    assert.deepEqual(await refused(edge.url, THIRD), { status: 503, retryAfter: '5' }, 'the total cap holds for a new address');
    assert.equal(edge.refusedConnections, 2);

    await clients.shift()!.close();
    await eventually(() => edge.connections === 3, 'the closed socket is gone');
    await connected(edge.url, THIRD, clients);
    assert.equal(edge.connections, 4);
  });
});

test('many sockets from one address sending bad tokens in a loop: sockets held at the cap, admissions at the failure budget across reconnects (503s counted); another address still gets through', async () => {
  await withEdge({ maxSocketsPerAddress: 3, maxFailedAdmissions: 6 }, async (edge, clients) => {
    const limited: SipResponse[] = [];
    let upgradesRefused = 0;
    for (let round = 0; round < 3; round++) {
      const open: SipTestClient[] = [];
      for (let i = 0; i < 6; i++) {
        const c = await SipTestClient.attempt(edge.url, ONE);
        if (isRefused(c)) {
          assert.deepEqual(c, { status: 503, retryAfter: '5' });
          upgradesRefused++;
        } else open.push(c);
      }
      assert.equal(open.length, 3, 'sockets per address capped');
      for (const c of open) {
        for (let k = 0; k < 3; k++) {
          // The first INVITE of each socket in the first round meets a service that does not answer (503).
          const response = await inviteWith(c, round === 0 && k === 0 ? 'wst_unreachable' : `wst_guess_${round}_${k}`);
          if (getHeader(response, 'Retry-After') !== undefined) limited.push(response);
          else assert.ok([404, 503].includes(response.status), String(response.status));
        }
      }
      await Promise.all(open.map((c) => c.close()));
      await eventually(() => edge.connections === 0, 'every socket of the round closed');
    }
    assert.equal(upgradesRefused, 9);
    assert.equal(asked.length, 6, 'admission was asked only until the address spent its failure budget');
    assert.equal(asked.filter((t) => t === 'wst_unreachable').length, 2, 'the 503s counted as failures');
    assert.equal(limited.length, 27 - 6);
    for (const response of limited) {
      assert.equal(response.status, 503);
      assert.match(response.reason, /Too many refused calls from this address/);
      const retryAfter = Number(getHeader(response, 'Retry-After'));
      assert.ok(retryAfter >= 1 && retryAfter <= 600, `Retry-After ${retryAfter}`);
    }

    // Even a good token from that address waits; another address is admitted at once.
    const again = await connected(edge.url, ONE, clients);
    assert.equal((await inviteWith(again, 'wst_good')).status, 503);
    const other = await connected(edge.url, OTHER, clients);
    const dialog = other.invite({ headers: { 'X-Session-Token': 'wst_good' } });
    assert.equal((await other.answered(dialog)).status, 200);
    assert.equal(asked.length, 7);
  });
});

test('INVITEs that reach admission are rate-limited per address (SIP 503 + Retry-After), across reconnects; another address is not', async () => {
  await withEdge({ admissionsPerMinute: 4, maxFailedAdmissions: 1000 }, async (edge, clients) => {
    const first = await connected(edge.url, ONE, clients);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await inviteWith(first, `wst_guess_${i}`)).status);
    assert.deepEqual(statuses, [404, 404, 404, 404]);
    const limited = await inviteWith(first, 'wst_guess_5');
    assert.equal(limited.status, 503);
    assert.match(limited.reason, /Too many calls from this address/);
    const retryAfter = Number(getHeader(limited, 'Retry-After'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);

    const reconnected = await connected(edge.url, ONE, clients);
    assert.equal((await inviteWith(reconnected, 'wst_guess_6')).status, 503, 'a new socket does not reset the rate');
    const other = await connected(edge.url, OTHER, clients);
    assert.equal((await inviteWith(other, 'wst_guess_7')).status, 404);
    assert.equal(asked.length, 5);
  });
});

test('caller addresses: IPv4 on a dual-stack socket is IPv4, IPv6 counts by /64, X-Forwarded-For only when trusted and then its last entry', () => {
  assert.equal(addressKey('::ffff:10.0.0.1'), '10.0.0.1');
  assert.equal(addressKey('203.0.113.7'), '203.0.113.7');
  assert.equal(addressKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:db8:1:2::9'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:0db8:0001:0002:ffff::1%eth0'), '2001:db8:1:2::/64');
  assert.equal(addressKey('2001:db8::'), '2001:db8:0:0::/64');
  assert.equal(addressKey('::1'), '0:0:0:0::/64');
  assert.equal(addressKey('::ffff:1.2.3.4'), '1.2.3.4');
  assert.equal(addressKey('64:ff9b::1.2.3.4'), '64:ff9b:0:0::/64');

  const req = (remoteAddress: string, forwarded?: string) => ({ socket: { remoteAddress }, headers: forwarded ? { 'x-forwarded-for': forwarded } : {} }) as unknown as IncomingMessage;
  assert.equal(callerAddress(req('10.0.0.5', '198.51.100.1')), '10.0.0.5', 'not trusted by default');
  assert.equal(callerAddress(req('10.0.0.5', '192.0.2.9, 198.51.100.1'), true), '198.51.100.1', 'the entry the proxy appended');
  assert.equal(callerAddress(req('10.0.0.5', 'garbage'), true), '10.0.0.5', 'not an address: the peer counts');
  assert.equal(callerAddress(req('10.0.0.5'), true), '10.0.0.5');
});

test('the limits come from the environment with their defaults; a bad value stops start-up naming its variable', () => {
  const secret = { MEDIA_EDGE_SECRET: 'caller-limits-test-secret' };
  const config = loadMediaEdgeConfig(secret);
  assert.equal(config.MEDIA_EDGE_MAX_SOCKETS, 1000);
  assert.equal(config.MEDIA_EDGE_MAX_SOCKETS_PER_ADDRESS, 32);
  assert.equal(config.MEDIA_EDGE_ADMISSIONS_PER_ADDRESS_PER_MINUTE, 120);
  assert.equal(config.MEDIA_EDGE_MAX_FAILED_ADMISSIONS_PER_ADDRESS, 100);
  assert.equal(config.MEDIA_EDGE_FAILED_ADMISSIONS_WINDOW_SECONDS, 600);
  assert.equal(config.MEDIA_EDGE_SEND_BUDGET_BYTES, 128 * 1024);
  assert.equal(config.MEDIA_EDGE_SIP_MAX_HEADERS, 128);
  assert.equal(config.MEDIA_EDGE_SIP_MAX_VIA, 70);
  assert.equal(config.MEDIA_EDGE_TRUST_PROXY, false);
  assert.equal(loadMediaEdgeConfig({ ...secret, MEDIA_EDGE_MAX_SOCKETS_PER_ADDRESS: '4', MEDIA_EDGE_TRUST_PROXY: 'true' }).MEDIA_EDGE_MAX_SOCKETS_PER_ADDRESS, 4);
  const names = [
    'MEDIA_EDGE_MAX_SOCKETS',
    'MEDIA_EDGE_MAX_SOCKETS_PER_ADDRESS',
    'MEDIA_EDGE_ADMISSIONS_PER_ADDRESS_PER_MINUTE',
    'MEDIA_EDGE_MAX_FAILED_ADMISSIONS_PER_ADDRESS',
    'MEDIA_EDGE_FAILED_ADMISSIONS_WINDOW_SECONDS',
    'MEDIA_EDGE_SEND_BUDGET_BYTES',
    'MEDIA_EDGE_SIP_MAX_HEADERS',
    'MEDIA_EDGE_SIP_MAX_VIA',
  ];
  for (const name of names) {
    for (const bad of ['0', '-3', '2.5', 'many']) {
      assert.throws(() => loadMediaEdgeConfig({ ...secret, [name]: bad }), (err: Error) => err.message.includes(name), `${name}=${bad}`);
    }
  }
  assert.throws(() => loadMediaEdgeConfig({ ...secret, MEDIA_EDGE_TRUST_PROXY: 'yes' }), /MEDIA_EDGE_TRUST_PROXY/);
});
