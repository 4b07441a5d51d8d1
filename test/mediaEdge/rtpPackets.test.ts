// The pure parts of a phone call's media (src/mediaEdge/rtp/): RTP packets from hostile
// datagrams, G.711 A-law and μ-law against the standard's table values, RFC 4733 telephone
// events, the RTP port range, and the G.711 SDP offer/answer.
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { describe, it } from 'node:test';
import { alawFromLinear, decodeAlaw, encodeAlaw, linearFromAlaw, linearFromMulaw, mulawFromLinear } from '../../src/mediaEdge/audio/mulaw.js';
import { Downsampler2, Upsampler2 } from '../../src/mediaEdge/audio/halfband.js';
import { g711Answer, g711Offer, parseG711Answer } from '../../src/mediaEdge/rtp/g711Sdp.js';
import { RtpPortAllocator, RtpPortsExhaustedError } from '../../src/mediaEdge/rtp/portAllocator.js';
import { buildRtpPacket, parseRtpPacket, type RtpPacket } from '../../src/mediaEdge/rtp/rtpPacket.js';
import { buildTelephoneEvent, digitFromSipInfo, parseTelephoneEvent, TelephoneEventReceiver, telephoneEventPayloads } from '../../src/mediaEdge/rtp/telephoneEvent.js';

const packet: RtpPacket = { marker: true, payloadType: 0, sequenceNumber: 65_535, timestamp: 0xfffffff0, ssrc: 0xdeadbeef, payload: Uint8Array.of(1, 2, 3, 4) };

describe('RTP packets', () => {
  it('a built packet parses back to the same fields', () => {
    const parsed = parseRtpPacket(buildRtpPacket(packet));
    assert.ok(!('drop' in parsed));
    assert.deepEqual({ ...parsed, payload: [...parsed.payload] }, { ...packet, payload: [1, 2, 3, 4] });
  });

  it('CSRCs, a header extension and padding are stepped over to the payload', () => {
    const header = Buffer.from(buildRtpPacket({ ...packet, payload: new Uint8Array(0) }));
    header[0] = 0x80 | 0x20 | 0x10 | 2; // padding, extension, 2 CSRCs
    const csrcs = Buffer.alloc(8, 7);
    const extension = Buffer.from([0xbe, 0xde, 0x00, 0x01, 9, 9, 9, 9]);
    const datagram = Buffer.concat([header, csrcs, extension, Buffer.from([5, 6, 7]), Buffer.from([0, 0, 3])]);
    const parsed = parseRtpPacket(datagram);
    assert.ok(!('drop' in parsed));
    assert.deepEqual([...parsed.payload], [5, 6, 7]);
  });

  it('hostile datagrams are refused with a reason, never thrown over', () => {
    const base = buildRtpPacket(packet);
    const cases: [string, Uint8Array][] = [
      ['too_short', new Uint8Array(0)],
      ['too_short', base.subarray(0, 11)],
      ['version', Buffer.from([0x40, ...base.subarray(1)])],
      ['rtcp', Buffer.from([0x80, 200, ...base.subarray(2)])],
      ['csrc_overrun', Buffer.from([0x8f, ...base.subarray(1)])],
      ['extension_overrun', Buffer.from([0x90, ...base.subarray(1, 12)])],
      ['extension_overrun', Buffer.from([0x90, ...base.subarray(1, 12), 0xbe, 0xde, 0xff, 0xff])],
      ['padding', Buffer.from([0xa0, ...base.subarray(1, 12), 1, 2, 0])],
      ['padding', Buffer.from([0xa0, ...base.subarray(1, 12), 1, 2, 200])],
    ];
    for (const [reason, datagram] of cases) assert.deepEqual(parseRtpPacket(datagram), { drop: reason }, `${reason}: ${Buffer.from(datagram).toString('hex')}`);
    // Random bytes: a packet or a reason, whatever they are.
    for (let i = 0; i < 2000; i++) {
      const junk = Uint8Array.from({ length: i % 40 }, () => Math.floor(Math.random() * 256));
      const parsed = parseRtpPacket(junk);
      assert.ok('drop' in parsed || parsed.payload.length <= junk.length);
    }
  });
});

