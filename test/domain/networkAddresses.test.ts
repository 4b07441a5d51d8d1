// Which addresses an event webhook may reach: public unicast only (src/domain/networkAddresses.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isIpLiteral, nonPublicKind, parseIpv6 } from '../../src/domain/networkAddresses.js';

const REFUSED: [string, string][] = [
  ['0.0.0.0', 'unspecified'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.1.2.3', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'shared'],
  ['169.254.169.254', 'link-local'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.10', 'documentation'],
  ['198.18.0.1', 'benchmarking'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['224.0.0.251', 'multicast'],
  ['255.255.255.255', 'reserved'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['fe80::1%eth0', 'link-local'],
  ['fc00::1', 'private'],
  ['fd12:3456::1', 'private'],
  ['ff02::1', 'multicast'],
  ['64:ff9b::7f00:1', 'reserved'],
  ['::127.0.0.1', 'reserved'],
  ['2001:db8::1', 'documentation'],
  ['2001::1', 'reserved'],
  ['2002:7f00:1::', 'loopback'],
  ['2002:c0a8:101::1', 'private'],
  ['not an address', 'reserved'],
];

const PUBLIC = ['1.1.1.1', '8.8.8.8', '93.184.216.34', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '2002:0808:0808::1'];

test('loopback, private, shared, link-local, documentation, multicast and reserved addresses are refused, naming why', () => {
  for (const [address, kind] of REFUSED) assert.equal(nonPublicKind(address), kind, address);
});

test('public unicast addresses pass', () => {
  for (const address of PUBLIC) assert.equal(nonPublicKind(address), undefined, address);
});

test('IPv6 text forms parse to the same groups', () => {
  assert.deepEqual(parseIpv6('::1'), [0, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(parseIpv6('::ffff:1.2.3.4'), [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]);
  assert.deepEqual(parseIpv6('2001:DB8:0:0:1::1'), [0x2001, 0xdb8, 0, 0, 1, 0, 0, 1]);
  for (const bad of ['1::2::3', '12345::', '1:2:3:4:5:6:7:8:9', ':::', 'g::1']) assert.equal(parseIpv6(bad), undefined, bad);
});

test('IP literals are told from host names', () => {
  for (const literal of ['127.0.0.1', '[::1]', '2001:db8::1']) assert.equal(isIpLiteral(literal), true, literal);
  for (const name of ['localhost', 'example.com', '127.0.0.1.nip.io', '1.2.3']) assert.equal(isIpLiteral(name), false, name);
});
