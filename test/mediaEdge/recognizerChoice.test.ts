// Which recogniser hears an answer, per audio band and expect (STT_TELEPHONE_ENGINES,
// STT_WIDEBAND_ENGINES): the settings, the defaults from the accuracy benchmark (a phone
// call's answers to Whisper when it is installed, a browser call's to STT_PROVIDER's
// engine), and a phone call's date answer heard by the real Whisper worker through the
// engines createSpeechEngines makes (the speech venv is installed for the tests).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { extractAnswer } from '../../src/domain/authCheck/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { sliceFrames } from '../../src/mediaEdge/audio/frames.js';
import { openRtpSession } from '../../src/mediaEdge/rtp/rtpSession.js';
import type { SpeechRecognizer } from '../../src/mediaEdge/speech/interfaces.js';
import { RecognizerByExpect, recognizerTable, TABLE_EXPECTS } from '../../src/mediaEdge/speech/recognizerChoice.js';
import { createSpeechEngines, SpeechConfigError, type SpeechEngines } from '../../src/mediaEdge/speech/speechEngines.js';
import type { WhisperRecognizer } from '../../src/mediaEdge/speech/whisper.js';
import { callSpeechOf } from '../../src/mediaEdge/voiceEdge.js';
import { onLine, spoken } from '../support/spokenAudio.js';
import { overTelephone } from '../support/telephoneBand.js';

const fail = (variable: string, message: string): never => {
  throw new SpeechConfigError(variable, message);
};
const all = (engine: string) => Object.fromEntries(TABLE_EXPECTS.map((expect) => [expect, engine]));

describe('the recogniser table settings', () => {
  it('auto: the telephone band to Whisper when it is installed, wideband to STT_PROVIDER’s engine', () => {
    assert.deepEqual(recognizerTable({}, 'pocketsphinx', true, fail), { telephone: all('whisper'), wideband: all('pocketsphinx') });
    assert.deepEqual(recognizerTable({ STT_TELEPHONE_ENGINES: 'auto' }, 'pocketsphinx', false, fail), { telephone: all('pocketsphinx'), wideband: all('pocketsphinx') });
    assert.deepEqual(recognizerTable({}, 'whisper', true, fail), { telephone: all('whisper'), wideband: all('whisper') });
  });

  it('one engine for every expect, or expect=engine pairs (text is free; the rest STT_PROVIDER’s)', () => {
    assert.deepEqual(recognizerTable({ STT_TELEPHONE_ENGINES: 'pocketsphinx' }, 'pocketsphinx', true, fail).telephone, all('pocketsphinx'));
    const table = recognizerTable({ STT_TELEPHONE_ENGINES: ' yes_no=pocketsphinx , digits=whisper', STT_WIDEBAND_ENGINES: 'date=whisper,text=whisper' }, 'pocketsphinx', true, fail);
    assert.deepEqual(table.telephone, { ...all('pocketsphinx'), digits: 'whisper' });
    assert.deepEqual(table.wideband, { ...all('pocketsphinx'), date: 'whisper', free: 'whisper' });
  });

  it('the defaults as createSpeechEngines makes them: with the venv installed a phone call hears with Whisper, which starts with its first answer', async () => {
    const engines = createSpeechEngines({});
    try {
      assert.deepEqual(engines.recognizers, { telephone: all('whisper'), wideband: all('pocketsphinx') });
      const phone = engines.forCall(() => undefined, { band: 'telephone' }).recognizer as RecognizerByExpect;
      assert.deepEqual((phone.engineFor('yes_no') as WhisperRecognizer).pool.pids, [undefined], 'no worker before the first phone answer');
      assert.equal(engines.forCall(() => undefined).recognizer, engines.recognizer, 'a call of no band is wideband');
    } finally {
      await engines.close();
    }
  });

  it('a bad value is named', () => {
    for (const [variable, value] of [
      ['STT_TELEPHONE_ENGINES', 'kaldi'],
      ['STT_TELEPHONE_ENGINES', 'yes_no=kaldi'],
      ['STT_WIDEBAND_ENGINES', 'zip=whisper'],
      ['STT_WIDEBAND_ENGINES', 'digits=whisper=pocketsphinx'],
      ['STT_WIDEBAND_ENGINES', 'digits'],
    ] as const) {
      assert.throws(
        () => createSpeechEngines({ [variable]: value }),
        (err: unknown) => err instanceof SpeechConfigError && err.variable === variable && err.message.startsWith(`${variable} must be auto, one of pocketsphinx, whisper, or expect=engine pairs`) && err.message.endsWith(`(got "${value}")`),
        `${variable}=${value}`,
      );
    }
  });
});

describe('a phone call’s answers by expect (real engines)', () => {
  let engines: SpeechEngines;
  before(() => {
    engines = createSpeechEngines({ STT_TELEPHONE_ENGINES: 'yes_no=pocketsphinx,digits=whisper,number=whisper,date=whisper,name=whisper,free=whisper' });
  });
  after(() => engines.close());

  async function hear(recognizer: SpeechRecognizer, samples: Int16Array, expect: 'date' | 'yes_no'): Promise<string> {
    const session = recognizer.start({ hint: { expect } });
    for (const frame of sliceFrames(onLine(samples, 200, 400))) session.write(frame);
    return (await session.finish()).text;
  }

  it('a browser call keeps the shared STT_PROVIDER recogniser; a phone call gets the telephone table', () => {
    const browser = callSpeechOf(engines, createLogger('silent'));
    assert.equal(browser.recognizer, engines.recognizer);
    assert.equal(engines.recognizer.name, 'pocketsphinx');
    const phone = callSpeechOf(engines, createLogger('silent'), 'telephone').recognizer;
    assert.ok(phone instanceof RecognizerByExpect);
    assert.equal(phone.engineFor('yes_no').name, 'pocketsphinx');
    for (const expect of ['digits', 'number', 'date', 'name', 'free', 'text', undefined] as const) assert.equal(phone.engineFor(expect).name, 'whisper', String(expect));
  });

  it("a phone call's RTP channel says it is on the telephone band, so its call gets the telephone table", async () => {
    const rtp = await openRtpSession({ portRange: { min: 41000, max: 41999 }, bindAddress: '127.0.0.1' });
    try {
      assert.equal(rtp.channel.band, 'telephone');
      assert.ok(callSpeechOf(engines, createLogger('silent'), rtp.channel.band).recognizer instanceof RecognizerByExpect);
    } finally {
      rtp.close();
    }
  });

  it('a telephone-band date goes to Whisper and is read as the date; a yes/no to the pocketsphinx grammar', async () => {
    const phone = engines.forCall(() => assert.fail('no failover'), { band: 'telephone' }).recognizer as RecognizerByExpect;
    const whisper = phone.engineFor('date') as WhisperRecognizer;
    const text = await hear(phone, overTelephone(await spoken('April third, nineteen eighty five.')), 'date');
    assert.equal(whisper.pool.stats.recognised, 1, 'Whisper heard it');
    assert.match(extractAnswer(text, 'date'), /^april 3(rd)?,? 1985$/i, text);
    assert.equal(extractAnswer(await hear(phone, overTelephone(await spoken('Yes.')), 'yes_no'), 'yes_no'), 'yes');
    assert.equal(whisper.pool.stats.recognised, 1, 'not Whisper');
  });
});
