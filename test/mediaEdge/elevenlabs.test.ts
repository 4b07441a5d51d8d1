// The ElevenLabs adapter against a fake that speaks the stream-input protocol
// (test/support/fakeElevenLabs.ts): the handshake and messages it sends, the audio it turns
// into the channel's 16 kHz frames from pcm_16000 and from μ-law at 8 kHz (the phone's
// format), and how it fails (a bad key, a close mid-stream, no answer).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { joinFrames } from '../../src/mediaEdge/audio/frames.js';
import { dbfs } from '../../src/mediaEdge/audio/level.js';
import { FRAME_SAMPLES } from '../../src/mediaEdge/media/channel.js';
import { ElevenLabsSynthesizer, type ElevenLabsOutputFormat } from '../../src/mediaEdge/speech/elevenlabs.js';
import { CloudSpeechError } from '../../src/mediaEdge/speech/vendorSocket.js';
import { FakeElevenLabs, fakeSpeech, MS_PER_CHARACTER, TONE_AMPLITUDE } from '../support/fakeElevenLabs.js';

async function collect(synthesizer: ElevenLabsSynthesizer, text: string, signal?: AbortSignal): Promise<Int16Array[]> {
  const frames: Int16Array[] = [];
  for await (const frame of synthesizer.synthesize(text, { signal })) frames.push(frame);
  return frames;
}

describe('ElevenLabs streaming synthesis', () => {
  let fake: FakeElevenLabs;
  before(async () => {
    fake = await FakeElevenLabs.start('xi-secret');
  });
  after(async () => {
    await fake.close();
  });
  beforeEach(() => {
    fake.behaviour = 'normal';
    fake.requests.length = 0;
  });
  const synthesizer = (overrides: { apiKey?: string; outputFormat?: ElevenLabsOutputFormat; answerTimeoutMs?: number } = {}) =>
    new ElevenLabsSynthesizer({ apiKey: 'xi-secret', baseUrl: fake.baseUrl, voiceId: 'voice-1', modelId: 'eleven_flash_v2_5', connectTimeoutMs: 2_000, answerTimeoutMs: 2_000, ...overrides });

  it('sends the opening space with voice settings, the line and the empty end message, and plays pcm_16000 as it is', async () => {
    const text = 'Hello, this is the agent.';
    const frames = await collect(synthesizer(), text);

    const [request] = fake.requests;
    assert.equal(request.status, 101);
    assert.equal(request.path, '/v1/text-to-speech/voice-1/stream-input');
    assert.equal(request.apiKeyHeader, 'xi-secret');
    assert.equal(request.query.get('model_id'), 'eleven_flash_v2_5');
    assert.equal(request.query.get('output_format'), 'pcm_16000');
    assert.equal(request.messages.length, 3);
    assert.equal(request.messages[0].text, ' ');
    assert.deepEqual(Object.keys(request.messages[0].voice_settings as object).sort(), ['similarity_boost', 'stability']);
    assert.equal(request.messages[0].xi_api_key, undefined, 'the key rides in the header only');
    assert.equal(request.messages[1].text, `${text} `);
    assert.deepEqual(request.messages[2], { text: '' });

    assert.ok(frames.every((f) => f.length === FRAME_SAMPLES));
    const expected = fakeSpeech(text, 16000);
    assert.equal(frames.length, Math.ceil(expected.length / FRAME_SAMPLES));
    assert.deepEqual(joinFrames(frames).subarray(0, expected.length), expected, 'the samples, unchanged across odd-sized chunks');
  });

  it('ulaw_8000 (the phone’s format) is asked for, decoded and resampled to the channel’s 16 kHz frames', async () => {
    const text = 'Press one for sales.';
    const frames = await collect(synthesizer({ outputFormat: 'ulaw_8000' }), text);
    assert.equal(fake.requests[0].query.get('output_format'), 'ulaw_8000');
    const samples = joinFrames(frames);
    const expectedMs = text.length * MS_PER_CHARACTER;
    assert.ok(Math.abs((samples.length / 16) - expectedMs) <= 40, `${samples.length / 16} ms of audio for ${expectedMs} ms of speech`);
    // The tone's level survives μ-law and resampling (a sine's RMS is 3 dB under its peak).
    const middle = samples.subarray(samples.length / 4, (3 * samples.length) / 4);
    const expectedDbfs = 20 * Math.log10(TONE_AMPLITUDE / 32768) - 3.01;
    assert.ok(Math.abs(dbfs(middle) - expectedDbfs) < 0.5, `level ${dbfs(middle).toFixed(2)} dBFS, expected ${expectedDbfs.toFixed(2)}`);
  });

  it('a bad key is refused with HTTP 401: the line throws naming the refusal, not the key', async () => {
    await assert.rejects(collect(synthesizer({ apiKey: 'nope-key' }), 'Hello there.'), (err: Error) => {
      assert.ok(err instanceof CloudSpeechError, err.message);
      assert.match(err.message, /^ElevenLabs: .*refused the connection: HTTP 401 .*invalid_api_key/);
      assert.doesNotMatch(err.message, /nope-key/);
      return true;
    });
  });

  it('a stream closed mid-line throws after the audio that came', async () => {
    fake.behaviour = 'close_mid_stream';
    const frames: Int16Array[] = [];
    await assert.rejects(
      (async () => {
        for await (const frame of synthesizer().synthesize('A rather long line that takes several chunks to say.')) frames.push(frame);
      })(),
      /ElevenLabs: the stream closed before the end of the line \(1011 Internal server error\)/,
    );
    assert.ok(frames.length > 0, 'the first chunk was played');
  });

  it('no audio within the answer timeout throws', async () => {
    fake.behaviour = 'silent';
    await assert.rejects(collect(synthesizer({ answerTimeoutMs: 150 }), 'Hello there.'), /ElevenLabs: no audio within 150 ms/);
  });

  it('an abort ends the line early without an error', async () => {
    fake.behaviour = 'silent';
    const stop = new AbortController();
    const lines = collect(synthesizer(), 'Hello there.', stop.signal);
    setTimeout(() => stop.abort(), 50);
    assert.deepEqual(await lines, []);
  });

  it('nothing to say makes no connection', async () => {
    assert.deepEqual(await collect(synthesizer(), ' ...! '), []);
    assert.equal(fake.requests.length, 0);
  });
});