describe('G.711', () => {
  it('A-law codes of the standard: silence 0xD5, ±full scale 0xAA/0x2A, and values sox agrees with', () => {
    const table: [number, number][] = [
      [0, 0xd5],
      [8, 0xd5],
      [100, 0xd3],
      [1000, 0xfa],
      [-1000, 0x7a],
      [10_000, 0xb6],
      [-10_000, 0x36],
      [20_000, 0xa6],
      [32_767, 0xaa],
      [-32_768, 0x2a],
    ];
    for (const [linear, code] of table) assert.equal(alawFromLinear(linear), code, `A-law of ${linear}`);
    assert.equal(linearFromAlaw(0xd5), 8);
    assert.equal(linearFromAlaw(0x55), -8);
    assert.equal(linearFromAlaw(0xaa), 32_256);
    assert.equal(linearFromAlaw(0x2a), -32_256);
  });

  it('μ-law codes of the standard: silence 0xFF, ±full scale 0x80/0x00', () => {
    for (const [linear, code] of [[0, 0xff], [1000, 0xce], [-1000, 0x4e], [10_000, 0x9c], [32_767, 0x80], [-32_768, 0x00]] as const) {
      assert.equal(mulawFromLinear(linear), code, `μ-law of ${linear}`);
    }
    assert.equal(linearFromMulaw(0x80), 32_124);
    assert.equal(linearFromMulaw(0x00), -32_124);
  });

  it('every A-law code decodes to a value that encodes back to it, and a sample comes back within its step', () => {
    for (let code = 0; code < 256; code++) assert.equal(alawFromLinear(linearFromAlaw(code)), code, `code ${code.toString(16)}`);
    for (let x = -32_768; x <= 32_767; x += 3) {
      const back = linearFromAlaw(alawFromLinear(x));
      const step = Math.max(16, 2 ** Math.ceil(Math.log2(Math.abs(x) + 1)) / 16);
      if (Math.abs(back - x) > step) assert.fail(`${x} came back as ${back}`);
    }
    const tone = Int16Array.from({ length: 800 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)));
    assert.deepEqual([...encodeAlaw(tone)], [...tone].map(alawFromLinear));
    assert.deepEqual([...decodeAlaw(encodeAlaw(tone))], [...tone].map((x) => linearFromAlaw(alawFromLinear(x))));
  });
});

describe('8 kHz ↔ 16 kHz half-band converters', () => {
  const tone = (f: number, rate: number, n: number) => Int16Array.from({ length: n }, (_, i) => Math.round(10_000 * Math.sin((2 * Math.PI * f * i) / rate)));
  const level = (x: ArrayLike<number>) => Math.sqrt(Array.from(x).reduce((s, v) => s + v * v, 0) / x.length);
  const gainDb = (out: ArrayLike<number>, input: ArrayLike<number>) => 20 * Math.log10(level(out) / level(input));
  /** Through a converter 20 ms at a time (exactly twice or half each piece), the first 100 ms dropped. */
  function through(convert: { push(x: Int16Array): Int16Array }, x: Int16Array, piece: number, factor: number): Int16Array {
    const out: number[] = [];
    for (let at = 0; at < x.length; at += piece) {
      const y = convert.push(x.subarray(at, at + piece));
      assert.equal(y.length, piece * factor);
      out.push(...y);
    }
    return Int16Array.from(out.slice(out.length / 10));
  }
  /** Amplitude of frequency f in x (one bin of a DFT). */
  const amplitude = (x: Int16Array, f: number, rate: number) => {
    let re = 0;
    let im = 0;
    for (let i = 0; i < x.length; i++) {
      re += x[i] * Math.cos((2 * Math.PI * f * i) / rate);
      im += x[i] * Math.sin((2 * Math.PI * f * i) / rate);
    }
    return (2 * Math.hypot(re, im)) / x.length;
  };

  it('16 → 8 kHz: flat over the telephone band, at least 45 dB down from 4.6 kHz (no aliasing)', () => {
    for (const f of [300, 1000, 3000, 3400]) {
      const x = tone(f, 16_000, 16_000);
      assert.ok(Math.abs(gainDb(through(new Downsampler2(), x, 320, 0.5), x)) < 0.2, `${f} Hz`);
    }
    for (const f of [4600, 5000, 6000, 7500]) {
      const x = tone(f, 16_000, 16_000);
      assert.ok(gainDb(through(new Downsampler2(), x, 320, 0.5), x) < -45, `${f} Hz`);
    }
  });

  it('8 → 16 kHz: flat over the telephone band, images at least 45 dB down', () => {
    for (const f of [300, 1000, 3000, 3400]) {
      const x = tone(f, 8000, 8000);
      const y = through(new Upsampler2(), x, 160, 2);
      assert.ok(Math.abs(gainDb(y, x)) < 0.2, `${f} Hz`);
      assert.ok(20 * Math.log10(amplitude(y, 8000 - f, 16_000) / amplitude(y, f, 16_000)) < -45, `image of ${f} Hz`);
    }
  });

  it('an odd piece is carried over: the output always stays half the input so far', () => {
    const down = new Downsampler2();
    assert.equal(down.push(new Int16Array(7)).length, 3);
    assert.equal(down.push(new Int16Array(7)).length, 4);
  });
});

