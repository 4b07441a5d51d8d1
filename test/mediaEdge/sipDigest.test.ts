// The Digest check of INVITEs (src/mediaEdge/sip/digest.ts) is written by hand: it is held
// to the examples of RFC 2617 and RFC 7616, and to JsSIP's own implementation (with its own
// MD5), which is what the browsers that call the edge run.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { DigestAuthenticator, digestResponse } from '../../src/mediaEdge/sip/digest.js';

const require = createRequire(import.meta.url);
interface JsSipDigest {
  authenticate(request: { method: string; ruri: string; body?: string }, challenge: unknown, cnonce?: string): boolean;
  toString(): string;
}
const JsSipDigestAuthentication = require('jssip/lib/DigestAuthentication.js') as new (credentials: { username: string; password: string }) => JsSipDigest;
const JsSipGrammar = require('jssip/lib/Grammar.js') as { parse(input: string, rule: string): unknown };

describe('SIP Digest', () => {
  test('the response matches the examples of RFC 2617 §3.5 and RFC 7616 §3.9.1 (MD5, qop=auth)', () => {
    assert.equal(
      digestResponse({
        username: 'Mufasa',
        realm: 'testrealm@host.com',
        password: 'Circle Of Life',
        method: 'GET',
        uri: '/dir/index.html',
        nonce: 'dcd98b7102dd2f0e8b11d0f600bfb0c093',
        qop: 'auth',
        nc: '00000001',
        cnonce: '0a4f113b',
      }),
      '6629fae49393a05397450978507c4ef1',
    );
    assert.equal(
      digestResponse({
        username: 'Mufasa',
        realm: 'http-auth@example.org',
        password: 'Circle of Life',
        method: 'GET',
        uri: '/dir/index.html',
        nonce: '7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v',
        qop: 'auth',
        nc: '00000001',
        cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
      }),
      '8ca523f5e9506fed4657c9700eebdbec',
    );
  });

  test("JsSIP's answer to the edge's challenge is accepted; with another password, method or a stale nonce it is not", () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const edge = new DigestAuthenticator({ username: 'web-caller', password: 'web-caller', realm: 'edge.test' }, () => now);
    const challenge = JsSipGrammar.parse(edge.challenge(), 'WWW_Authenticate');
    const answer = (password: string) => {
      const client = new JsSipDigestAuthentication({ username: 'web-caller', password });
      assert.ok(client.authenticate({ method: 'INVITE', ruri: 'sip:agent@edge.test' }, challenge, 'f2/wE4q74E6z'));
      return client.toString();
    };
    const genuine = answer('web-caller');
    assert.equal(edge.verify(genuine, 'INVITE'), true);
    assert.equal(edge.verify(answer('not-the-password'), 'INVITE'), false);
    assert.equal(edge.verify(genuine, 'BYE'), false);
    assert.equal(edge.verify(genuine.replace(/nonce="([^".]*)\./, (_m, time: string) => `nonce="${time}1.`), 'INVITE'), false, 'a nonce the edge did not issue');
    now += 5 * 60_000 + 1;
    assert.equal(edge.verify(genuine, 'INVITE'), false, 'a nonce older than five minutes');
  });
});
