// The web session workflow in the time-skipping environment: real activities over the test
// database, sessions minted and redeemed through the service (src/services/webSessions.ts).
// Time is driven with start() + env.sleep() and only moves when a test moves it (no
// awaited result while a session is meant to stay minted).
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Pool } from '../../src/db/pool.js';
import { countLiveSlots } from '../../src/db/repositories/concurrencySlots.js';
import { findWebSessionById } from '../../src/db/repositories/webSessions.js';
import { scheduleCall } from '../../src/services/calls.js';
import { UseCaseError } from '../../src/services/errors.js';
import { createWebCall, createWebSession, redeemWebSession, type WebSessionServiceDeps } from '../../src/services/webSessions.js';
import { CALL_ID, TEAM_ID, WEB_SESSION_ID } from '../../src/temporal/searchAttributes.js';
import {
  callEventSignal,
  callWorkflowId,
  webSessionStateQuery,
  webSessionWorkflowId,
  WEB_SESSION_TTL_MS,
  type CallWorkflowResult,
  type WebSessionWorkflowResult,
} from '../../workflows/contracts.js';
import { createTestTeam, httpStatus, type TestTeam } from '../support/app.js';
import { callRow, callTestConfig, calleeNumber, startCallWorkerEnv, waitForCall, type CallWorkerEnv } from '../support/calls.js';
import { workflowBundle } from '../../src/temporal/worker.js';

const { History } = proto.temporal.api.history.v1;
// Recorded histories (protobuf) of web session runs; the replay test at the end guards
// determinism. RECORD_WEB_SESSION_HISTORIES=1 re-records them from this run (only when the
// workflow changes on purpose in a way old runs cannot replay).
const HISTORIES_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'webSessionHistories');
const RECORD = process.env.RECORD_WEB_SESSION_HISTORIES === '1';

const config = callTestConfig({
  MEDIA_EDGE_WS_URL: 'wss://edge.test/ws',
  MEDIA_EDGE_SIP_DOMAIN: 'edge.test',
  MEDIA_EDGE_SECRET: 'test-media-edge-secret',
});

let calls: CallWorkerEnv;
let env: TestWorkflowEnvironment;
let pool: Pool;
let deps: WebSessionServiceDeps;

before(async () => {
  calls = await startCallWorkerEnv(config);
  ({ env, pool } = calls);
  deps = { pool, temporal: env.client, config };
});

after(async () => {
  await calls?.stop();
});

const mint = (team: TestTeam, extra: Partial<Parameters<typeof createWebSession>[1]> = {}) =>
  createWebSession(deps, { teamId: team.teamId, scriptId: team.scriptId, ...extra });

const sessionHandle = (sessionId: string) => env.client.workflow.getHandle(webSessionWorkflowId(sessionId));

/** With RECORD_WEB_SESSION_HISTORIES=1: keeps the closed session's history for the replay test. */
async function record(sessionId: string, name: string): Promise<void> {
  if (!RECORD) return;
  mkdirSync(HISTORIES_DIR, { recursive: true });
  const history = await sessionHandle(sessionId).fetchHistory();
  writeFileSync(path.join(HISTORIES_DIR, `webSession-${name}.bin`), History.encode(history).finish());
}
const sessionState = async (sessionId: string) => (await sessionHandle(sessionId).query(webSessionStateQuery)).state;
const callResult = (callId: string): Promise<CallWorkflowResult> => env.client.workflow.getHandle(callWorkflowId(callId)).result();

/** The HTTP status the API answers for a redemption. */
async function redeemStatus(token: string): Promise<number> {
  try {
    await redeemWebSession(deps, token);
    return 201;
  } catch (err) {
    if (!(err instanceof UseCaseError)) throw err;
    return httpStatus(err);
  }
}

async function teamCallCount(teamId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM calls WHERE team_id = $1', [teamId]);
  return rows[0].n;
}

/** The media edge's side of a connected web call: answered, then ended. */
async function connectAndHangUp(callId: string): Promise<CallWorkflowResult> {
  const handle = env.client.workflow.getHandle(callWorkflowId(callId));
  await handle.signal(callEventSignal, { type: 'answered', event_id: 'a' });
  await waitForCall(pool, callId, (c) => c.status === 'in-progress');
  await handle.signal(callEventSignal, { type: 'ended', reason: 'agent_hangup', event_id: 'b' });
  return callResult(callId);
}

