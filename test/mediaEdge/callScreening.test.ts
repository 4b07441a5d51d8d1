// How a screened outbound call's dial ends (src/mediaEdge/phoneDialer.ts endOfScreening): a
// person runs the script; a machine ends voicemail with its detection and the message said,
// even when it hangs up during the message; a call that closes before a verdict ends as its close says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AnsweringMachineResult } from '../../src/mediaEdge/conversation/answeringMachineDetector.js';
import { endOfScreening } from '../../src/mediaEdge/phoneDialer.js';

const machine: AnsweringMachineResult = { verdict: 'machine', reason: 'beep', greetingMs: 3100, words: 9, decidedAtMs: 4200, beepAt: 4020 };
const message = { text: 'Hello Ada, please call us back.', playedMs: 2400, startedAtMs: 4600, cue: 'beep' as const };

describe('the end of a screened dial', () => {
  it('a person, or no verdict, runs the script', () => {
    assert.equal(endOfScreening({ outcome: 'human', detection: { verdict: 'human', reason: 'after_greeting_silence', greetingMs: 600, words: 1, decidedAtMs: 1800 } }), undefined);
    assert.equal(endOfScreening({ outcome: 'human', detection: { verdict: 'unknown', reason: 'too_long', greetingMs: 900, words: 3, decidedAtMs: 5000 } }), undefined);
  });

  it('a machine with the message said: voicemail, the detection and the message for the workflow, a note that says both', () => {
    const end = endOfScreening({ outcome: 'voicemail_left', detection: machine, message });
    assert.deepEqual({ ...end, note: undefined }, { outcome: 'ended', endReason: 'voicemail', note: undefined, voicemail: { detection: machine, message } });
    assert.equal(
      end?.note,
      'An answering machine took the call (reason beep, 3100 ms of greeting, 9 words, a beep at 4020 ms; decided 4200 ms after the answer). The voicemail message was said 4600 ms after the answer (after the beep).',
    );
  });

  it('a machine and no message: voicemail with the detection alone', () => {
    const end = endOfScreening({ outcome: 'voicemail', detection: { ...machine, reason: 'initial_silence', beepAt: undefined, greetingMs: 0, words: 0 } });
    assert.equal(end?.endReason, 'voicemail');
    assert.equal(end?.voicemail?.message, undefined);
    assert.match(end?.note ?? '', /reason initial_silence, 0 ms of greeting, 0 words, no beep before the verdict.*The script has no voicemail message/);
  });

  it('a machine that hangs up during the message is still voicemail, with what was said; one that hangs up before it has no message', () => {
    const cut = endOfScreening({ outcome: 'channel_closed', detection: machine, message: { ...message, playedMs: 800 }, closeReason: 'remote_hangup' });
    assert.equal(cut?.endReason, 'voicemail');
    assert.equal(cut?.voicemail?.message?.playedMs, 800);
    assert.match(cut?.note ?? '', /the machine hung up before its end/);
    const before = endOfScreening({ outcome: 'channel_closed', detection: machine, closeReason: 'remote_hangup' });
    assert.equal(before?.endReason, 'voicemail');
    assert.equal(before?.voicemail?.message, undefined);
    assert.match(before?.note ?? '', /hung up before the message/);
  });

  it('closed before a verdict: the callee hung up, the audio stopped, or the edge hung up', () => {
    assert.deepEqual(endOfScreening({ outcome: 'channel_closed', closeReason: 'remote_hangup' }), { outcome: 'ended', endReason: 'User Hangup' });
    assert.equal(endOfScreening({ outcome: 'channel_closed', closeReason: 'media_lost' })?.endReason, 'connection_lost');
    assert.equal(endOfScreening({ outcome: 'channel_closed', closeReason: 'local_hangup' })?.endReason, 'media_edge_lost');
  });
});
