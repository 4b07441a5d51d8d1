// The SIP message parser and serializer: what JsSIP sends, compact forms, folded and
// multiple headers, Content-Length and bodies, malformed input; and round-trip properties.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  canonicalHeaderName,
  createResponse,
  getHeader,
  getHeaderValues,
  parseCSeq,
  parseNameAddr,
  parseSipMessage,
  parseVia,
  serializeSipMessage,
  SipParseError,
  tagOf,
  topViaBranch,
  type SipMessage,
  type SipRequest,
} from '../../src/mediaEdge/sip/message.js';

// An INVITE as JsSIP 3.x sends it (WSS Via with a .invalid host, Contact with transport=ws).
const JSSIP_INVITE = [
  'INVITE sip:agent@media-edge.localhost SIP/2.0',
  'Via: SIP/2.0/WSS 7ad2bq3m9l1e.invalid;branch=z9hG4bK6155307',
  'Max-Forwards: 69',
  'To: <sip:agent@media-edge.localhost>',
  'From: <sip:web-caller@media-edge.localhost>;tag=ecr5th6i8u',
  'Call-ID: o8hv3t0a2k1bm7v4tp8d',
  'CSeq: 8342 INVITE',
  'X-Session-Token: wst_abc',
  'X-Participant-Identity: Ada Lovelace, PhD',
  'Contact: <sip:m3hu0lq4@7ad2bq3m9l1e.invalid;transport=ws;ob>',
  'Content-Type: application/sdp',
  'Session-Expires: 90',
  'Allow: INVITE,ACK,CANCEL,BYE,UPDATE,MESSAGE,OPTIONS,REFER,INFO,NOTIFY',
  'Supported: ice,replaces,outbound',
  'User-Agent: JsSIP 3.13.8',
  'Content-Length: 16',
  '',
  'v=0\r\ns=é\r\nt=0 0',
].join('\r\n');

test('parses a JsSIP INVITE: start line, headers in order, Content-Length counts UTF-8 bytes', () => {
  const m = parseSipMessage(JSSIP_INVITE) as SipRequest;
  assert.equal(m.kind, 'request');
  assert.equal(m.method, 'INVITE');
  assert.equal(m.uri, 'sip:agent@media-edge.localhost');
  assert.equal(getHeader(m, 'x-session-token'), 'wst_abc');
  assert.equal(getHeader(m, 'X-Participant-Identity'), 'Ada Lovelace, PhD', 'unknown headers are not split at commas');
  assert.equal(m.body, 'v=0\r\ns=é\r\nt=0 0'.slice(0, 15), 'é is two bytes: 16 bytes are 15 characters');
  assert.deepEqual(getHeaderValues(m, 'Supported'), ['ice', 'replaces', 'outbound']);
  assert.equal(topViaBranch(m), 'z9hG4bK6155307');
  assert.deepEqual(parseVia(getHeader(m, 'Via')!), { protocol: 'SIP/2.0/WSS', sentBy: '7ad2bq3m9l1e.invalid', params: { branch: 'z9hG4bK6155307' } });
  assert.equal(tagOf(getHeader(m, 'From')), 'ecr5th6i8u');
  assert.deepEqual(parseNameAddr(getHeader(m, 'Contact')!), { uri: 'sip:m3hu0lq4@7ad2bq3m9l1e.invalid;transport=ws;ob', params: {} });
  assert.deepEqual(parseCSeq(getHeader(m, 'CSeq')!), { seq: 8342, method: 'INVITE' });
});

test('compact header names expand; folded lines join; several Via values split in order', () => {
  const text = [
    'BYE sip:edge@127.0.0.1:5070;transport=ws SIP/2.0',
    'v: SIP/2.0/WSS a.invalid;branch=z9hG4bKone, SIP/2.0/WS proxy.example;branch=z9hG4bKtwo',
    'Via: SIP/2.0/TCP third.example;branch=z9hG4bKthree',
    'f: "Ada, the caller" <sip:ada@x>;tag=1',
    't: <sip:agent@x>',
    '  ;tag=2',
    'i: abc@x',
    'CSeq: 2 BYE',
    'l: 0',
    '',
    '',
  ].join('\r\n');
  const m = parseSipMessage(text);
  assert.deepEqual(
    getHeaderValues(m, 'Via').map((v) => parseVia(v)?.params.branch),
    ['z9hG4bKone', 'z9hG4bKtwo', 'z9hG4bKthree'],
  );
  assert.equal(getHeader(m, 'Call-ID'), 'abc@x');
  assert.equal(getHeader(m, 'i'), 'abc@x');
  assert.equal(getHeader(m, 'To'), '<sip:agent@x> ;tag=2');
  assert.equal(tagOf(getHeader(m, 'To')), '2');
  assert.deepEqual(parseNameAddr(getHeader(m, 'From')!), { displayName: 'Ada, the caller', uri: 'sip:ada@x', params: { tag: '1' } });
  assert.deepEqual(m.headers.map((h) => h.name), ['Via', 'Via', 'From', 'To', 'Call-ID', 'CSeq', 'Content-Length']);
});

