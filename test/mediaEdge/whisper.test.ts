// The Whisper recogniser against its real worker process (the speech venv's python and
// whisper_worker.py with the bundled tiny.en model): wideband and telephone-band speech,
// the answer readers on what it writes, the queue bound, and a worker's death and restart.
// One worker process serves the whole file (the model loads once).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PROJECT_ROOT } from '../../src/config/index.js';
import { extractAnswer } from '../../src/domain/authCheck/index.js';
import { sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { SAMPLE_RATE } from '../../src/mediaEdge/media/channel.js';
import type { AnswerHint, RecognitionSession, Transcript } from '../../src/mediaEdge/speech/interfaces.js';
import { createSpeechEngines, SpeechConfigError } from '../../src/mediaEdge/speech/speechEngines.js';
import { normaliseWhisperText, whisperPrompt, WhisperRecognizer, WhisperWorkerError } from '../../src/mediaEdge/speech/whisper.js';
import { whisperSettings } from '../../src/mediaEdge/speech/whisperConfig.js';
import { onLine, spoken } from '../support/spokenAudio.js';
import { overTelephone } from '../support/telephoneBand.js';
import { eventually } from '../support/eventually.js';

const PYTHON = path.join(PROJECT_ROOT, '.tools', 'speech-venv', 'bin', 'python');

function session(recognizer: WhisperRecognizer, samples: Int16Array, hint: AnswerHint = { expect: 'free' }): RecognitionSession {
  const s = recognizer.start({ hint });
  for (const frame of sliceFrames(onLine(samples, 200, 300))) s.write(frame);
  return s;
}

describe('whisper text and prompts', () => {
  it('writes lower-case words, keeping punctuation inside numbers and words', () => {
    assert.equal(normaliseWhisperText(' My name is John Smith. '), 'my name is john smith');
    assert.equal(normaliseWhisperText('It’s 555-1234.'), "it's 555-1234");
    assert.equal(normaliseWhisperText('$1,200.50, at 3:30, on 4/3/1985!'), '1,200.50 at 3:30 on 4/3/1985');
    assert.equal(normaliseWhisperText('Twenty-one... yes?'), 'twenty-one yes');
  });

  it('prompts with the phrases, and for constrained answers with the grammar words', () => {
    assert.equal(whisperPrompt({ expect: 'free' }, 'grammar'), undefined);
    assert.equal(whisperPrompt({ expect: 'name', phrases: ['Jane Doe', ' John Smith '] }, 'phrases'), 'Jane Doe, John Smith');
    const yesNo = whisperPrompt({ expect: 'yes_no' }, 'grammar')!;
    assert.ok(yesNo.split(', ').includes('yes') && yesNo.split(', ').includes('no'), yesNo);
    assert.equal(whisperPrompt({ expect: 'yes_no' }, 'phrases'), undefined);
    assert.equal(whisperPrompt({ expect: 'digits', phrases: ['1234'] }, 'none'), undefined);
  });
});

describe('whisper recognizer (real worker)', () => {
  let recognizer: WhisperRecognizer;
  before(async () => {
    assert.ok(existsSync(PYTHON), `${PYTHON} is installed by node scripts/bootstrap.mjs --test`);
    // One worker and room for one waiting utterance: the queue-bound test fills it.
    recognizer = new WhisperRecognizer({ python: PYTHON, workers: 1, maxQueued: 1 });
    await recognizer.warmUp();
  });
  after(() => recognizer.close());

  it('recognises a sentence spoken by festival', async () => {
    const text = (await session(recognizer, await spoken('My name is John Smith.')).finish()).text;
    assert.equal(text, 'my name is john smith');
    assert.equal(recognizer.pool.stats.recognised, 1);
    assert.ok(recognizer.pool.stats.cpuMs > 0, 'the worker reports the CPU time the utterance took');
  });

  it('recognises a telephone-band caller (300-3400 Hz, 8 kHz mu-law round trip) and the digits reader reads the digits', async () => {
    const phone = overTelephone(await spoken('My number is five five five, one two three four.'));
    const { text } = await session(recognizer, phone, { expect: 'free' }).finish();
    assert.equal(extractAnswer(text, 'digits'), '5551234', text);
  });

  it('hears yes/no answers over the telephone band with the default prompt (the grammar words as a prompt wrote "no" as "know")', async () => {
    const yes = await session(recognizer, overTelephone(await spoken('Yes, that is correct.')), { expect: 'yes_no' }).finish();
    assert.equal(extractAnswer(yes.text, 'yes_no'), 'yes', yes.text);
    const no = await session(recognizer, overTelephone(await spoken('No, that is wrong.')), { expect: 'yes_no' }).finish();
    assert.equal(no.text, 'no that is wrong');
    assert.equal(extractAnswer(no.text, 'yes_no'), 'no', no.text);
  });

  it('a date answer is read by the date reader', async () => {
    const { text } = await session(recognizer, await spoken('April third, nineteen eighty five.'), { expect: 'date' }).finish();
    assert.match(extractAnswer(text, 'date'), /^april (3|3rd|third),? 1985$/i, text);
  });

  it('a blip too short for a word, and line noise with the yes/no prompt, are recognised as nothing', async () => {
    const blip = recognizer.start({ hint: { expect: 'free' } });
    for (const frame of sliceFrames(new Int16Array(SAMPLE_RATE / 20))) blip.write(frame);
    assert.deepEqual(await blip.finish(), { text: '' });
    // The prompt must not be heard in noise (a prompted Whisper can "hear" its prompt's words).
    const noise = recognizer.start({ hint: { expect: 'yes_no' } });
    for (const frame of sliceFrames(overTelephone(onLine(new Int16Array(SAMPLE_RATE), 0, 0, -30)))) noise.write(frame);
    assert.deepEqual(await noise.finish(), { text: '' });
  });

  it('past the queue bound an utterance is answered busy at once, the others are recognised', async () => {
    const audio = await spoken('Yes.');
    const first = session(recognizer, audio, { expect: 'yes_no' }).finish(); // recognised now
    const second = session(recognizer, audio, { expect: 'yes_no' }).finish(); // waits (the one queued place)
    const refusedBefore = recognizer.pool.stats.refused;
    const third = await session(recognizer, audio, { expect: 'yes_no' }).finish();
    assert.deepEqual(third, { text: '', busy: true });
    assert.equal(recognizer.pool.stats.refused, refusedBefore + 1);
    for (const answer of await Promise.all([first, second])) assert.equal(extractAnswer(answer.text, 'yes_no'), 'yes', answer.text);
  });

  it('an aborted session that waits leaves the queue and its finish rejects', async () => {
    const audio = await spoken('Yes.');
    const first = session(recognizer, audio).finish();
    const waiting = session(recognizer, audio);
    const waited = waiting.finish();
    await eventually(() => recognizer.pool.queued === 1, 'one utterance waiting');
    waiting.abort();
    await assert.rejects(waited, /aborted/);
    assert.equal(recognizer.pool.queued, 0);
    await first;
  });

  it('a worker killed mid-utterance: that utterance is answered busy (the step asks again), the worker is restarted and recognises the next', async () => {
    const [pid] = recognizer.pool.pids;
    assert.ok(pid);
    const audio = await spoken('My name is John Smith.');
    const dying = session(recognizer, audio).finish();
    process.kill(pid, 'SIGKILL');
    assert.deepEqual(await dying, { text: '', busy: true });
    assert.equal(recognizer.pool.stats.failed, 1);
    assert.match(recognizer.pool.stats.lastFailure, /whisper worker exited \(SIGKILL\)/);
    await eventually(() => recognizer.pool.pids[0] !== undefined && recognizer.pool.pids[0] !== pid, 'a new worker process');
    assert.equal(recognizer.pool.stats.restarts, 1);
    const next: Transcript = await session(recognizer, audio).finish();
    assert.equal(next.text, 'my name is john smith');
  });
});

describe('whisper worker that cannot start', () => {
  it('warmUp names the failure, and an utterance is answered busy instead of waiting', async () => {
    const broken = new WhisperRecognizer({ python: PYTHON, workerArgs: ['--model', '/nonexistent/whisper-model'] });
    try {
      await assert.rejects(broken.warmUp(), (err: Error) => err instanceof WhisperWorkerError && /exited \(code 1\)/.test(err.message));
      assert.deepEqual(await session(broken, new Int16Array(SAMPLE_RATE)).finish(), { text: '', busy: true });
      assert.match(broken.pool.stats.lastFailure, /whisper worker exited \(code 1\)/);
    } finally {
      await broken.close();
    }
  });
});

describe('choosing whisper at start-up', () => {
  it('STT_PROVIDER=whisper makes the whisper recogniser, with no process started before warm-up', async () => {
    const engines = createSpeechEngines({ STT_PROVIDER: 'whisper', WHISPER_WORKERS: '2', WHISPER_MAX_QUEUED: '3' });
    try {
      assert.equal(engines.recognizer.name, 'whisper');
      const whisper = engines.recognizer as WhisperRecognizer;
      assert.deepEqual(whisper.pool.pids, [undefined, undefined]);
      assert.equal(whisper.pool.maxQueued, 3);
    } finally {
      await engines.close();
    }
  });

  it('a bad whisper setting is named, whichever engine is chosen', () => {
    const named = (variable: string) => (err: unknown) => err instanceof SpeechConfigError && err.variable === variable && err.message.startsWith(variable);
    assert.throws(() => createSpeechEngines({ STT_PROVIDER: 'whisper', WHISPER_WORKERS: '0' }), named('WHISPER_WORKERS'));
    assert.throws(() => createSpeechEngines({ WHISPER_MAX_QUEUED: '-1' }), named('WHISPER_MAX_QUEUED'));
    assert.throws(() => createSpeechEngines({ WHISPER_THREADS: 'two' }), named('WHISPER_THREADS'));
    assert.throws(() => createSpeechEngines({ STT_PROVIDER: 'whisper', WHISPER_PROMPT: 'everything' }), named('WHISPER_PROMPT'));
  });

  it('a missing speech venv is named with the command that installs it', () => {
    const fail = (variable: string, message: string): never => {
      throw new SpeechConfigError(variable, message);
    };
    assert.throws(
      () => whisperSettings({}, true, fail, '/nonexistent/speech-venv'),
      (err: unknown) => err instanceof SpeechConfigError && err.variable === 'STT_PROVIDER' && /STT_PROVIDER=whisper needs the speech venv .*not installed: run STT_PROVIDER=whisper node scripts\/bootstrap\.mjs/.test(err.message),
    );
    assert.equal(whisperSettings({}, false, fail, '/nonexistent/speech-venv').workers, 1, 'not chosen: the venv is not needed');
  });
});
