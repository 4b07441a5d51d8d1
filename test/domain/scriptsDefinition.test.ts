// The script format (docs/scripts.md): what is accepted, and errors that name the step and
// the field, including the rule that no step may write the auth_check namespace.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseScriptDefinition, type ScriptDefinitionInput } from '../../src/domain/scripts/definition.js';
import { DEMO_SCRIPT } from '../../src/domain/scripts/demoScript.js';

const minimal = (steps: unknown[], extra: Record<string, unknown> = {}) => ({ name: 'Test', steps, ...extra });
const say = { id: 'hello', type: 'say' as const, text: 'Hi {{contact.first_name}}' };
/** A converse step with one tool (fields of the tool overridden), going on at the say step. */
const converse = (tool: Record<string, unknown> = {}) => ({
  id: 'c',
  type: 'converse' as const,
  instructions: 'Book an appointment for {{contact.first_name}}.',
  tools: [{ name: 'book', description: 'Books it.', parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] }, next: 'c', ...tool }],
});

function rejects(input: unknown, pattern: RegExp) {
  const r = parseScriptDefinition(input);
  assert.equal(r.ok, false, 'the script is rejected');
  if (!r.ok) assert.match(r.message, pattern);
}

describe('script format: accepted', () => {
  it('the demo script is valid', () => {
    assert.equal(parseScriptDefinition(DEMO_SCRIPT).ok, true);
  });

  it('a script with every step type is valid and gets its defaults', () => {
    const input: ScriptDefinitionInput = {
      name: 'All steps',
      objectives: ['Say hello', { objective: 'Verified', met_when: { variable: 'auth_check.verified', equals: true } }],
      structured_data: { name: 'answers.name' },
      simulated_answers: { 'answers.name': 'My name is {{contact.full_name}}.' },
      steps: [
        say,
        { id: 'ask', type: 'ask', question: 'Name?', variable: 'answers.name' },
        { id: 'hook', type: 'webhook', url: 'https://example.com/lookup?n={{answers.name}}', on_error: 'bye' },
        { id: 'check', type: 'tool', tool: 'Auth | Check', settings: { record_array: ['{{webhook.response}}.name'], check_array: ['{{answers.name}}'], raw_data: '{{webhook.response}}' } },
        { id: 'route', type: 'branch', cases: [{ when: { variable: 'steps.check.result', equals: true }, next: 'mark' }], default: 'bye' },
        { id: 'mark', type: 'set', variable: 'answers.verified_at_step', value: '{{call.id}}' },
        { id: 'bye', type: 'end', text: 'Bye' },
      ],
    };
    const r = parseScriptDefinition(input);
    assert.equal(r.ok, true, r.ok ? '' : r.message);
    if (!r.ok) return;
    const ask = r.script.steps[1];
    const hook = r.script.steps[2];
    assert.equal(ask.type === 'ask' && ask.expect, 'text');
    assert.equal(ask.type === 'ask' && ask.input, undefined, 'no input: either speech or keys');
    assert.equal(hook.type === 'webhook' && hook.method, 'POST');
    assert.equal(hook.type === 'webhook' && hook.timeout_seconds, 10);
  });

  it('a transfer step takes an E.164 number or a SIP URI, bridge by default, an announcement and on_failure', () => {
    const r = parseScriptDefinition(
      minimal([
        { id: 'to_desk', type: 'transfer', to: '+14155552671', announcement: 'A caller for {{contact.first_name}}.', on_failure: 'sorry' },
        { id: 'to_pbx', type: 'transfer', to: 'sip:desk@pbx.example.com:5080;transport=tcp', mode: 'refer' },
        { id: 'to_ip', type: 'transfer', to: 'sip:127.0.0.1:5090' },
        { id: 'sorry', type: 'end', text: 'Nobody is free.' },
      ]),
    );
    assert.equal(r.ok, true, r.ok ? '' : r.message);
    if (!r.ok) return;
    const [desk, pbx, ip] = r.script.steps;
    assert.equal(desk.type === 'transfer' && desk.mode, 'bridge', 'bridge is the default mode');
    assert.equal(desk.type === 'transfer' && desk.on_failure, 'sorry');
    assert.equal(pbx.type === 'transfer' && pbx.mode, 'refer');
    assert.equal(ip.type === 'transfer' && ip.to, 'sip:127.0.0.1:5090');
    assert.equal(desk.type === 'transfer' && desk.ring_timeout_seconds, undefined, 'no ring time of its own: the edge rings 30 s');
  });

  it('a transfer step may say how long the person is rung: ring_timeout_seconds, whole seconds from 5 to 300', () => {
    for (const seconds of [5, 45, 300]) {
      const r = parseScriptDefinition(minimal([{ id: 'x', type: 'transfer', to: '+14155552671', ring_timeout_seconds: seconds }]));
      assert.equal(r.ok && r.script.steps[0].type === 'transfer' && r.script.steps[0].ring_timeout_seconds, seconds);
    }
    for (const seconds of [4, 301, 12.5, '30']) {
      const r = parseScriptDefinition(minimal([{ id: 'x', type: 'transfer', to: '+14155552671', ring_timeout_seconds: seconds }]));
      assert.equal(r.ok, false, String(seconds));
      if (!r.ok) assert.match(r.message, /^steps\[0\] \(id "x"\)\.ring_timeout_seconds: ring_timeout_seconds must be a whole number of seconds from 5 to 300/);
    }
  });

  it('a converse step gets max_turns 10 and no tools by default; model_limits are optional caps', () => {
    const parsed = parseScriptDefinition(minimal([converse(), say], { model_limits: { tokens_per_call: 5000 } }));
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.message);
    const step = parsed.script.steps[0];
    assert.equal(step.type, 'converse');
    assert.equal(step.type === 'converse' && step.max_turns, 10);
    assert.deepEqual(parsed.script.model_limits, { tokens_per_call: 5000 });
    const bare = parseScriptDefinition(minimal([{ id: 'c', type: 'converse', instructions: 'Chat.' }]));
    assert.ok(bare.ok && bare.script.steps[0].type === 'converse' && bare.script.steps[0].tools.length === 0);
  });

  it('an ask step may say which input answers it: keys, speech or both', () => {
    for (const input of ['dtmf', 'speech', 'both'] as const) {
      const r = parseScriptDefinition(minimal([{ id: 'a', type: 'ask', question: 'Your PIN?', variable: 'answers.pin', expect: 'digits', input }]));
      assert.equal(r.ok && r.script.steps[0].type === 'ask' && r.script.steps[0].input, input);
    }
  });

  it('objectives, structured data and simulated answers default to empty', () => {
    const r = parseScriptDefinition(minimal([say]));
    assert.ok(r.ok);
    if (r.ok) {
      assert.deepEqual(r.script.objectives, []);
      assert.deepEqual(r.script.structured_data, {});
      assert.deepEqual(r.script.simulated_answers, {});
    }
  });

  it('Auth Check settings that can only be judged at run time are accepted (they end in status error then)', () => {
    const r = parseScriptDefinition(
      minimal([{ id: 'c', type: 'tool', tool: 'Auth | Check', settings: { record_array: ['a'], check_array: ['a', 'b'], required_match_count: 'two', check_transcript: ['true'] } }]),
    );
    assert.equal(r.ok, true);
  });
});

