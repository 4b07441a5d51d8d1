// Incoming phone calls on the media edge (src/mediaEdge/inboundPhoneCalls.ts): a real baresip
// phone dials through the trunk agent (the "trunk" is loopback), the edge asks the real API
// (Koa over Postgres, a Temporal time-skipping environment without a worker: the call
// workflow is only started here; test/workflows/inboundCallWorkflow.test.ts runs it) and
// answers with RTP, or refuses with the SIP status the service names.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { freePort } from '../../src/localPorts.js';
import { CallEventReporter } from '../../src/mediaEdge/callEvents.js';
import { answerInboundCalls } from '../../src/mediaEdge/inboundPhoneCalls.js';
import type { PhoneCall } from '../../src/mediaEdge/phoneCall.js';
import { openRtpSession } from '../../src/mediaEdge/rtp/rtpSession.js';
import { SipTrunkAgent } from '../../src/mediaEdge/sip/trunk/sipTrunkAgent.js';
import { addTeamNumber } from '../../src/services/phoneNumbers.js';
import { BaresipPhone } from '../support/baresip.js';
import { createTestTeam, startTestApi, type TestApi } from '../support/app.js';
import { createTimeSkippingEnv } from '../support/temporal.js';

const SECRET = 'media-edge-secret-for-inbound-sip';
const CALLER = '+12125550123';
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

let env: TestWorkflowEnvironment;
let app: TestApi;
let phone: BaresipPhone;
let agent: SipTrunkAgent;
const answered: PhoneCall[] = [];
let numberSeq = 0;

const freshNumber = () => `+1303${String(process.pid % 1000).padStart(3, '0')}${String(1000 + (numberSeq++ % 9000)).padStart(4, '0')}`;

before(async () => {
  env = await createTimeSkippingEnv();
  app = await startTestApi({ temporal: env.client, config: { TEMPORAL_TASK_QUEUE: 'inbound-sip', RATE_LIMITS_ENABLED: 'false', MEDIA_EDGE_SECRET: SECRET } });
  phone = await BaresipPhone.start({ accounts: [{ number: CALLER, answer: 'auto' }] });
  const port = await freePort();
  agent = await SipTrunkAgent.start({
    settings: {
      trunk: { uri: `sip:127.0.0.1:${phone.sipPort};transport=udp`, host: '127.0.0.1', port: phone.sipPort, transport: 'udp' },
      listen: { host: '127.0.0.1', port },
      publicAddress: { host: '127.0.0.1', port },
      rtpPortRange: { min: 42000, max: 42999 },
      allowedSources: ['127.0.0.1'],
    },
    logger,
    timers: { t1Ms: 50, t2Ms: 400, t4Ms: 500 },
  });
  answerInboundCalls(agent, {
    apiUrl: app.url,
    secret: SECRET,
    openRtp: () => openRtpSession({ portRange: { min: 42000, max: 42999 }, bindAddress: '127.0.0.1', logger }),
    publicAddress: '127.0.0.1',
    reporter: new CallEventReporter({ apiUrl: app.url, secret: SECRET, logger }),
    onCall: (call) => answered.push(call),
    logger,
  });
});

after(async () => {
  await Promise.all(answered.map((c) => c.hangUp().catch(() => undefined)));
  await agent?.close();
  await phone?.stop();
  await app?.close();
  await env?.teardown();
});

/** Dials `number` through the agent; resolves with the phone's next CALL_ESTABLISHED or CALL_CLOSED. */
async function dial(number: string) {
  const from = phone.events.length;
  await phone.dial(`sip:${number}@127.0.0.1:${agent.port}`, CALLER);
  return Promise.race([
    phone.waitForEvent('CALL_ESTABLISHED', (e) => phone.events.indexOf(e) >= from),
    phone.waitForEvent('CALL_CLOSED', (e) => phone.events.indexOf(e) >= from),
  ]);
}

const callsTo = async (number: string) => (await app.pool.query('SELECT id, type, status, from_number FROM calls WHERE to_number = $1', [number])).rows;

describe('incoming phone calls from a baresip caller', () => {
  test('a number with an inbound script: answered with RTP, an inbound call in progress handed to onCall; our hang-up sends BYE', async () => {
    const team = await createTestTeam(app.pool);
    const number = freshNumber();
    await addTeamNumber(app.pool, { teamId: team.teamId, phoneNumber: number, inboundScriptId: team.scriptId });
    const event = await dial(number);
    assert.equal(event.type, 'CALL_ESTABLISHED', JSON.stringify(event));
    const rows = await callsTo(number);
    assert.equal(rows.length, 1);
    assert.deepEqual({ type: rows[0].type, status: rows[0].status, from: rows[0].from_number }, { type: 'inbound', status: 'in-progress', from: CALLER });
    const call = answered.find((c) => c.callId === rows[0].id);
    assert.ok(call, 'the call went to onCall with the service’s call id');
    assert.equal(call.codec, 'PCMU');
    await call.hangUp();
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === event.id);
  });

  test('an unknown number: 404, nothing recorded', async () => {
    const number = freshNumber();
    const event = await dial(number);
    assert.equal(event.type, 'CALL_CLOSED');
    assert.match(String(event.param), /404/);
    assert.deepEqual(await callsTo(number), []);
  });

  test('a number without an inbound script: 480', async () => {
    const team = await createTestTeam(app.pool);
    const event = await dial(team.fromNumber);
    assert.equal(event.type, 'CALL_CLOSED');
    assert.match(String(event.param), /480/);
    assert.deepEqual(await callsTo(team.fromNumber), []);
  });

  test('the team at its ceiling: 486 Busy Here and no call row', async () => {
    const team = await createTestTeam(app.pool, { maxConcurrent: 1 });
    const number = freshNumber();
    await addTeamNumber(app.pool, { teamId: team.teamId, phoneNumber: number, inboundScriptId: team.scriptId });
    const first = await dial(number);
    assert.equal(first.type, 'CALL_ESTABLISHED');
    const busy = await dial(number);
    assert.equal(busy.type, 'CALL_CLOSED');
    assert.match(String(busy.param), /486/);
    assert.equal((await callsTo(number)).length, 1, 'only the call that holds the slot');
    const [row] = await callsTo(number);
    await answered.find((c) => c.callId === row.id)?.hangUp();
    await phone.waitForEvent('CALL_CLOSED', (e) => e.id === first.id);
  });
});
