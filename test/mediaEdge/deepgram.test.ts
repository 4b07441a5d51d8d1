// The Deepgram adapter against a fake that speaks Deepgram's live protocol
// (test/support/fakeDeepgram.ts): the handshake it makes, the audio and control messages
// it sends, how it reads Results, and how it fails (a bad key, a close mid-stream, no answer).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { FRAME_SAMPLES } from '../../src/mediaEdge/media/channel.js';
import { DeepgramRecognizer, deepgramQuery } from '../../src/mediaEdge/speech/deepgram.js';
import { CloudSpeechError } from '../../src/mediaEdge/speech/vendorSocket.js';
import { FakeDeepgram } from '../support/fakeDeepgram.js';

/** `ms` of a 300 Hz tone as 20 ms frames (the fake only counts the audio). */
function tone(ms: number): Int16Array[] {
  return Array.from({ length: ms / 20 }, (_, f) => Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * (f * FRAME_SAMPLES + i)) / 16000))));
}

describe('Deepgram live recognition', () => {
  let fake: FakeDeepgram;
  before(async () => {
    fake = await FakeDeepgram.start('dg-secret');
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.idleTimeoutMs = 10_000;
    fake.behaviour = 'normal';
    fake.requests.length = 0;
    fake.streams = 0;
  });
  const recognizer = (overrides: { apiKey?: string; model?: string; answerTimeoutMs?: number } = {}) =>
    new DeepgramRecognizer({ apiKey: 'dg-secret', baseUrl: fake.baseUrl, connectTimeoutMs: 2_000, answerTimeoutMs: 2_000, ...overrides });

  it('streams linear16 audio with the Token header and the hint as keyterms, and answers the finals after CloseStream', async () => {
    fake.transcripts = ['My name is John Smith'];
    const session = recognizer().start({ hint: { expect: 'name', phrases: ['John Smith', "O'Neil 3rd"] } });
    const partials: string[] = [];
    session.onPartial((text) => partials.push(text));
    for (const frame of tone(800)) session.write(frame);
    const transcript = await session.finish();

    assert.equal(transcript.text, 'my name is john smith');
    assert.ok(partials.length > 0 && partials.every((p) => 'my name is john smith'.startsWith(p)), `partials: ${partials.join(' | ')}`);
    const [request] = fake.requests;
    assert.equal(request.status, 101);
    assert.equal(request.path, '/v1/listen');
    assert.equal(request.authorization, 'Token dg-secret');
    assert.equal(request.query.get('encoding'), 'linear16');
    assert.equal(request.query.get('sample_rate'), '16000');
    assert.equal(request.query.get('channels'), '1');
    assert.equal(request.query.get('model'), 'nova-3');
    assert.equal(request.query.get('interim_results'), 'true');
    assert.equal(request.query.get('endpointing'), '300');
    assert.deepEqual(request.query.getAll('keyterm'), ['john smith', "o'neil three rd"]);
    assert.equal(request.audioBytes, 800 * 16 * 2);
    assert.deepEqual(request.controls, ['CloseStream']);
  });

  it('older models get single keywords, with the words of the expected kind of answer', () => {
    const query = deepgramQuery('nova-2', { expect: 'yes_no', phrases: ['sure thing'] });
    assert.deepEqual(query.getAll('keywords'), ['sure', 'thing', 'yes', 'no']);
    assert.equal(query.getAll('keyterm').length, 0);
    assert.deepEqual(deepgramQuery('nova-3', { expect: 'free' }).getAll('keyterm'), []);
    // A long phrase list is cut to 50 terms and 1000 characters, in order.
    const many = Array.from({ length: 200 }, (_, i) => `customer number ${'x'.repeat(i % 7)} ${i}`);
    const terms = deepgramQuery('nova-3', { expect: 'name', phrases: many }).getAll('keyterm');
    assert.ok(terms.length > 10 && terms.length <= 50 && terms.join('').length <= 1000, `${terms.length} terms, ${terms.join('').length} characters`);
    assert.equal(terms[0], 'customer number zero');
    assert.ok(deepgramQuery('nova-2', { expect: 'name', phrases: many }).getAll('keywords').length <= 50);
  });

  it('audio written before the socket opens is sent once it does, in order', async () => {
    fake.transcripts = ['yes'];
    const session = recognizer().start({ hint: { expect: 'yes_no' } });
    for (const frame of tone(200)) session.write(frame); // synchronously: the socket is still connecting
    assert.deepEqual(await session.finish(), { text: 'yes' });
    assert.equal(fake.requests[0].audioBytes, 200 * 16 * 2);
  });

  it('a stream waiting for the caller (the prompt still playing) is kept open with KeepAlive messages', async () => {
    fake.transcripts = ['no'];
    fake.idleTimeoutMs = 300; // shortened from Deepgram's 10 s
    const session = new DeepgramRecognizer({ apiKey: 'dg-secret', baseUrl: fake.baseUrl, connectTimeoutMs: 2_000, answerTimeoutMs: 2_000, keepAliveMs: 100 }).start();
    await new Promise((resolve) => setTimeout(resolve, 700));
    for (const frame of tone(200)) session.write(frame);
    assert.deepEqual(await session.finish(), { text: 'no' });
    const { controls } = fake.requests[0];
    assert.ok(controls.filter((c) => c === 'KeepAlive').length >= 2, controls.join(' '));
    assert.equal(controls.at(-1), 'CloseStream');
  });

  it('a bad key is refused with HTTP 401: finish() rejects naming Deepgram’s error, not the key', async () => {
    const session = recognizer({ apiKey: 'wrong-key' }).start();
    for (const frame of tone(100)) session.write(frame);
    await assert.rejects(session.finish(), (err: Error) => {
      assert.ok(err instanceof CloudSpeechError, err.message);
      assert.match(err.message, /^Deepgram: .*refused the connection: HTTP 401 .*INVALID_AUTH/);
      assert.doesNotMatch(err.message, /wrong-key/);
      return true;
    });
    assert.equal(fake.requests[0].status, 401);
    assert.equal(fake.requests[0].authorization, 'Token wrong-key');
  });

  it('a stream Deepgram closes mid-way fails the utterance', async () => {
    fake.behaviour = 'close_mid_stream';
    const session = recognizer().start();
    for (const frame of tone(400)) session.write(frame);
    await assert.rejects(session.finish(), /Deepgram: the stream closed before the answer \(1011 NET-0001/);
  });

  it('no answer after CloseStream fails the utterance after the answer timeout', async () => {
    fake.behaviour = 'silent';
    const session = recognizer({ answerTimeoutMs: 150 }).start();
    for (const frame of tone(100)) session.write(frame);
    await assert.rejects(session.finish(), /Deepgram: no answer within 150 ms of the end of speech/);
  });

  it('an unreachable Deepgram fails the utterance (connection refused)', async () => {
    const closed = await FakeDeepgram.start();
    const baseUrl = closed.baseUrl;
    await closed.close();
    const session = new DeepgramRecognizer({ apiKey: 'k', baseUrl, connectTimeoutMs: 2_000, answerTimeoutMs: 2_000 }).start();
    await assert.rejects(session.finish(), /Deepgram: cannot connect to ws:\/\/127\.0\.0\.1:\d+\/v1\/listen/);
  });

  it('abort drops the utterance: finish() rejects and the stream is closed', async () => {
    const session = recognizer().start();
    for (const frame of tone(100)) session.write(frame);
    session.abort();
    await assert.rejects(session.finish(), /aborted/);
  });
});
