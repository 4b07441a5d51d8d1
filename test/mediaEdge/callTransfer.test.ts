// The edge's transfer by REFER (src/mediaEdge/callTransfer.ts) against independent SIP software:
// the trunk agent calls a SIPp callee (one scenario per case, test/mediaEdge/sipScenarios/), the
// answered call is a real RTP session, and the transfer sends REFER in its dialog. A callee that
// accepts (202, then a NOTIFY whose sipfrag is 200) is left with a BYE: transferred by refer. One
// that refuses (603) gets the bridge instead: baresip as the person, dialled at its SIP URI,
// answers and hangs up, and the edge then hangs up on the callee.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { freeSipPort } from '../support/sipPorts.js';
import { createLogger } from '../../src/logging/logger.js';
import { CallTransfers, type TransferableCall } from '../../src/mediaEdge/callTransfer.js';
import type { ConversationEngine } from '../../src/mediaEdge/conversation/engine.js';
import { establishedPhoneCall } from '../../src/mediaEdge/phoneCall.js';
import { g711Offer, parseG711Answer } from '../../src/mediaEdge/rtp/g711Sdp.js';
import { openRtpSession } from '../../src/mediaEdge/rtp/rtpSession.js';
import { SipTrunkAgent } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import { parseTrunkSettings } from '../../src/mediaEdge/sip/trunk/trunkSettings.js';
import { BaresipPhone } from '../support/baresip.js';
import { startSipp } from '../support/sipp.js';

const run = promisify(execFile);
const logger = createLogger(process.env.EDGE_LOG_LEVEL ?? 'silent');
const RTP_RANGE = { min: 45000, max: 45199 };
const TARGET = '+14155550199';
const PERSON = '+14155550198';
const scenario = (name: string) => path.join('test/mediaEdge/sipScenarios', name);

let work: string;
let person: BaresipPhone;

before(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'call-transfer-'));
  const speech = path.join(work, 'person.wav');
  // The person answers and says something for 2 s (a tone), then hangs up.
  // spawns: sox
  await run('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', speech, 'synth', '2', 'sine', '800', 'vol', '0.3']);
  person = await BaresipPhone.start({ accounts: [{ number: PERSON, answer: 'auto' }], audioFile: speech });
});

after(async () => {
  await person?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** An engine stand-in for the person's leg: says nothing, hears silence until the bridge stops listening. */
const quietEngine = () =>
  ({
    speak: async () => ({ interrupted: false, playedMs: 0 }),
    listen: ({ signal }: { signal?: AbortSignal }) => new Promise((resolve) => signal?.addEventListener('abort', () => resolve({ kind: 'silence' }), { once: true })),
    close: () => undefined,
  }) as unknown as ConversationEngine;

/** The agent's call to a SIPp callee, answered, as the edge holds it. */
async function answeredCall(sippPort: number) {
  const agent = await SipTrunkAgent.start({
    settings: parseTrunkSettings({ SIP_TRUNK_URI: `sip:127.0.0.1:${sippPort};transport=udp`, SIP_LISTEN: `127.0.0.1:${await freeSipPort()}`, RTP_PORT_RANGE: `${RTP_RANGE.min}-${RTP_RANGE.max}` })!,
    logger,
  });
  const openRtp = () => openRtpSession({ portRange: RTP_RANGE, bindAddress: '127.0.0.1', inactivityMs: 30_000, logger });
  const rtp = await openRtp();
  const answer = await agent.invite({ callId: `transfer-test-${Date.now()}`, fromNumber: '+14155550100', toNumber: '+14155550101', sdp: g711Offer({ address: '127.0.0.1', port: rtp.localPort, sessionId: 1 }) });
  assert.equal(answer.kind, 'answered');
  if (answer.kind !== 'answered') throw new Error('not answered');
  const remote = parseG711Answer(answer.sdp);
  assert.ok(!('error' in remote));
  rtp.setRemote(remote);
  const phone = establishedPhoneCall('call-1', rtp, answer.dialog, 'PCMU', logger);
  const call: TransferableCall = {
    callId: 'call-1',
    channel: phone.channel,
    conversation: {
      speak: async () => ({ interrupted: false, playedMs: 0 }),
      ask: async () => ({ kind: 'silence' }),
    },
    hangUp: () => phone.hangUp(),
    sipDialog: phone.dialog,
  };
  const transfers = new CallTransfers({ engineFor: quietEngine, logger, ringTimeoutMs: 8_000, referNotifyWaitMs: 10_000 });
  transfers.useTrunk({ trunk: agent, openRtp, publicAddress: '127.0.0.1' });
  return { agent, call, transfers };
}

describe('a transfer by REFER, against SIPp callees', () => {
  test('accepted (202, NOTIFY 200 sipfrag): transferred by refer, and the edge leaves the call with BYE', async () => {
    const sipp = await startSipp({ scenario: scenario('uas-refer-accept.xml') });
    const { agent, call, transfers } = await answeredCall(sipp.port);
    try {
      const result = await transfers.transfer(call, { callId: 'call-1', stepId: 'handoff', to: TARGET, mode: 'refer' }, new AbortController().signal);
      assert.deepEqual(result, { outcome: 'transferred', mode: 'refer' });
      assert.equal(call.handedOver, true, 'the channel closing is the transfer’s, not a hang-up');
      assert.equal(await call.channel.closed, 'local_hangup', 'the edge hung up its leg');
      const sippResult = await sipp.done;
      assert.equal(sippResult.code, 0, `SIPp saw REFER to ${TARGET}, sent NOTIFY and got BYE:\n${sippResult.output.slice(-2000)}\n${sippResult.errors}`);
    } finally {
      await sipp.stop();
      await agent.close();
    }
  });

  test('refused (603): the edge bridges instead, to the person at a SIP URI, and hangs up on the callee when the person does', async () => {
    const sipp = await startSipp({ scenario: scenario('uas-refer-decline.xml') });
    const { agent, call, transfers } = await answeredCall(sipp.port);
    try {
      const offers = person.events.filter((e) => e.type === 'CALL_REMOTE_SDP' && e.param === 'offer').length;
      const to = person.uri(PERSON);
      const result = await transfers.transfer(call, { callId: 'call-1', stepId: 'handoff', to, mode: 'refer' }, new AbortController().signal);
      assert.deepEqual(result, { outcome: 'transferred', mode: 'bridge', referRefused: 603, endedBy: 'person', turns: [] });
      assert.equal(person.events.filter((e) => e.type === 'CALL_REMOTE_SDP' && e.param === 'offer').length, offers + 1, 'the person was dialled once');
      assert.equal(await call.channel.closed, 'local_hangup', 'the edge hung up on the callee when the person hung up');
      const sippResult = await sipp.done;
      assert.equal(sippResult.code, 0, `SIPp refused the REFER to ${to} and got BYE:\n${sippResult.output.slice(-2000)}\n${sippResult.errors}`);
    } finally {
      await sipp.stop();
      await agent.close();
    }
  });
});