describe('RFC 4733 telephone events', () => {
  it('every key round-trips; flash and short payloads are not keys', () => {
    for (const digit of '0123456789*#ABCD') {
      assert.deepEqual(parseTelephoneEvent(buildTelephoneEvent({ digit, end: true, volume: 10, duration: 800 })), { digit, end: true, volume: 10, duration: 800 });
    }
    assert.equal(parseTelephoneEvent(Uint8Array.of(16, 0x80, 0, 160)), undefined);
    assert.equal(parseTelephoneEvent(Uint8Array.of(1, 0x80)), undefined);
    assert.throws(() => buildTelephoneEvent({ digit: 'x', end: false, volume: 0, duration: 0 }), /not a keypad digit/);
  });

  it('a key press is its updates then three end packets, and the receiver reports it once', () => {
    const payloads = telephoneEventPayloads('5', { durationMs: 100 });
    assert.equal(payloads.length, 4 + 3);
    assert.deepEqual(payloads.slice(-3).map((p) => parseTelephoneEvent(p)!.end), [true, true, true]);
    assert.equal(parseTelephoneEvent(payloads.at(-1)!)!.duration, 800);
    const receiver = new TelephoneEventReceiver();
    const heard = [...payloads, ...payloads].map((p) => receiver.receive(1, 8000, p)).filter(Boolean);
    assert.deepEqual(heard, ['5']);
    // The same key again is a new event (a new timestamp); only end packets arriving (the start lost) still make the digit.
    assert.deepEqual(payloads.slice(-3).map((p) => receiver.receive(1, 9600, p)).filter(Boolean), ['5']);
    assert.equal(receiver.receive(1, 11_200, Uint8Array.of(1, 2)), undefined);
  });
});

describe('keys in SIP INFO', () => {
  it('application/dtmf-relay and application/dtmf carry one key; anything else is none', () => {
    const rows: [string, string, string | undefined][] = [
      ['application/dtmf-relay', 'Signal=5\r\nDuration=160\r\n', '5'],
      ['Application/DTMF-Relay; charset=utf-8', 'signal= #\nduration=100', '#'],
      ['application/dtmf-relay', 'Signal=11\r\nDuration=160', '#'],
      ['application/dtmf-relay', 'Signal=10', '*'],
      ['application/dtmf-relay', 'Signal=d', 'D'],
      ['application/dtmf', '7\r\n', '7'],
      ['application/dtmf-relay', 'Signal=16\r\nDuration=160', undefined],
      ['application/dtmf-relay', 'Duration=160', undefined],
      ['application/dtmf-relay', 'Signal=55', undefined],
      ['text/plain', 'Signal=5', undefined],
      ['application/dtmf', '', undefined],
    ];
    for (const [type, body, digit] of rows) assert.equal(digitFromSipInfo(type, body), digit, `${type}: ${JSON.stringify(body)}`);
  });
});

describe('RTP port range', () => {
  it('hands out even ports, reuses a released one later, and says so when all are taken', async () => {
    const probe = await bindSomeEvenPort();
    const base = probe.address().port;
    probe.close();
    const allocator = new RtpPortAllocator({ min: base, max: base + 5 }); // 3 even ports
    const ports = [await allocator.bind('127.0.0.1'), await allocator.bind('127.0.0.1'), await allocator.bind('127.0.0.1')];
    assert.deepEqual(ports.map((p) => p.port), [base, base + 2, base + 4]);
    await assert.rejects(allocator.bind('127.0.0.1'), (err: unknown) => err instanceof RtpPortsExhaustedError && /no free RTP port in RTP_PORT_RANGE/.test(err.message));
    ports[1].release();
    ports[1].release();
    assert.equal(allocator.used, 2);
    const again = await allocator.bind('127.0.0.1');
    assert.equal(again.port, base + 2);
    for (const p of [ports[0], ports[2], again]) p.release();
    assert.throws(() => new RtpPortAllocator({ min: 41_001, max: 41_001 }), /no even port/);
  });

  it('skips a port another program holds', async () => {
    const squatter = await bindSomeEvenPort();
    const port = squatter.address().port;
    const allocator = new RtpPortAllocator({ min: port, max: port + 3 });
    const bound = await allocator.bind('127.0.0.1');
    assert.equal(bound.port, port + 2);
    bound.release();
    squatter.close();
  });
});

