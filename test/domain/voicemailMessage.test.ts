// The script's optional voicemail_message (docs/scripts.md): what the format accepts and
// refuses, naming the field, and the message as the agent says it (its template filled).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseScriptDefinition } from '../../src/domain/scripts/definition.js';
import { voicemailMessageOf } from '../../src/domain/scripts/voicemail.js';
import { SipTrunkProvider } from '../../src/telephony/sipTrunk.js';

const script = (extra: Record<string, unknown>) => ({ name: 'Reminder', steps: [{ id: 'bye', type: 'end', text: 'Goodbye.' }], ...extra });

describe('voicemail_message', () => {
  it('is optional, and kept as written when given', () => {
    const without = parseScriptDefinition(script({}));
    assert.ok(without.ok);
    if (without.ok) assert.equal(without.script.voicemail_message, undefined);
    const withMessage = parseScriptDefinition(script({ voicemail_message: 'Hello {{contact.first_name}}, please call us back.' }));
    assert.ok(withMessage.ok, withMessage.ok ? '' : withMessage.message);
    if (withMessage.ok) assert.equal(withMessage.script.voicemail_message, 'Hello {{contact.first_name}}, please call us back.');
  });

  it('refuses an empty message, a non-string and an overlong one, naming the field', () => {
    for (const bad of ['', 42, { text: 'hi' }, 'x'.repeat(4001)]) {
      const r = parseScriptDefinition(script({ voicemail_message: bad }));
      assert.equal(r.ok, false, JSON.stringify(bad).slice(0, 40));
      if (!r.ok) assert.match(r.message, /voicemail_message/);
    }
  });

  it('is said with its template filled from the contact, the linked objects and the call', () => {
    const parsed = parseScriptDefinition(script({ voicemail_message: 'Hello {{contact.full_name}} , this is {{call.from_number}} about order {{objects.order.number}}.' }));
    assert.ok(parsed.ok);
    if (!parsed.ok) return;
    const said = voicemailMessageOf(parsed.script, { contact: { first_name: 'Sam', last_name: 'Lee' }, objects: { order: { number: 'A-17' } }, call: { from_number: '+15550100' } });
    assert.equal(said, 'Hello Sam Lee, this is +15550100 about order A-17.');
  });

  it('gives no message for a script without one, or one that fills to nothing', () => {
    const data = { contact: {}, objects: {}, call: {} };
    assert.equal(voicemailMessageOf({}, data), undefined);
    assert.equal(voicemailMessageOf({ voicemail_message: '{{contact.nickname}}' }, data), undefined);
  });
});

describe('voicemail_detection', () => {
  it('is optional, true or false, and anything else is refused naming the field', () => {
    for (const good of [undefined, true, false]) assert.ok(parseScriptDefinition(script(good === undefined ? {} : { voicemail_detection: good })).ok, String(good));
    for (const bad of ['no', 0, null]) {
      const r = parseScriptDefinition(script({ voicemail_detection: bad }));
      assert.equal(r.ok, false, JSON.stringify(bad));
      if (!r.ok) assert.match(r.message, /voicemail_detection/);
    }
  });

  it('a SIP trunk dial screens the answer unless the script turns it off, and carries the filled message', async () => {
    const provider = new SipTrunkProvider(30);
    const place = (definition: unknown) =>
      provider.placeCall({
        callId: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
        teamId: 't',
        from: '+15550100',
        to: '+15550199',
        contact: { first_name: 'Sam' },
        script: { id: 's', name: 'Reminder', definition },
        objects: {},
        call: { from_number: '+15550100' },
      });
    const screened = await place(script({ voicemail_message: 'Hello {{contact.first_name}}, please call {{call.from_number}}.' }));
    assert.equal(screened.mode, 'media_edge');
    if (screened.mode === 'media_edge') assert.deepEqual(screened.dial, { from: '+15550100', to: '+15550199', ringTimeoutMs: 30_000, screen: true, voicemailMessage: 'Hello Sam, please call +15550100.' });
    const off = await place(script({ voicemail_detection: false }));
    if (off.mode === 'media_edge') assert.deepEqual(off.dial, { from: '+15550100', to: '+15550199', ringTimeoutMs: 30_000, screen: false });
  });
});
