// The recording of a simulated call spoken by the real offline synthesiser (festival's
// text2wave, voice kal_diphone): what the API serves on the first read of such a call.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { synthesiseConversation } from '../../src/recordings/simulated.js';
import { SynthesisUnavailableError, text2waveSynthesis } from '../../src/recordings/synthesis.js';
import { decodeWav } from '../../src/recordings/wav.js';

const hasText2wave = spawnSync('sh', ['-c', 'command -v text2wave'], { stdio: 'ignore' }).status === 0;

/** Peak level of one channel of a stereo recording between two times (seconds). */
function peak(samples: Int16Array, channel: number, from: number, to: number): number {
  let max = 0;
  for (let f = Math.round(from * 16_000); f < Math.min(samples.length / 2, Math.round(to * 16_000)); f++) max = Math.max(max, Math.abs(samples[f * 2 + channel]));
  return max;
}

test('text2wave speaks a transcript into a stereo 16 kHz WAV: the agent on the right, then the caller on the left', { skip: hasText2wave ? false : 'text2wave (festival) is not installed' }, async () => {
  const speak = text2waveSynthesis();
  const agentLine = await speak('Hello, this is your assistant.');
  assert.ok(agentLine.length > 0.8 * 16_000 && agentLine.length < 4 * 16_000, `about a second or two of speech (${agentLine.length} samples)`);
  const wav = decodeWav(await synthesiseConversation([{ role: 'agent', text: 'Hello, this is your assistant.' }, { role: 'user', text: 'Hi.' }], speak));
  assert.deepEqual([wav.sampleRate, wav.channels], [16_000, 2]);
  const agentEnd = 0.3 + agentLine.length / 16_000;
  assert.ok(peak(wav.samples, 1, 0.3, agentEnd) > 1000, 'the agent is heard on the right');
  assert.equal(peak(wav.samples, 0, 0, agentEnd), 0, 'nothing on the left while the agent speaks');
  assert.ok(peak(wav.samples, 0, agentEnd + 0.4, wav.samples.length / 32_000) > 1000, 'then the caller on the left');
});

test('a missing synthesiser is reported as unavailable, not as a crash', async () => {
  const speak = text2waveSynthesis({ command: 'no-such-text2wave-binary' });
  await assert.rejects(speak('hello'), SynthesisUnavailableError);
});