describe('web session: minted, used, expired', () => {
  test('minting starts web-session-<id> with the WebSessionId and TeamId search attributes; no call exists yet', async () => {
    const team = await createTestTeam(pool);
    const session = await mint(team);
    const description = await sessionHandle(session.session_id).describe();
    assert.equal(description.status.name, 'RUNNING');
    assert.equal(description.typedSearchAttributes.get(WEB_SESSION_ID), session.session_id);
    assert.equal(description.typedSearchAttributes.get(TEAM_ID), team.teamId);
    assert.equal(await sessionState(session.session_id), 'minted');
    assert.equal(await teamCallCount(team.teamId), 0);
    assert.equal((await findWebSessionById(pool, session.session_id))?.status, 'minted');
    assert.equal(await countLiveSlots(pool, team.teamId), 1, 'the session holds a slot');
  });

  test('a redemption one second before two minutes creates the web call; one at two minutes is expired and creates nothing', async () => {
    const team = await createTestTeam(pool);
    const early = await mint(team);
    const late = await mint(team);
    await env.sleep(WEB_SESSION_TTL_MS - 1_000);
    assert.equal(await sessionState(late.session_id), 'minted', 'still minted at 1:59');

    const redemption = await redeemWebSession(deps, early.session_token);
    assert.equal(redemption.scriptId, team.scriptId);
    assert.equal(redemption.contactId, early.contact_id);

    await env.sleep(1_000);
    assert.equal(await redeemStatus(late.session_token), 410);
    const ended: WebSessionWorkflowResult = await sessionHandle(late.session_id).result();
    assert.deepEqual(ended, { sessionId: late.session_id, state: 'expired', callId: null });
    const row = await findWebSessionById(pool, late.session_id);
    assert.equal(row?.status, 'expired');
    assert.equal(row?.call_id, null);
    assert.equal(await teamCallCount(team.teamId), 1, 'only the early redemption made a call');
    assert.equal(await redeemStatus(late.session_token), 410, 'still expired once the workflow has closed');
  });

  test('the expiry timer fires at two minutes exactly: the workflow closes expired and frees the slot', async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const session = await mint(team);
    const started = (await sessionHandle(session.session_id).describe()).startTime.getTime();
    const ended: WebSessionWorkflowResult = await sessionHandle(session.session_id).result();
    assert.equal(ended.state, 'expired');
    const history = await sessionHandle(session.session_id).fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes);
    assert.equal(timers.length, 1);
    const fired = (history.events ?? []).find((e) => e.timerFiredEventAttributes);
    const firedAt = Number(fired!.eventTime!.seconds) * 1000 + Math.floor((fired!.eventTime!.nanos ?? 0) / 1e6);
    assert.ok(Math.abs(firedAt - started - WEB_SESSION_TTL_MS) < 1_000, `fired ${firedAt - started} ms after the start`);
    assert.equal(await countLiveSlots(pool, team.teamId), 0, 'the slot is back');
    await mint(team);
    await record(session.session_id, 'expired');
  });

  test('a redeemed session: one web call in the call log, the session used, and a second redemption answers 409', async () => {
    const team = await createTestTeam(pool);
    const session = await mint(team, { participantIdentity: 'visitor-7' });
    const redemption = await redeemWebSession(deps, session.session_token);
    const call = await callRow(pool, redemption.callId);
    assert.equal(call.type, 'web');
    assert.equal(call.status, 'scheduled');
    assert.equal(call.progress, 'waiting_for_connection');
    assert.equal(call.contact_id, session.contact_id);
    assert.equal(call.script_id, team.scriptId);
    assert.equal(call.participant_identity, 'visitor-7');
    const row = await findWebSessionById(pool, session.session_id);
    assert.equal(row?.status, 'used');
    assert.equal(row?.call_id, redemption.callId);
    assert.equal(await redeemStatus(session.session_token), 409);

    const ended: WebSessionWorkflowResult = await sessionHandle(session.session_id).result();
    assert.deepEqual(ended, { sessionId: session.session_id, state: 'used', callId: redemption.callId });
    const description = await sessionHandle(session.session_id).describe();
    assert.equal(description.typedSearchAttributes.get(CALL_ID), redemption.callId);
    assert.equal(await redeemStatus(session.session_token), 409, 'still used once the workflow has closed');
    assert.equal(await redeemStatus('wst_unknown'), 404);
    await record(session.session_id, 'used');
  });

  test('of twenty concurrent redemptions of one token exactly one creates a call; the others answer 409', async () => {
    const team = await createTestTeam(pool);
    const session = await mint(team);
    const statuses = await Promise.all(Array.from({ length: 20 }, () => redeemStatus(session.session_token)));
    assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses: ${statuses.join(',')}`);
    assert.equal(statuses.filter((s) => s === 409).length, 19);
    assert.equal(await teamCallCount(team.teamId), 1);
    await sessionHandle(session.session_id).result();
    await record(session.session_id, 'raced');
  });
});

describe('web session: a redemption that cannot create its call', () => {
  test('leaves the session minted: the redemption fails, and a later one succeeds once the cause is fixed', async () => {
    const team = await createTestTeam(pool);
    const session = await mint(team, { did: team.fromNumber });
    await pool.query('DELETE FROM phone_numbers WHERE team_id = $1 AND phone_number = $2', [team.teamId, team.fromNumber]);
    await assert.rejects(redeemWebSession(deps, session.session_token), (err: Error) => err.name === 'WorkflowUpdateFailedError');
    assert.equal(await sessionState(session.session_id), 'minted');
    assert.equal((await findWebSessionById(pool, session.session_id))?.status, 'minted');
    assert.equal(await teamCallCount(team.teamId), 0);

    await pool.query('INSERT INTO phone_numbers (team_id, phone_number) VALUES ($1, $2)', [team.teamId, team.fromNumber]);
    const redemption = await redeemWebSession(deps, session.session_token);
    assert.equal((await callRow(pool, redemption.callId)).from_number, team.fromNumber);
    assert.equal(await redeemStatus(session.session_token), 409);
  });
});

describe('web session: slot accounting', () => {
  test('session → call → end, and expiry: slots are taken at minting, passed to the call and given back', async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 2 });
    const a = await mint(team);
    const b = await mint(team);
    await assert.rejects(mint(team), (err: any) => httpStatus(err) === 429 && err.message === 'Team is at its concurrent call limit of 2' && err.extra.max_concurrent === 2);
    assert.equal(await countLiveSlots(pool, team.teamId), 2);

    const redemption = await redeemWebSession(deps, a.session_token);
    assert.equal(await countLiveSlots(pool, team.teamId), 2, 'the slot passed from the session to its call');
    await assert.rejects(mint(team), (err: any) => httpStatus(err) === 429);

    const outcome = await connectAndHangUp(redemption.callId);
    assert.equal(outcome.status, 'completed');
    // Awaiting the call skipped time past b's expiry too: both slots are back.
    assert.equal((await sessionHandle(b.session_id).result()).state, 'expired');
    assert.equal(await countLiveSlots(pool, team.teamId), 0);
    const c = await mint(team);
    const d = await mint(team);
    assert.ok(c.session_id && d.session_id);
  });

  test('a session expiring wakes a phone call waiting for its slot', async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const session = await mint(team);
    const phone = await scheduleCall(deps, {
      teamId: team.teamId,
      fromNumber: team.fromNumber,
      scriptId: team.scriptId,
      contact: { phone_number: calleeNumber('4321'), first_name: 'Ada' },
    });
    await waitForCall(pool, phone.callId, (c) => c.progress === 'waiting_for_slot');
    await env.sleep(WEB_SESSION_TTL_MS);
    assert.equal((await sessionHandle(session.session_id).result()).state, 'expired');
    const started = await waitForCall(pool, phone.callId, (c) => c.status !== 'scheduled');
    assert.ok(['in-progress', 'completed'].includes(started.status));
    assert.equal((await callResult(phone.callId)).status, 'completed');
  });
});

describe('create-web-call', () => {
  test('a web call nobody connects to ends failed / not_connected after two minutes and gives its slot back', async () => {
    const team = await createTestTeam(pool, { maxConcurrent: 1 });
    const call = await createWebCall(deps, { teamId: team.teamId, scriptId: team.scriptId });
    assert.equal(call.status, 'scheduled');
    assert.equal(await countLiveSlots(pool, team.teamId), 1, 'the call holds a slot');
    await assert.rejects(mint(team), (err: any) => httpStatus(err) === 429);
    await env.sleep(WEB_SESSION_TTL_MS - 5_000);
    assert.equal((await callRow(pool, call.call_id)).status, 'scheduled');
    assert.deepEqual(await callResult(call.call_id), { callId: call.call_id, status: 'failed', endReason: 'not_connected' });
    assert.equal(await countLiveSlots(pool, team.teamId), 0);
  });

  test('a connected web call runs to the end reported by the media edge', async () => {
    const team = await createTestTeam(pool);
    const call = await createWebCall(deps, { teamId: team.teamId, scriptId: team.scriptId });
    const outcome = await connectAndHangUp(call.call_id);
    assert.equal(outcome.status, 'completed');
    assert.equal(await countLiveSlots(pool, team.teamId), 0);
  });
});

describe('web session workflow replay', () => {
  test('recorded histories (used, expired, a 20-way race) replay without nondeterminism', async () => {
    const files = readdirSync(HISTORIES_DIR).filter((f) => f.endsWith('.bin'));
    assert.deepEqual(files.sort(), ['webSession-expired.bin', 'webSession-raced.bin', 'webSession-used.bin']);
    for (const file of files) {
      const history = History.decode(readFileSync(path.join(HISTORIES_DIR, file)));
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
    }
  });
});