test('without Content-Length (allowed over WebSocket) the body is the rest of the message', () => {
  const m = parseSipMessage('SIP/2.0 200 OK\r\nVia: SIP/2.0/WS h;branch=z9hG4bKx\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\nCall-ID: x\r\nCSeq: 1 INVITE\r\n\r\nv=0\r\n');
  assert.equal(m.kind, 'response');
  assert.equal(m.kind === 'response' && m.status, 200);
  assert.equal(m.body, 'v=0\r\n');
});

test('malformed messages: unanswerable ones carry no request, answerable ones carry it for a 400', () => {
  const unanswerable = ['', 'hello', '\u0000\u0001', 'INVITE sip:a@b SIP/2.0\r\nno colon here\r\n\r\n', 'GET / HTTP/1.1\r\nHost: x\r\n\r\n', 'SIP/2.0 999 Nope\r\n\r\n'];
  for (const text of unanswerable) {
    assert.throws(
      () => parseSipMessage(text),
      (err: unknown) => err instanceof SipParseError && err.request === undefined,
      JSON.stringify(text),
    );
  }
  const head = 'OPTIONS sip:a@b SIP/2.0\r\nVia: SIP/2.0/WS h;branch=z9hG4bKx\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>\r\nCall-ID: x\r\n';
  const answerable = [`${head}CSeq: 1 INVITE\r\n\r\n`, `${head}CSeq: 1 OPTIONS\r\nContent-Length: 10\r\n\r\nshort`, `${head}CSeq: 1 OPTIONS\r\nContent-Length: -1\r\n\r\n`, `${head}CSeq: x OPTIONS\r\n\r\n`];
  for (const text of answerable) {
    assert.throws(
      () => parseSipMessage(text),
      (err: unknown) => err instanceof SipParseError && err.request?.method === 'OPTIONS',
      JSON.stringify(text),
    );
  }
  assert.throws(() => parseSipMessage(`OPTIONS sip:a@b SIP/2.0\r\nFrom: <sip:a@b>;tag=1\r\n\r\n`), (err: unknown) => err instanceof SipParseError && !err.request, 'missing Via: nothing to answer to');
});

test('createResponse copies every Via, From, Call-ID and CSeq, and tags To (not on 100)', () => {
  const invite = parseSipMessage(JSSIP_INVITE) as SipRequest;
  const trying = createResponse(invite, 100, { toTag: 'abc' });
  assert.equal(getHeader(trying, 'To'), '<sip:agent@media-edge.localhost>');
  const ok = createResponse(invite, 200, { toTag: 'abc', body: 'v=0\r\n' });
  assert.equal(getHeader(ok, 'To'), '<sip:agent@media-edge.localhost>;tag=abc');
  assert.equal(getHeader(ok, 'Via'), getHeader(invite, 'Via'));
  assert.equal(getHeader(ok, 'CSeq'), '8342 INVITE');
  const text = serializeSipMessage(ok);
  assert.match(text, /^SIP\/2\.0 200 OK\r\n/);
  assert.match(text, /\r\nContent-Length: 5\r\n\r\nv=0\r\n$/);
  assert.equal(canonicalHeaderName('www-authenticate'), 'WWW-Authenticate');
  assert.equal(canonicalHeaderName('X-Custom'), 'X-Custom');
});

// ---------------------------------------------------------------- limits

const OPTIONS_HEAD = ['OPTIONS sip:a@b SIP/2.0', 'From: <sip:a@b>;tag=1', 'To: <sip:c@d>', 'Call-ID: big', 'CSeq: 1 OPTIONS'];
const withHeaders = (...lines: string[]) => [...OPTIONS_HEAD, ...lines, '', ''].join('\r\n');

