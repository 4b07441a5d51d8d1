// A call's recording after the call, against real stores that fail: a local store whose
// folder lies under a regular file (every write fails ENOTDIR), then recovers when the file
// makes way for a folder. The lost recording's System Note goes through the real API over
// Postgres. Waits between attempts are recorded, not slept.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, beforeEach, test } from 'node:test';
import { Client } from '@temporalio/client';
import { createLogger } from '../../src/logging/logger.js';
import { CallEventReporter } from '../../src/mediaEdge/callEvents.js';
import { FRAME_MS, FRAME_SAMPLES, type ChannelCloseReason, type MediaChannel, type PcmFrame } from '../../src/mediaEdge/media/channel.js';
import { CallRecorder } from '../../src/mediaEdge/recording/callRecorder.js';
import { DEFAULT_RECORDING_RETRY, lostNoteText, uploadRecording, type RecordingRetryPolicy } from '../../src/mediaEdge/recording/recordingUpload.js';
import { loadMediaEdgeConfig } from '../../src/mediaEdge/server.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { localRecordingStore } from '../../src/recordings/local.js';
import { startTestApi, type TestApi } from '../support/app.js';
import { insertCallRowTeam, insertPhoneCalls, type CallRowTeam } from '../support/callRows.js';

const SECRET = 'recording-upload-media-edge-secret';

/** A channel whose caller frames the test emits. */
class FakeChannel implements MediaChannel {
  private inbound = new Set<(f: PcmFrame) => void>();
  readonly closed = new Promise<ChannelCloseReason>(() => undefined);
  onInbound(listener: (f: PcmFrame) => void) {
    this.inbound.add(listener);
    return () => this.inbound.delete(listener);
  }
  onOutbound() {
    return () => undefined;
  }
  enqueue(): void {}
  clear(): void {}
  async drained(): Promise<void> {}
  caller(frame: PcmFrame) {
    for (const l of this.inbound) l(frame);
  }
}

/** A log that keeps every line it is given. */
function capturedLogger() {
  const lines: { level: number; msg: string; attempts?: number }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as (typeof lines)[number]);
      done();
    },
  });
  return { logger: createLogger('info', stream), lines };
}

let app: TestApi;
let team: CallRowTeam;
let work: string;
let spoolDir: string;

before(async () => {
  app = await startTestApi({ temporal: new Client(), config: { MEDIA_EDGE_SECRET: SECRET } });
  team = await insertCallRowTeam(app.pool, 5);
  work = mkdtempSync(path.join(os.tmpdir(), 'recording-upload-'));
});
after(async () => {
  await app?.close();
  rmSync(work, { recursive: true, force: true });
});
beforeEach(() => {
  spoolDir = mkdtempSync(path.join(work, 'spool-'));
});

/** A phone call that has ended (the workflow's own notes are all written by then). */
async function endedCall(): Promise<string> {
  const [callId] = await insertPhoneCalls(app.pool, team, 1);
  await app.pool.query(`UPDATE calls SET status = 'completed', end_reason = 'agent_hangup', end_time = now() WHERE id = $1`, [callId]);
  return callId;
}

async function notesOf(callId: string): Promise<{ kind: string; text: string }[]> {
  const { rows } = await app.pool.query<{ system_notes: { kind: string; text: string }[] }>('SELECT system_notes FROM calls WHERE id = $1', [callId]);
  return rows[0].system_notes;
}

/** A recorder that spooled a second of the caller's audio, ended at one second. */
function recordedSecond(store: ReturnType<typeof localRecordingStore>, key: string): CallRecorder {
  const channel = new FakeChannel();
  let now = 0;
  const recorder = CallRecorder.start(channel, { store, key, clock: () => now, spoolDir });
  for (let i = 0; i < 50; i++) {
    now = i * FRAME_MS;
    channel.caller(new Int16Array(FRAME_SAMPLES).fill(1000));
  }
  now = 1000;
  return recorder;
}

/** A local store whose root lies under a regular file: every write fails until `unblock()`. */
function blockedStore() {
  const blocker = path.join(work, `blocker-${Math.random().toString(36).slice(2)}`);
  writeFileSync(blocker, 'not a folder');
  return {
    store: localRecordingStore(path.join(blocker, 'recordings')),
    unblock() {
      rmSync(blocker);
      mkdirSync(blocker);
    },
  };
}

const POLICY: RecordingRetryPolicy = { attempts: 4, firstDelayMs: 500, maxDelayMs: 1500 };

test('a store that keeps failing: tried `attempts` times with doubling waits, then the spool is discarded, an error is logged and the call gets one recording_lost System Note', async () => {
  const callId = await endedCall();
  const { store } = blockedStore();
  const recorder = recordedSecond(store, recordingKey(team.id, callId));
  const { logger, lines } = capturedLogger();
  const reporter = new CallEventReporter({ apiUrl: app.url, secret: SECRET, logger });
  const waits: number[] = [];

  const result = await uploadRecording(recorder, {
    policy: POLICY,
    logger,
    sleep: async (ms) => {
      waits.push(ms);
      assert.equal(readdirSync(spoolDir).length, 1, 'the audio is kept while it is tried again');
    },
    noteLost: async (text) => {
      await reporter.addSystemNote(callId, { kind: 'recording_lost', text });
    },
  });

  assert.equal(result.outcome, 'lost');
  assert.equal(result.attempts, 4);
  assert.match(String((result as { error: Error }).error), /ENOTDIR/);
  assert.deepEqual(waits, [500, 1000, 1500], 'doubling, capped at maxDelayMs');
  assert.deepEqual(readdirSync(spoolDir), [], 'the spool files are gone');
  const errors = lines.filter((l) => l.level >= 50);
  assert.equal(errors.length, 1);
  assert.match(errors[0].msg, /^recording lost/);
  assert.equal(errors[0].attempts, 4);
  assert.equal(lines.filter((l) => /trying again/.test(l.msg)).length, 3);
  assert.deepEqual(
    (await notesOf(callId)).map((n) => [n.kind, n.text]),
    [['recording_lost', lostNoteText(4)]],
  );
});

