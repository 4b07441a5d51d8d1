// The SIP trunk's settings (src/mediaEdge/sip/trunk/trunkSettings.ts): defaults, each bad
// value named at start-up (also through the media edge's config), the allowed sources.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/index.js';
import { loadMediaEdgeConfig } from '../../src/mediaEdge/server.js';
import { allowedSourcesOf, parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';

const EDGE_ENV = { MEDIA_EDGE_SECRET: 'a-secret-of-sixteen-chars' };

describe('SIP trunk settings', () => {
  test('without SIP_TRUNK_URI there is no trunk', () => {
    assert.equal(parseTrunkSettings({}), undefined);
  });

  test('defaults: listen on 127.0.0.1:5060, the public address is the listen address, RTP 40000-40999, UDP on 5060', () => {
    assert.deepEqual(parseTrunkSettings({ SIP_TRUNK_URI: 'sip:sip.carrier.example' }), {
      trunk: { uri: 'sip:sip.carrier.example', host: 'sip.carrier.example', port: 5060, transport: 'udp' },
      listen: { host: '127.0.0.1', port: 5060 },
      publicAddress: { host: '127.0.0.1', port: 5060 },
      rtpPortRange: { min: 40000, max: 40999 },
    });
  });

  test('every setting read: TCP trunk, credentials, listen on all addresses with a public address, a range, CIDRs', () => {
    const settings = parseTrunkSettings({
      SIP_TRUNK_URI: 'sip:pbx.example.org:5080;transport=TCP',
      SIP_TRUNK_USERNAME: 'alice',
      SIP_TRUNK_PASSWORD: 'secret',
      SIP_LISTEN: '0.0.0.0:5062',
      SIP_PUBLIC_ADDRESS: '203.0.113.5',
      RTP_PORT_RANGE: '20000-20999',
      SIP_TRUNK_ALLOWED_SOURCES: '54.172.60.0/30, 2001:db8::/32,198.51.100.7',
    });
    assert.deepEqual(settings, {
      trunk: { uri: 'sip:pbx.example.org:5080;transport=TCP', host: 'pbx.example.org', port: 5080, transport: 'tcp' },
      credentials: { username: 'alice', password: 'secret' },
      listen: { host: '0.0.0.0', port: 5062 },
      publicAddress: { host: '203.0.113.5', port: 5062 },
      rtpPortRange: { min: 20000, max: 20999 },
      allowedSources: ['54.172.60.0/30', '2001:db8::/32', '198.51.100.7'],
    });
  });

  const bad: [Record<string, string>, string, RegExp][] = [
    [{ SIP_TRUNK_URI: 'http://carrier.example' }, 'SIP_TRUNK_URI', /must be a SIP URI/],
    [{ SIP_TRUNK_URI: 'sip:carrier.example;transport=tls' }, 'SIP_TRUNK_URI', /only udp and tcp/],
    [{ SIP_TRUNK_URI: 'sips:carrier.example' }, 'SIP_TRUNK_URI', /TLS/],
    [{ SIP_TRUNK_URI: 'sip:carrier.example:70000' }, 'SIP_TRUNK_URI', /port/],
    [{ SIP_LISTEN: 'localhost:5060' }, 'SIP_LISTEN', /IP address/],
    [{ SIP_LISTEN: '127.0.0.1' }, 'SIP_LISTEN', /port is missing/],
    [{ SIP_LISTEN: '127.0.0.1:0' }, 'SIP_LISTEN', /not 0/],
    [{ SIP_PUBLIC_ADDRESS: 'a b' }, 'SIP_PUBLIC_ADDRESS', /host:port/],
    [{ SIP_TRUNK_URI: 'sip:carrier.example', SIP_LISTEN: '0.0.0.0:5060' }, 'SIP_PUBLIC_ADDRESS', /must be set/],
    [{ RTP_PORT_RANGE: '40001-40999' }, 'RTP_PORT_RANGE', /even/],
    [{ RTP_PORT_RANGE: '41000-40000' }, 'RTP_PORT_RANGE', /min below max/],
    [{ RTP_PORT_RANGE: '40000' }, 'RTP_PORT_RANGE', /min-max/],
    [{ RTP_PORT_RANGE: '80-100' }, 'RTP_PORT_RANGE', /1024-65535/],
    [{ SIP_TRUNK_ALLOWED_SOURCES: '10.0.0.0/8,carrier.example' }, 'SIP_TRUNK_ALLOWED_SOURCES', /carrier\.example/],
    [{ SIP_TRUNK_ALLOWED_SOURCES: '10.0.0.0/33' }, 'SIP_TRUNK_ALLOWED_SOURCES', /CIDR/],
    [{ SIP_TRUNK_USERNAME: 'alice' }, 'SIP_TRUNK_PASSWORD', /together/],
    [{ SIP_SOURCE_REQUESTS_PER_SECOND: '0' }, 'SIP_SOURCE_REQUESTS_PER_SECOND', /1 to 100000/],
    [{ SIP_SOURCE_REQUESTS_PER_SECOND: '2.5' }, 'SIP_SOURCE_REQUESTS_PER_SECOND', /whole number/],
    [{ SIP_SOURCE_REQUESTS_PER_SECOND: 'lots' }, 'SIP_SOURCE_REQUESTS_PER_SECOND', /whole number/],
  ];
  for (const [env, variable, detail] of bad) {
    test(`${JSON.stringify(env)} fails naming ${variable}`, () => {
      assert.throws(
        () => parseTrunkSettings(env),
        (err: unknown) => err instanceof ConfigError && err.variable === variable && detail.test(err.message),
      );
    });
  }

  test('SIP_SOURCE_REQUESTS_PER_SECOND is read when set (the default, 20, applies in the agent otherwise)', () => {
    assert.equal(parseTrunkSettings({ SIP_TRUNK_URI: 'sip:carrier.example', SIP_SOURCE_REQUESTS_PER_SECOND: '50' })?.sourceRequestsPerSecond, 50);
    assert.equal(parseTrunkSettings({ SIP_TRUNK_URI: 'sip:carrier.example' })?.sourceRequestsPerSecond, undefined);
  });

  test("the media edge's config fails at start-up on a bad trunk setting, naming it", () => {
    assert.throws(
      () => loadMediaEdgeConfig({ ...EDGE_ENV, SIP_TRUNK_URI: 'sip:carrier.example', RTP_PORT_RANGE: '5-4' }),
      (err: unknown) => err instanceof ConfigError && err.variable === 'RTP_PORT_RANGE',
    );
    assert.doesNotThrow(() => loadMediaEdgeConfig({ ...EDGE_ENV, SIP_TRUNK_URI: 'sip:carrier.example' }));
  });

  test("allowed sources: the CIDRs given, else the trunk host's addresses at start-up", async () => {
    const given = await allowedSourcesOf(parseTrunkSettings({ SIP_TRUNK_URI: 'sip:carrier.example', SIP_TRUNK_ALLOWED_SOURCES: '54.172.60.0/30,198.51.100.7' })!);
    assert.equal(given.list.check('54.172.60.3'), true);
    assert.equal(given.list.check('54.172.60.4'), false);
    assert.equal(given.list.check('198.51.100.7'), true);
    const resolved = await allowedSourcesOf(parseTrunkSettings({ SIP_TRUNK_URI: 'sip:localhost:5080' })!);
    assert.ok(resolved.described.includes('127.0.0.1') || resolved.described.includes('::1'), resolved.described.join(','));
    assert.equal(resolved.list.check('127.0.0.1') || resolved.list.check('::1', 'ipv6'), true);
    assert.equal(resolved.list.check('10.1.2.3'), false);
    await assert.rejects(
      allowedSourcesOf(parseTrunkSettings({ SIP_TRUNK_URI: 'sip:trunk.invalid' })!),
      (err: unknown) => err instanceof ConfigError && err.variable === 'SIP_TRUNK_URI' && /trunk\.invalid.*does not resolve/.test(err.message),
    );
  });
});
