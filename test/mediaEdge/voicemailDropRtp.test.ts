// The voicemail drop over a phone call's real media: an RTP session on loopback UDP (8 kHz
// G.711 μ-law ↔ the channel's 16 kHz), its far end (test/support/rtpPeer.ts) playing a
// festival-made voicemail greeting and a beep in real time. The edge takes it for a machine,
// waits for the beep to end, and the far end hears the message only after it sent the beep.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { rms } from '../../src/mediaEdge/audio/level.js';
import { decodeMulaw } from '../../src/mediaEdge/audio/mulaw.js';
import { resample } from '../../src/mediaEdge/audio/resample.js';
import { screenAnsweredCall } from '../../src/mediaEdge/conversation/voicemailDrop.js';
import type { SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { loopbackRtp } from '../support/loopbackRtp.js';
import { spoken } from '../support/spokenAudio.js';

// A range of its own (other test files open sessions at the same time).
const rtp = loopbackRtp({ min: 47_400, max: 47_419 });

const samplesOf = (ms: number, rate = SAMPLE_RATE) => Math.round((ms * rate) / 1000);
const tone = (hz: number, ms: number, amplitude: number) => Int16Array.from({ length: samplesOf(ms) }, (_, i) => Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE)));

/** Says every line as 1 s of a 300 Hz hum. */
const hum: SpeechSynthesizer = {
  name: 'hum',
  async *synthesize() {
    yield* sliceFrames(tone(300, 1000, 6000));
  },
  warmUp: async () => undefined,
  close: async () => undefined,
};

describe('voicemail drop over RTP', () => {
  it('hears a greeting and its beep through G.711, and the message reaches the far end after the beep', async () => {
    const { session, peer } = await rtp.call({ payloadType: 0, inactivityMs: 10_000 });

    const greeting = await spoken("It's Lisa. Leave a message after the beep.");
    const line = joinFrames([new Int16Array(samplesOf(300)), greeting, new Int16Array(samplesOf(500)), tone(1000, 400, 14_000)]);
    // The first loud packet the far end receives from the edge, and when.
    let messageArrivedAt: number | undefined;
    peer.onPacket((payloadType, payload) => {
      if (messageArrivedAt === undefined && payloadType === 0 && rms(decodeMulaw(payload)) > 1000) messageArrivedAt = performance.now();
    });

    const screening = screenAnsweredCall({ channel: session.channel, synthesizer: hum, voicemailMessage: 'Hello Lisa, please call us back.' });
    await peer.play(resample(line, SAMPLE_RATE, 8000));
    const beepSentAt = performance.now();
    peer.keepAlive();
    const result = await screening;

    assert.equal(result.outcome, 'voicemail_left', JSON.stringify(result));
    assert.equal(result.detection?.verdict, 'machine');
    assert.equal(result.message?.cue, 'beep');
    assert.equal(result.message?.playedMs, 1000);
    assert.ok(messageArrivedAt !== undefined, 'the far end heard the message');
    assert.ok(messageArrivedAt >= beepSentAt, `the message arrived ${(beepSentAt - messageArrivedAt).toFixed(0)} ms before the beep was over`);
    peer.stop();
  });
});
