// pocketsphinx's warm decoders for free speech (pocketsphinxDecoders.ts, pocketsphinx_worker.py)
// on real audio: answers one after another on one decoder loaded once, each heard exactly as
// a new pocketsphinx_continuous hears it; an abandoned answer or a dead worker; the setting.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { findExecutable } from '../../src/mediaEdge/speech/engineProcess.js';
import type { AnswerHint } from '../../src/mediaEdge/speech/interfaces.js';
import { PocketsphinxRecognizer } from '../../src/mediaEdge/speech/pocketsphinx.js';
import { WarmDecoders } from '../../src/mediaEdge/speech/pocketsphinxDecoders.js';
import { createSpeechEngines, SpeechConfigError } from '../../src/mediaEdge/speech/speechEngines.js';
import { eventually } from '../support/eventually.js';
import { onLine, spoken } from '../support/spokenAudio.js';

const python = findExecutable(process.env.PYTHON3 ?? 'python3');
const converse: AnswerHint = { expect: 'free', latency: 'low' };

async function recognise(recognizer: PocketsphinxRecognizer, text: string, hint: AnswerHint): Promise<string> {
  const session = recognizer.start({ hint });
  for (const frame of sliceFrames(onLine(await spoken(text), 200, 300))) session.write(frame);
  return (await session.finish()).text;
}

/** The warm decoders this process runs now: its python children running the worker (or `script`). */
function workerPids(script = 'pocketsphinx_worker.py'): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(script)) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

describe('pocketsphinx warm decoders', () => {
  const warm = new PocketsphinxRecognizer({ python, warmDecoders: 2 });
  const perUtterance = new PocketsphinxRecognizer();
  after(() => Promise.all([warm.close(), perUtterance.close()]));

  it('free answers one after another share warm decoders, and each is heard as a new pocketsphinx_continuous hears it', async () => {
    assert.ok(python, 'python3 is installed');
    const first = await recognise(warm, 'I would like to come on Monday.', converse);
    await recognise(warm, 'I am calling about my appointment tomorrow.', converse);
    // The same answer again, after another line taught the decoder its cepstral mean: heard as the first time.
    const again = await recognise(warm, 'I would like to come on Monday.', converse);
    // One decoder served the first, then it or the spare started beside it the others.
    assert.deepEqual(warm.decoders!.stats, { started: 2, reused: 2 });
    assert.equal(again, first);
    assert.equal(first, await recognise(perUtterance, 'I would like to come on Monday.', converse));
    assert.equal(await recognise(warm, 'my name is john smith', converse), 'my name is john smith');
    // The ask step's free answer (both decoding passes) is a decoder of its own arguments.
    assert.equal(await recognise(warm, 'my name is john smith', { expect: 'free' }), 'my name is john smith');
    assert.equal(warm.decoders!.stats.started, 3, 'a decoder of its own, and no spare: the two idle ones fill the pool');
    assert.equal(warm.decoders!.idleCount, 2, 'two kept warm, the third stopped');
  });

  it('an abandoned answer (the caller hung up mid-word) leaves its decoder clean for the next caller', async () => {
    const before = { ...warm.decoders!.stats };
    const words = sliceFrames(onLine(await spoken('I am calling about my appointment tomorrow.'), 200, 0));
    const cut = warm.start({ hint: converse });
    // Half the words reach the decoder itself (not the session's backlog), then the call ends.
    while (warm.decoders!.busyCount === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const frame of words.slice(0, Math.floor(words.length / 2))) cut.write(frame);
    cut.abort();
    await assert.rejects(cut.finish(), /recognition aborted/);
    assert.equal(await recognise(warm, 'my name is john smith', converse), 'my name is john smith');
    assert.equal(warm.decoders!.stats.started, before.started, 'no decoder started');
    assert.equal(warm.decoders!.stats.reused, before.reused + 2);
  });

  it('asked mid-answer (the caller paused), a warm decoder tells the words so far and goes on: the end gives the whole answer', async () => {
    const session = warm.start({ hint: converse });
    const partials: string[] = [];
    session.onPartial((text) => partials.push(text));
    while (warm.decoders!.busyCount === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const frame of sliceFrames(onLine(await spoken('my name is'), 200, 150))) session.write(frame);
    assert.equal(session.requestPartial!(), true, 'the text so far will come');
    await eventually(() => partials.length > 0, 'the text so far');
    assert.match(partials[0], /\bname\b/, `the words so far: ${partials[0]}`);
    assert.doesNotMatch(partials[0], /smith/);
    for (const frame of sliceFrames(onLine(await spoken('john smith'), 0, 300))) session.write(frame);
    const { text } = await session.finish();
    assert.match(text, /\bname\b.*\bsmith\b/, `the whole answer: ${text}`);
  });

  it('a session on a process per utterance has no decoder to ask: requestPartial tells nothing', async () => {
    const session = perUtterance.start({ hint: converse });
    const partials: string[] = [];
    session.onPartial((text) => partials.push(text));
    for (const frame of sliceFrames(onLine(await spoken('my name is'), 200, 150))) session.write(frame);
    assert.equal(session.requestPartial!(), false, 'nothing to ask');
    const { text } = await session.finish();
    assert.match(text, /\bname\b/);
    assert.ok(partials.every((p) => text.startsWith(p)), 'only what pocketsphinx_continuous printed itself');
  });

  it('a worker that dies fails the answer it held, and is not used again', async () => {
    const started = warm.decoders!.stats.started;
    const session = warm.start({ hint: converse });
    for (const frame of sliceFrames(onLine(await spoken('my name is john smith'), 200, 0)).slice(0, 20)) session.write(frame);
    // Once the session holds its decoder, every worker dies (the idle ones are not used again either).
    while (warm.decoders!.busyCount === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const pid of workerPids()) process.kill(pid, 'SIGKILL');
    await assert.rejects(session.finish(), /pocketsphinx worker exited/);
    await eventually(() => warm.decoders!.idleCount === 0, 'the killed idle worker leaving the pool');
    assert.equal(await recognise(warm, 'my name is john smith', converse), 'my name is john smith');
    assert.ok(warm.decoders!.stats.started > started, 'a new decoder for the next answer');
  });
});

