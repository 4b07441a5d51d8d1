// The endpointer on recorded speech (Festival's voice, made at test time) with silence and
// noise around it: where speech starts and ends, what must not start it, and the limits.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FRAME_MS, SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { Endpointer, END_OF_UTTERANCE_SILENCE_MS, MAX_UTTERANCE_MS, PAUSE_MS, type EndpointEvent } from '../../src/mediaEdge/audio/endpointing.js';
import { sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { whiteNoise } from '../support/loopbackChannel.js';
import { onLine, spoken } from '../support/spokenAudio.js';

/** Every start and end (and pause, with `pauses`), frame i arriving at (i + 1) × 20 ms. */
function events(samples: Int16Array, endpointer = new Endpointer(), { pauses = false } = {}): EndpointEvent[] {
  const found: EndpointEvent[] = [];
  sliceFrames(samples).forEach((frame, i) => {
    const event = endpointer.push(frame, (i + 1) * FRAME_MS);
    if (event && (pauses || event.type !== 'speech_pause')) found.push(event);
  });
  return found;
}

const ms = (samples: Int16Array) => (samples.length * 1000) / SAMPLE_RATE;

function assertNear(actual: number, expected: number, tolerance: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual} ms, expected ${expected} ± ${tolerance} ms`);
}

describe('endpointing', () => {
  it('finds where a spoken sentence starts and ends, and decides the end one hangover later', async () => {
    const speech = await spoken('Yes, that is correct.');
    const found = events(onLine(speech, 1000, 1500, -60));
    assert.deepEqual(
      found.map((e) => e.type),
      ['speech_start', 'speech_end'],
    );
    const [start, end] = found as [Extract<EndpointEvent, { type: 'speech_start' }>, Extract<EndpointEvent, { type: 'speech_end' }>];
    assertNear(start.at, 1000, 60, 'start');
    assertNear(end.at, 1000 + ms(speech), 80, 'end');
    assert.equal(end.reason, 'silence');
    assertNear(end.detectedAt - end.at, END_OF_UTTERANCE_SILENCE_MS, FRAME_MS, 'hangover');
  });

  it('keeps digits said one by one in one utterance (the pauses between them are shorter than the hangover)', async () => {
    const speech = await spoken('one nine eight five, zero four, zero three');
    const found = events(onLine(speech, 600, 1000, -60));
    assert.deepEqual(
      found.map((e) => e.type),
      ['speech_start', 'speech_end'],
    );
    assertNear(found[1].at, 600 + ms(speech), 80, 'end');
  });

  it('hears two answers with a second of silence between them as two utterances', async () => {
    const first = await spoken('yes');
    const second = await spoken('my name is john smith');
    const line = onLine(new Int16Array([...onLine(first, 500, 1000), ...second]), 0, 800, -60);
    const found = events(line);
    assert.deepEqual(
      found.map((e) => e.type),
      ['speech_start', 'speech_end', 'speech_start', 'speech_end'],
    );
    assertNear(found[2].at, 500 + ms(first) + 1000, 60, 'second start');
  });

  it('reports each pause inside an utterance once, PAUSE_MS into the quiet, and the one before the end too; gaps between words are no pause', async () => {
    const first = await spoken('yes');
    const second = await spoken('my name is john smith');
    // 300 ms of quiet after "yes": a pause, not an end (the hangover is 500 ms).
    const line = onLine(new Int16Array([...onLine(first, 500, 300), ...second]), 0, 1000, -60);
    const found = events(line, new Endpointer(), { pauses: true });
    assert.deepEqual(
      found.map((e) => e.type),
      ['speech_start', 'speech_pause', 'speech_pause', 'speech_end'],
    );
    const [, afterYes, beforeEnd, end] = found as [EndpointEvent, Extract<EndpointEvent, { type: 'speech_pause' }>, Extract<EndpointEvent, { type: 'speech_pause' }>, Extract<EndpointEvent, { type: 'speech_end' }>];
    assertNear(afterYes.at, 500 + ms(first), 80, 'the first pause: where "yes" ended');
    assertNear(afterYes.detectedAt - afterYes.at, PAUSE_MS, FRAME_MS, 'decided PAUSE_MS into the quiet');
    assert.equal(beforeEnd.at, end.at, 'the last pause is where the utterance ends');
    assertNear(end.detectedAt - beforeEnd.detectedAt, END_OF_UTTERANCE_SILENCE_MS - PAUSE_MS, FRAME_MS, 'the end a hangover after the speech');
  });

  it('finds speech over steady line noise 20 dB below it (the floor follows the noise from the first frame)', async () => {
    const speech = await spoken('Yes, that is correct.');
    const found = events(onLine(speech, 1500, 1000, -40));
    assert.deepEqual(
      found.map((e) => e.type),
      ['speech_start', 'speech_end'],
    );
    assertNear(found[0].at, 1500, 80, 'start');
  });

  it('does not start on low or steady noise, nor on a click', () => {
    for (const level of [-70, -55, -45, -35]) {
      assert.deepEqual(events(whiteNoise(5 * SAMPLE_RATE, level)), [], `noise at ${level} dBFS`);
    }
    const click = onLine(whiteNoise((60 * SAMPLE_RATE) / 1000, -15), 1000, 1000);
    assert.deepEqual(events(click), [], 'a 60 ms click');
  });

  it('ends an utterance that never stops at the maximum length', () => {
    const tone = Int16Array.from({ length: 17 * SAMPLE_RATE }, (_, i) => Math.round(6000 * Math.sin((2 * Math.PI * 300 * i) / SAMPLE_RATE)));
    const found = events(onLine(tone, 1000, 0));
    assert.equal(found[0].type, 'speech_start');
    const end = found[1];
    assert.ok(end.type === 'speech_end' && end.reason === 'max_length');
    assertNear(end.detectedAt - found[0].at, MAX_UTTERANCE_MS, FRAME_MS, 'utterance length');
  });

  it('counts audio, not arrival times: frames arriving in bursts are decided at the same frames', async () => {
    const line = onLine(await spoken('that is right'), 800, 800, -60);
    const decisions = (stamp: (i: number) => number) => {
      const endpointer = new Endpointer();
      return sliceFrames(line).flatMap((frame, i) => {
        const event = endpointer.push(frame, stamp(i));
        return event ? [`${event.type}@${i}`] : [];
      });
    };
    const steady = decisions((i) => (i + 1) * FRAME_MS);
    // Five frames at a time, all stamped with the burst's arrival.
    const bursty = decisions((i) => Math.ceil((i + 1) / 5) * 5 * FRAME_MS);
    assert.deepEqual(steady.map((d) => d.split('@')[0]), ['speech_start', 'speech_pause', 'speech_end']);
    assert.deepEqual(bursty, steady);
  });
});