describe('script format: rejected with the step and field named', () => {
  const rows: Array<[string, unknown, RegExp]> = [
    [
      'an ask step storing into auth_check',
      minimal([{ id: 'ask_dob', type: 'ask', question: 'DOB?', variable: 'auth_check.verified' }]),
      /^steps\[0\] \(id "ask_dob"\)\.variable: cannot write auth_check\.verified: the auth_check namespace belongs to the Auth Check tool/,
    ],
    [
      'a set step writing auth_check.status',
      minimal([say, { id: 'cheat', type: 'set', variable: 'auth_check.status', value: 'verified' }]),
      /^steps\[1\] \(id "cheat"\)\.variable: cannot write auth_check\.status/,
    ],
    ['a set step replacing the whole auth_check namespace', minimal([{ id: 'cheat', type: 'set', variable: 'auth_check', value: {} }]), /steps\[0\] \(id "cheat"\)\.variable: cannot write auth_check:/],
    ['a step writing contact data', minimal([{ id: 'a', type: 'ask', question: 'Email?', variable: 'contact.email' }]), /steps\[0\] \(id "a"\)\.variable: cannot write contact\.email/],
    ['an unknown step type', minimal([{ id: 'x', type: 'shout', text: 'HI' }]), /^steps\[0\] \(id "x"\)\.type: type must be one of say, ask, webhook, tool, branch, set, end/],
    ['an unknown field on a step', minimal([{ ...say, colour: 'red' }]), /^steps\[0\] \(id "hello"\): Unrecognized key: "colour"/],
    ['a say step without text', minimal([{ id: 's', type: 'say' }]), /^steps\[0\] \(id "s"\)\.text: text must be a string/],
    ['an ask step without a variable', minimal([{ id: 'a', type: 'ask', question: 'Q?' }]), /^steps\[0\] \(id "a"\)\.variable: /],
    ['a malformed variable name', minimal([{ id: 'a', type: 'ask', question: 'Q?', variable: 'answers..x' }]), /steps\[0\] \(id "a"\)\.variable: must be a variable name/],
    ['an unknown expect', minimal([{ id: 'a', type: 'ask', question: 'Q?', variable: 'x', expect: 'colour' }]), /steps\[0\] \(id "a"\)\.expect/],
    ['an unknown input', minimal([{ id: 'a', type: 'ask', question: 'Q?', variable: 'x', input: 'keypad' }]), /^steps\[0\] \(id "a"\)\.input: input must be one of both, speech, dtmf/],
    ['a tool other than Auth | Check', minimal([{ id: 't', type: 'tool', tool: 'Other', settings: { record_array: [], check_array: [] } }]), /steps\[0\] \(id "t"\)\.tool: tool must be "Auth \| Check"/],
    ['an Auth Check without a Record Array', minimal([{ id: 't', type: 'tool', tool: 'Auth | Check', settings: { check_array: [] } }]), /steps\[0\] \(id "t"\)\.settings\.record_array: record_array must be an array/],
    ['an Exact that is not Yes or No', minimal([{ id: 't', type: 'tool', tool: 'Auth | Check', settings: { record_array: [], check_array: [], exact: 'maybe' } }]), /steps\[0\] \(id "t"\)\.settings\.exact: exact must be Yes or No/],
    ['a webhook url that is not http', minimal([{ id: 'w', type: 'webhook', url: 'ftp://x' }]), /steps\[0\] \(id "w"\)\.url: url must start with http/],
    ['a webhook timeout over 30 s', minimal([{ id: 'w', type: 'webhook', url: 'https://x', timeout_seconds: 60 }]), /steps\[0\] \(id "w"\)\.timeout_seconds/],
    ['a next pointing nowhere', minimal([{ ...say, next: 'nowhere' }]), /^steps\[0\] \(id "hello"\)\.next: no step has id nowhere/],
    ['a branch case pointing nowhere', minimal([{ id: 'b', type: 'branch', cases: [{ when: { variable: 'x', equals: 1 }, next: 'gone' }] }]), /steps\[0\] \(id "b"\)\.cases\[0\]\.next: no step has id gone/],
    ['a branch without cases', minimal([{ id: 'b', type: 'branch', cases: [] }]), /steps\[0\] \(id "b"\)\.cases: cases needs at least one case/],
    ['a condition with two tests', minimal([{ id: 'b', type: 'branch', cases: [{ when: { variable: 'x', equals: 1, is_empty: true }, next: 'b' }] }]), /steps\[0\] \(id "b"\)\.cases\[0\]\.when/],
    ['a duplicate step id', minimal([say, { ...say }]), /^steps\[1\] \(id "hello"\)\.id: duplicate step id hello/],
    ['a script without steps', minimal([]), /^steps: a script needs at least one step/],
    ['an objective reaching an unknown step', minimal([say], { objectives: [{ objective: 'x', met_when: { step_reached: 'nope' } }] }), /^objectives\[0\]\.met_when\.step_reached: no step has id nope/],
    ['a malformed objective', minimal([say], { objectives: [{ goal: 'x' }] }), /^objectives\[0\]: must be a string or \{ objective, met_when \}/],
    ['a script without a name', { steps: [say] }, /^name: /],
    ['a transfer to something neither E.164 nor a SIP URI', minimal([{ id: 'x', type: 'transfer', to: '555-1234' }]), /^steps\[0\] \(id "x"\)\.to: to must be an E\.164 number \(\+15551234567\) or a SIP URI/],
    ['a transfer to a SIP URI with spaces', minimal([{ id: 'x', type: 'transfer', to: 'sip:desk @pbx.example.com' }]), /^steps\[0\] \(id "x"\)\.to: to must be an E\.164 number/],
    ['a transfer without a target', minimal([{ id: 'x', type: 'transfer' }]), /^steps\[0\] \(id "x"\)\.to: to must be a string/],
    ['a transfer in an unknown mode', minimal([{ id: 'x', type: 'transfer', to: '+14155552671', mode: 'attended' }]), /^steps\[0\] \(id "x"\)\.mode: mode must be one of bridge, refer/],
    ['a transfer whose on_failure names no step', minimal([{ id: 'x', type: 'transfer', to: '+14155552671', on_failure: 'nobody' }]), /^steps\[0\] \(id "x"\)\.on_failure: no step has id nobody/],
    ['a transfer with an empty announcement', minimal([{ id: 'x', type: 'transfer', to: '+14155552671', announcement: '' }]), /^steps\[0\] \(id "x"\)\.announcement: announcement must not be empty/],
    ['a transfer with an unknown field', minimal([{ id: 'x', type: 'transfer', to: '+14155552671', timeout: 5 }]), /^steps\[0\] \(id "x"\): Unrecognized key: "timeout"/],
    ['a converse step without instructions', minimal([{ id: 'c', type: 'converse' }]), /^steps\[0\] \(id "c"\)\.instructions: instructions must be a string/],
    ['a converse tool with an invalid JSON Schema', minimal([converse({ parameters: { type: 'object', properties: { day: { type: 'weekday' } } } })]), /^steps\[0\] \(id "c"\)\.tools\[0\]\.parameters: parameters is not a valid JSON Schema/],
    ['a converse tool whose parameters are not an object schema', minimal([converse({ parameters: { type: 'string' } })]), /^steps\[0\] \(id "c"\)\.tools\[0\]\.parameters: parameters\.type must be "object"/],
    ['a converse tool whose next names no step', minimal([converse({ next: 'nowhere' })]), /^steps\[0\] \(id "c"\)\.tools\[0\]\.next: no step has id nowhere/],
    ['a converse tool with a name the model cannot call', minimal([converse({ name: 'book appointment' })]), /^steps\[0\] \(id "c"\)\.tools\[0\]\.name: name must be 1 to 64 letters/],
    ['a converse tool writing a read-only variable', minimal([converse({ variable: 'contact.booking' })]), /^steps\[0\] \(id "c"\)\.tools\[0\]\.variable: cannot write contact\.booking/],
    ['two converse tools of one name', minimal([{ ...converse(), tools: [converse().tools[0], converse().tools[0]] }]), /^steps\[0\] \(id "c"\)\.tools\[1\]\.name: duplicate tool name book/],
    ['a converse on_error naming no step', minimal([{ ...converse(), on_error: 'gone' }]), /^steps\[0\] \(id "c"\)\.on_error: no step has id gone/],
    ['a converse on_max_turns naming no step', minimal([{ ...converse(), on_max_turns: 'gone' }]), /^steps\[0\] \(id "c"\)\.on_max_turns: no step has id gone/],
    ['a converse max_turns of 0', minimal([{ ...converse(), max_turns: 0 }]), /^steps\[0\] \(id "c"\)\.max_turns: max_turns must be a whole number from 1 to 50/],
    ['model_limits with an unknown cap', minimal([say], { model_limits: { dollars_per_call: 1 } }), /^model_limits: Unrecognized key: "dollars_per_call"/],
  ];
  for (const [name, input, pattern] of rows) it(`rejects ${name}`, () => rejects(input, pattern));
});