describe('the warm decoder pipe', () => {
  it('sends the audio in 100 ms batches, and what is left of the last one with the end of the utterance', async () => {
    // A stand-in worker that answers each utterance with the sizes of the audio messages it got.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'decoder-pipe-'));
    const script = path.join(dir, 'sizes.py');
    writeFileSync(
      script,
      [
        'import struct, sys',
        'print("ready", flush=True)',
        'sizes = []',
        'while True:',
        '    header = sys.stdin.buffer.read(5)',
        '    if len(header) < 5: break',
        '    n = struct.unpack("<I", header[1:])[0]',
        '    sys.stdin.buffer.read(n)',
        '    if header[:1] == b"A": sizes.append(str(n))',
        '    else:',
        '        print("text " + " ".join(sizes) if header[:1] == b"E" else "abandoned", flush=True)',
        '        sizes = []',
      ].join('\n'),
    );
    const decoders = new WarmDecoders({ python: python!, script, maxIdle: 1 });
    try {
      const decoder = await decoders.acquire(['-stand-in']);
      for (let i = 0; i < 12; i++) decoder.write(Buffer.alloc(640)); // 12 frames of 20 ms
      assert.equal(await decoder.finish(), '3200 3200 1280');
      for (let i = 0; i < 3; i++) decoder.write(Buffer.alloc(640));
      await decoder.abandon(); // an abandoned utterance's unsent audio is dropped
      decoder.write(Buffer.alloc(640));
      assert.equal(await decoder.finish(), '640');
      decoders.release(decoder);
    } finally {
      await decoders.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('spare decoders', () => {
  it('when a session takes the last idle decoder of its arguments, a spare starts in the background, and the next session takes it warm', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'decoder-spare-'));
    const script = path.join(dir, 'ready.py');
    writeFileSync(script, ['import sys', 'print("ready", flush=True)', 'sys.stdin.buffer.read()'].join('\n'));
    const decoders = new WarmDecoders({ python: python!, script, maxIdle: 1 });
    try {
      const first = await decoders.acquire(['-a']);
      assert.equal(decoders.stats.started, 2, 'the first session started its own, and a spare');
      while (decoders.idleCount === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const second = await decoders.acquire(['-a']);
      assert.deepEqual(decoders.stats, { started: 3, reused: 1 }, 'the second took the spare warm; the next spare is on its way');
      // Other arguments are decoders of their own.
      const other = await decoders.acquire(['-b']);
      assert.notEqual(other.key, first.key);
      for (const d of [first, second, other]) decoders.release(d);
    } finally {
      await decoders.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('decoders of calls that arrive together', () => {
  it('load in parallel: one session waits for the starting spare, the next starts its own at once', async () => {
    // Stand-in workers that say ready only once the test opens their gate (a file named by their pid).
    const dir = mkdtempSync(path.join(os.tmpdir(), 'decoder-gates-'));
    const script = path.join(dir, 'gated.py');
    writeFileSync(script, ['import os, sys, time', 'gate = os.path.join(sys.argv[2], str(os.getpid()))', 'while not os.path.exists(gate): time.sleep(0.01)', 'print("ready", flush=True)', 'sys.stdin.buffer.read()'].join('\n'));
    const decoders = new WarmDecoders({ python: python!, script, maxIdle: 3 });
    /** Workers whose gate is open, or kept shut. */
    const seen = new Set<number>();
    const open = (pid: number) => writeFileSync(path.join(dir, String(pid)), '');
    // One look at /proc finds the new worker and names it: a second look can miss a process mid-exec.
    const newWorker = async (what: string) => {
      let pid: number | undefined;
      await eventually(() => (pid = workerPids('gated.py').find((p) => !seen.has(p))) !== undefined, what);
      seen.add(pid!);
      return pid!;
    };
    try {
      const first = decoders.acquire(['-gates', dir]);
      open(await newWorker('the first worker'));
      const a = await first;
      // The spare now starts behind its shut gate.
      const spare = await newWorker('the spare');
      const waiting = decoders.acquire(['-gates', dir]);
      const own = decoders.acquire(['-gates', dir]);
      open(await newWorker('the third session starting its own decoder'));
      const c = await own;
      assert.equal(decoders.stats.started, 3);
      let settled = false;
      void waiting.then(() => (settled = true));
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(settled, false, 'the second still waits for the spare');
      open(spare);
      const b = await waiting;
      for (const d of [a, b, c]) decoders.release(d);
    } finally {
      for (const pid of workerPids('gated.py')) writeFileSync(path.join(dir, String(pid)), '');
      await decoders.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('closing the decoders', () => {
  it('stops a spare still starting rather than waiting for it: one that never says ready does not hold the shutdown', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'decoder-stuck-'));
    // The first worker is ready at once; any later one (the spare) never is.
    const script = path.join(dir, 'stuck.py');
    writeFileSync(script, ['import os, sys, time', 'first = os.path.join(sys.argv[2], "first")', 'if os.path.exists(first):', '  time.sleep(3600)', 'open(first, "w").close()', 'print("ready", flush=True)', 'sys.stdin.buffer.read()'].join('\n'));
    const decoders = new WarmDecoders({ python: python!, script, maxIdle: 2 });
    try {
      const decoder = await decoders.acquire(['-stuck', dir]);
      decoders.release(decoder);
      await eventually(() => workerPids('stuck.py').length === 2, 'the spare started');
      const closed = await Promise.race([decoders.close().then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 10_000, 'still waiting'))]);
      assert.equal(closed, 'closed', 'close() stopped the spare');
      await eventually(() => workerPids('stuck.py').length === 0, 'no worker left');
    } finally {
      for (const pid of workerPids('stuck.py')) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('POCKETSPHINX_WARM_DECODERS', () => {
  it('sets how many warm decoders the edge keeps (default 8); 0 starts pocketsphinx_continuous per utterance; a bad value is named', async () => {
    const byDefault = createSpeechEngines({});
    assert.ok((byDefault.recognizer as PocketsphinxRecognizer).decoders, 'warm decoders by default');
    await byDefault.close();
    const none = createSpeechEngines({ POCKETSPHINX_WARM_DECODERS: '0' });
    assert.equal((none.recognizer as PocketsphinxRecognizer).decoders, undefined);
    await none.close();
    for (const [value, message] of [
      ['-1', 'must be at least 0'],
      ['some', 'must be a number'],
    ]) {
      assert.throws(
        () => createSpeechEngines({ POCKETSPHINX_WARM_DECODERS: value }),
        (err: Error) => err instanceof SpeechConfigError && err.variable === 'POCKETSPHINX_WARM_DECODERS' && err.message === `POCKETSPHINX_WARM_DECODERS ${message} (got "${value}")`,
      );
    }
    assert.throws(
      () => createSpeechEngines({}, (name) => (name === 'python3' ? undefined : `/usr/bin/${name}`)),
      (err: Error) => err instanceof SpeechConfigError && err.variable === 'POCKETSPHINX_WARM_DECODERS' && /needs the program python3/.test(err.message),
    );
  });
});