const tooLarge = (err: unknown): SipRequest => {
  assert.ok(err instanceof SipParseError, String(err));
  assert.equal(err.status, 513);
  assert.ok(err.request, 'the request can be answered');
  return err.request;
};
const isTooLarge = (err: unknown): boolean => Boolean(tooLarge(err));

test('a 60 KB OPTIONS with 30,000 compact Via entries is refused 513, and the answer echoes only the first 70 Vias', () => {
  const vias = Array.from({ length: 30_000 }, (_, i) => (i === 0 ? 'SIP/2.0/WS top.invalid;branch=z9hG4bKtop' : 'x')).join(',');
  const text = withHeaders(`v: ${vias}`);
  assert.ok(text.length > 60_000);
  let request: SipRequest | undefined;
  assert.throws(
    () => parseSipMessage(text),
    (err: unknown) => {
      request = tooLarge(err);
      return true;
    },
  );
  const answer = serializeSipMessage(createResponse(request!, 513, { toTag: 't' }));
  assert.equal(getHeaderValues(parseSipMessage(answer), 'Via').length, 70);
  assert.equal(topViaBranch(parseSipMessage(answer)), 'z9hG4bKtop', 'the sender\'s own Via leads');
  assert.ok(answer.length < 1500, `answer of ${answer.length} bytes to a request of ${text.length}`);
  // 70 entries over several Via headers are still fine; 71 are not.
  assert.equal(getHeaderValues(parseSipMessage(withHeaders(`Via: ${Array(35).fill('SIP/2.0/WS h').join(',')}`, `v: ${Array(35).fill('SIP/2.0/WS h').join(',')}`)), 'Via').length, 70);
  assert.throws(() => parseSipMessage(withHeaders(`Via: ${Array(35).fill('SIP/2.0/WS h').join(',')}`, `v: ${Array(36).fill('SIP/2.0/WS h').join(',')}`)), isTooLarge);
});

test('a message with more than 128 headers is refused 513 with only the echoed headers; the caps are settable', () => {
  const via = 'Via: SIP/2.0/WS h;branch=z9hG4bKx';
  const padding = (n: number) => Array.from({ length: n }, (_, i) => `X-Pad-${i}: ${i}`);
  assert.equal(parseSipMessage(withHeaders(via, ...padding(123))).headers.length, 128);
  assert.throws(
    () => parseSipMessage(withHeaders(via, ...padding(124))),
    (err: unknown) => {
      assert.deepEqual(tooLarge(err).headers.map((h) => h.name), ['Via', 'From', 'To', 'Call-ID', 'CSeq']);
      return true;
    },
  );
  assert.throws(() => parseSipMessage(withHeaders(via, ...padding(2)), { maxHeaders: 6, maxViaEntries: 70 }), isTooLarge);
  assert.throws(() => parseSipMessage(withHeaders(`${via}, SIP/2.0/WS proxy`), { maxHeaders: 128, maxViaEntries: 1 }), isTooLarge);
  // A response past the caps has nothing to answer: the socket is closed instead.
  assert.throws(
    () => parseSipMessage(`SIP/2.0 200 OK\r\n${via}\r\n${padding(200).join('\r\n')}\r\n\r\n`),
    (err: unknown) => err instanceof SipParseError && err.request === undefined,
  );
});

test('folded header lines are joined in linear work: twice the continuation lines, about twice the characters trimmed', () => {
  // The work is counted, not timed: joining line by line re-trimmed the whole value each time.
  const folded = (lines: number) => withHeaders('Via: SIP/2.0/WS h;branch=z9hG4bKx', 'X-Folded: start', ...Array<string>(lines).fill(' a'));
  const trim = String.prototype.trim;
  let trimmed = 0;
  const charactersTrimmed = (text: string): number => {
    trimmed = 0;
    String.prototype.trim = function (this: string) {
      trimmed += this.length;
      return trim.call(this);
    };
    try {
      const message = parseSipMessage(text);
      assert.equal(getHeader(message, 'X-Folded')!.length, 'start'.length + 2 * (text.match(/\r\n a/g) ?? []).length);
    } finally {
      String.prototype.trim = trim;
    }
    return trimmed;
  };
  const small = charactersTrimmed(folded(4000));
  const large = charactersTrimmed(folded(8000));
  assert.ok(large / small < 2.5, `8,000 lines trimmed ${large} characters, 4,000 lines ${small}`);
});