test('a store that recovers: stored on a later attempt, the spool removed, no note and no error', async () => {
  const callId = await endedCall();
  const { store, unblock } = blockedStore();
  const key = recordingKey(team.id, callId);
  const recorder = recordedSecond(store, key);
  const { logger, lines } = capturedLogger();
  let waited = 0;
  const result = await uploadRecording(recorder, {
    policy: POLICY,
    logger,
    sleep: async () => {
      if (++waited === 2) unblock();
    },
    noteLost: () => assert.fail('no note for a stored recording'),
  });
  assert.equal(result.outcome, 'stored');
  assert.equal(result.attempts, 3);
  assert.equal(await store.exists(key), true);
  assert.deepEqual(readdirSync(spoolDir), []);
  assert.equal(lines.filter((l) => l.level >= 50).length, 0);
  assert.deepEqual(await notesOf(callId), []);
});

test('a key that already holds a recording is never overwritten: the second session’s audio is dropped at once, without retries or a note', async () => {
  const callId = await endedCall();
  const store = localRecordingStore(path.join(work, 'store'));
  const key = recordingKey(team.id, callId);
  await uploadRecording(recordedSecond(store, key), { policy: POLICY, logger: createLogger('silent') });
  const first = (await store.get(key))!.size;

  const { logger, lines } = capturedLogger();
  const waits: number[] = [];
  const result = await uploadRecording(recordedSecond(store, key), {
    policy: POLICY,
    logger,
    sleep: async (ms) => void waits.push(ms),
    noteLost: () => assert.fail('the call has its recording'),
  });
  assert.equal(result.outcome, 'exists');
  assert.equal(result.attempts, 1);
  assert.deepEqual(waits, []);
  assert.equal((await store.get(key))!.size, first);
  assert.deepEqual(readdirSync(spoolDir), []);
  assert.match(lines.find((l) => l.level >= 50)?.msg ?? '', /never overwritten/);
});

test('a note for a call still open is tried again until it ends; an unknown call is refused for good', async () => {
  const [callId] = await insertPhoneCalls(app.pool, team, 1);
  const statuses: number[] = [];
  let refused!: () => void;
  const firstRefusal = new Promise<void>((resolve) => (refused = resolve));
  // The real fetch, watched: the call is ended once the service has refused the note as open.
  const watched: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    statuses.push(res.status);
    if (res.status === 409) refused();
    return res;
  };
  const reporter = new CallEventReporter({ apiUrl: app.url, secret: SECRET, logger: createLogger('silent'), attempts: 10, fetch: watched });
  const noted = reporter.addSystemNote(callId, { kind: 'recording_lost', text: lostNoteText(1) });
  await firstRefusal;
  await app.pool.query(`UPDATE calls SET status = 'hang-up', end_reason = 'User Hangup', end_time = now() WHERE id = $1`, [callId]);
  assert.equal(await noted, true);
  assert.equal(statuses[0], 409);
  assert.equal(statuses.at(-1), 200);
  assert.deepEqual((await notesOf(callId)).map((n) => n.kind), ['recording_lost']);
  assert.equal(await reporter.addSystemNote('6b7c2a4e-3f1d-4c9e-8a6b-5d4e3f2a1b0c', { kind: 'recording_lost', text: 'x' }), false);
});

test('the retry settings: defaults, and a bad value stops start-up naming its variable', () => {
  const config = loadMediaEdgeConfig({ MEDIA_EDGE_SECRET: SECRET });
  assert.deepEqual(
    [config.MEDIA_EDGE_RECORDING_UPLOAD_ATTEMPTS, config.MEDIA_EDGE_RECORDING_RETRY_FIRST_MS, config.MEDIA_EDGE_RECORDING_RETRY_MAX_MS],
    [DEFAULT_RECORDING_RETRY.attempts, DEFAULT_RECORDING_RETRY.firstDelayMs, DEFAULT_RECORDING_RETRY.maxDelayMs],
  );
  assert.deepEqual(DEFAULT_RECORDING_RETRY, { attempts: 6, firstDelayMs: 2000, maxDelayMs: 60_000 });
  const bad: [Record<string, string>, RegExp][] = [
    [{ MEDIA_EDGE_RECORDING_UPLOAD_ATTEMPTS: '0' }, /MEDIA_EDGE_RECORDING_UPLOAD_ATTEMPTS/],
    [{ MEDIA_EDGE_RECORDING_UPLOAD_ATTEMPTS: 'many' }, /MEDIA_EDGE_RECORDING_UPLOAD_ATTEMPTS/],
    [{ MEDIA_EDGE_RECORDING_RETRY_FIRST_MS: '-5' }, /MEDIA_EDGE_RECORDING_RETRY_FIRST_MS/],
    [{ MEDIA_EDGE_RECORDING_RETRY_FIRST_MS: '5000', MEDIA_EDGE_RECORDING_RETRY_MAX_MS: '1000' }, /MEDIA_EDGE_RECORDING_RETRY_MAX_MS/],
  ];
  for (const [env, variable] of bad) assert.throws(() => loadMediaEdgeConfig({ MEDIA_EDGE_SECRET: SECRET, ...env }), variable, JSON.stringify(env));
});