/** A socket on a free even port with the even port above it free too (tried at random in 20000-29998). */
async function bindSomeEvenPort(): Promise<Socket> {
  for (;;) {
    const port = 20_000 + 2 * Math.floor(Math.random() * 5000);
    const socket = createSocket('udp4');
    const ok = await new Promise<boolean>((resolve) => {
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) return socket;
    socket.close();
  }
}

const offerWith = (media: string[], connection = 'c=IN IP4 192.0.2.10') =>
  ['v=0', 'o=- 1 1 IN IP4 192.0.2.10', 's=-', connection, 't=0 0', ...media].join('\r\n') + '\r\n';

describe('G.711 SDP offer/answer', () => {
  it('our offer lists PCMU, PCMA and telephone-event at 20 ms, and parses as a far end would answer it', () => {
    const offer = g711Offer({ address: '203.0.113.5', port: 40_000, sessionId: 42 });
    assert.match(offer, /^m=audio 40000 RTP\/AVP 0 8 101\r$/m);
    assert.match(offer, /^a=rtpmap:101 telephone-event\/8000\r$/m);
    assert.match(offer, /^a=ptime:20\r$/m);
    assert.match(offer, /^c=IN IP4 203\.0\.113\.5\r$/m);
    assert.deepEqual(parseG711Answer(offer), { address: '203.0.113.5', port: 40_000, payloadType: 0, telephoneEventPayloadType: 101 });
  });

  it("an answer takes the offer's first G.711 law and its telephone-event payload type", () => {
    const offer = offerWith(['m=audio 5004 RTP/AVP 8 0 96', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:96 telephone-event/8000', 'a=fmtp:96 0-16', 'a=sendrecv']);
    const answer = g711Answer(offer, { address: '198.51.100.1', port: 40_002, sessionId: 7 });
    assert.ok(!('error' in answer));
    assert.deepEqual(answer.remote, { address: '192.0.2.10', port: 5004, payloadType: 8, telephoneEventPayloadType: 96 });
    assert.match(answer.sdp, /^m=audio 40002 RTP\/AVP 8 96\r$/m);
    assert.match(answer.sdp, /^a=rtpmap:8 PCMA\/8000\r$/m);
    assert.match(answer.sdp, /^a=rtpmap:96 telephone-event\/8000\r$/m);
    assert.doesNotMatch(answer.sdp, /PCMU/);
  });

  it('an offer with only PCMA is answered in PCMA without digits; a media-level c= wins; a video stream is declined', () => {
    const offer = offerWith(['m=audio 6000 RTP/AVP 8', 'c=IN IP4 192.0.2.99', 'a=sendonly', 'm=video 6002 RTP/AVP 96', 'a=rtpmap:96 H264/90000']);
    const answer = g711Answer(offer, { address: '198.51.100.1', port: 40_004, sessionId: 1 });
    assert.ok(!('error' in answer));
    assert.deepEqual(answer.remote, { address: '192.0.2.99', port: 6000, payloadType: 8 });
    assert.match(answer.sdp, /^m=audio 40004 RTP\/AVP 8\r$/m);
    assert.match(answer.sdp, /^a=recvonly\r$/m);
    assert.match(answer.sdp, /^m=video 0 RTP\/AVP 96\r$/m);
  });

  it('an offer with only telephone-event, with other codecs, SRTP only, no connection or no SDP at all is refused with a reason', () => {
    const local = { address: '198.51.100.1', port: 40_006, sessionId: 1 };
    const refusals: [string, RegExp][] = [
      [offerWith(['m=audio 6000 RTP/AVP 101', 'a=rtpmap:101 telephone-event/8000']), /no G\.711/],
      [offerWith(['m=audio 6000 RTP/AVP 9 18', 'a=rtpmap:9 G722/8000', 'a=rtpmap:18 G729/8000']), /no G\.711/],
      [offerWith(['m=audio 6000 RTP/SAVP 0', 'a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:x']), /no plain RTP/],
      [offerWith(['m=audio 6000 RTP/AVP 0'], ''), /no connection address/],
      [offerWith(['m=video 6000 RTP/AVP 96']), /no audio/],
      ['hello', /not an SDP/],
      [offerWith(['m=audio 0 RTP/AVP 0']), /no plain RTP/],
      // A dynamic payload type named PCMU is not the static 0 the RemoteMedia carries.
      [offerWith(['m=audio 6000 RTP/AVP 0', 'a=rtpmap:0 opus/48000/2']), /no G\.711/],
    ];
    for (const [offer, reason] of refusals) {
      const answer = g711Answer(offer, local);
      assert.ok('error' in answer, `refused: ${offer}`);
      assert.match(answer.error, reason);
      const parsed = parseG711Answer(offer);
      assert.ok('error' in parsed);
    }
  });
});