// ---------------------------------------------------------------- properties

// One character of any script (whole graphemes: no lone surrogates, which UTF-8 cannot carry).
const anyChar = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 });
const tokenChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.!%*_+`\'~'.split(''));
const token = fc.string({ unit: tokenChar, minLength: 1, maxLength: 12 });
// Header names: long enough not to be compact forms, never Content-Length (the serializer writes it).
const headerName = fc.oneof(
  fc.constantFrom('Via', 'From', 'To', 'Call-ID', 'CSeq', 'Contact', 'Allow', 'Supported', 'User-Agent', 'X-Session-Token', 'X-Participant-Identity'),
  fc.string({ unit: tokenChar, minLength: 2, maxLength: 12 }).map((n) => `X-${n}`),
);
// Values: printable text of any script without line breaks, trimmed (the parser trims).
const headerValue = fc
  .string({ unit: fc.oneof(fc.constantFrom(' ', ',', ';', '"', '<', '>', ':', '='), anyChar, fc.constantFrom('é', 'ß', '漢', '🙂')), maxLength: 40 })
  .map((v) => v.replace(/[\r\n\u0000-\u001f\u007f]/g, '').trim());
const extraHeaders = fc.array(fc.tuple(headerName, headerValue).map(([name, value]) => ({ name, value })), { maxLength: 8 });
const body = fc.string({ unit: fc.oneof(anyChar, fc.constantFrom('\r\n', '\n', 'é', '🙂', '\r\n\r\n')), maxLength: 200 });
const required = (method: string) =>
  fc.tuple(token, token, fc.integer({ min: 0, max: 2 ** 31 - 1 })).map(([branch, tag, seq]) => [
    { name: 'Via', value: `SIP/2.0/WSS h.invalid;branch=z9hG4bK${branch}` },
    { name: 'From', value: `<sip:a@b>;tag=${tag}` },
    { name: 'To', value: '<sip:c@d>' },
    { name: 'Call-ID', value: `${branch}@${tag}` },
    { name: 'CSeq', value: `${seq} ${method}` },
  ]);

const request = fc
  .tuple(token, fc.webUrl().map((u) => `sip:${u.replace(/^https?:\/\//, '').replace(/\s/g, '')}`), extraHeaders, body)
  .chain(([method, uri, extra, b]) =>
    required(method).map((headers): SipMessage => ({ kind: 'request', method, uri, headers: [...headers, ...extra], body: b })),
  );
const response = fc
  .tuple(fc.integer({ min: 100, max: 699 }), fc.string({ unit: tokenChar, maxLength: 20 }), token, extraHeaders, body)
  .chain(([status, reason, method, extra, b]) =>
    required(method).map((headers): SipMessage => ({ kind: 'response', status, reason, headers: [...headers, ...extra], body: b })),
  );

const withLength = (m: SipMessage): SipMessage => ({ ...m, headers: [...m.headers, { name: 'Content-Length', value: String(Buffer.byteLength(m.body)) }] });

test('property: parse ∘ serialize is the identity on requests and responses (plus the Content-Length written)', () => {
  fc.assert(
    fc.property(fc.oneof(request, response), (message) => {
      assert.deepEqual(parseSipMessage(serializeSipMessage(message)), withLength(message));
    }),
    { numRuns: 400 },
  );
});

test('property: serialize ∘ parse ∘ serialize is serialize (the text is stable)', () => {
  fc.assert(
    fc.property(fc.oneof(request, response), (message) => {
      const text = serializeSipMessage(message);
      assert.equal(serializeSipMessage(parseSipMessage(text)), text);
    }),
    { numRuns: 400 },
  );
});

test('property: the parser never throws anything but SipParseError, whatever the input', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.oneof(request, response).map(serializeSipMessage).chain((t) => fc.integer({ min: 0, max: t.length }).map((n) => t.slice(0, n)))), (text) => {
      try {
        parseSipMessage(text);
      } catch (err) {
        assert.ok(err instanceof SipParseError, String(err));
      }
    }),
    { numRuns: 1000 },
  );
});
