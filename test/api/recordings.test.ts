// The recordings endpoints over the real Koa app and Postgres: the team's recording with the
// API key (whole and by range), signed links that play without it, recording_url after
// post-call analysis, and simulated calls whose recording is spoken on first read. Calls are
// written with the repositories (no workflow runs); the store is a local folder, and once
// the fake S3.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@temporalio/client';
import { createActivities } from '../../activities/index.js';
import type { Config } from '../../src/config/index.js';
import type { Pool } from '../../src/db/pool.js';
import { appendConversationTurns, completeCall, insertCall, markCallInProgress, setProviderCall } from '../../src/db/repositories/calls.js';
import { getOrCreateSharedWebContact } from '../../src/db/repositories/contacts.js';
import type { ConversationTurn } from '../../src/domain/calls.js';
import { freePort } from '../../src/localPorts.js';
import { createLogger } from '../../src/logging/logger.js';
import { localRecordingStore } from '../../src/recordings/local.js';
import { recordingKey } from '../../src/recordings/keys.js';
import { s3RecordingStore } from '../../src/recordings/s3.js';
import type { RecordingStore } from '../../src/recordings/store.js';
import type { SpeechSynthesis } from '../../src/recordings/synthesis.js';
import { decodeWav, encodeWav } from '../../src/recordings/wav.js';
import { startApi, type RunningApi } from '../../src/server.js';
import { recordingLinkSignature } from '../../src/services/recordings.js';
import { createTestTeam, testConfig, testPool, type TestTeam } from '../support/app.js';
import { startFakeS3, type FakeS3 } from '../support/fakeS3.js';

const LINK_SECRET = 'test-recording-link-secret-0123';

interface RecordingsApi {
  url: string;
  config: Config;
  api: RunningApi;
  speechCalls: string[];
}

let pool: Pool;
let dir: string;
let store: RecordingStore;
let app: RecordingsApi;
// A Temporal client that never connects: nothing here starts a workflow.
const temporal = new Client();

/** Speaks each text as a tone as many 10 ms long as it has characters (400 Hz, or 800 Hz for text with "agent"). */
const toneSpeech = (calls: string[]): SpeechSynthesis => async (text) => {
  calls.push(text);
  const samples = new Int16Array(text.length * 160);
  const hz = text.includes('agent') ? 800 : 400;
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(6000 * Math.sin((2 * Math.PI * hz * i) / 16_000));
  return samples;
};

/** The API on a port chosen first, so that PUBLIC_API_URL (the base of links and recording_url) is its real address. */
async function startRecordingsApi(opts: { recordings: RecordingStore; config?: Partial<Record<keyof Config, string>>; speech?: SpeechSynthesis }): Promise<RecordingsApi> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const config = testConfig({ PUBLIC_API_URL: url, RECORDING_LINK_SECRET: LINK_SECRET, ...opts.config });
  const speechCalls: string[] = [];
  const api = await startApi({ config, pool, temporal, logger: createLogger('silent'), port, recordings: opts.recordings, speech: opts.speech ?? toneSpeech(speechCalls) });
  return { url, config, api, speechCalls };
}

before(async () => {
  pool = await testPool();
  dir = mkdtempSync(path.join(os.tmpdir(), 'recordings-api-'));
  store = localRecordingStore(dir);
  app = await startRecordingsApi({ recordings: store });
});

after(async () => {
  await app?.api.close();
  rmSync(dir, { recursive: true, force: true });
});

async function request(method: string, url: string, opts: { key?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.Authorization = `Bearer ${opts.key}`;
  const res = await fetch(url.startsWith('http') ? url : app.url + url, { method, headers });
  const body = Buffer.from(await res.arrayBuffer());
  let json: any;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body, json };
}

/** A terminal web call of the team (connected unless `connected` is false), written directly. */
async function endedCall(team: TestTeam, opts: { connected?: boolean; provider?: string; turns?: ConversationTurn[]; status?: string } = {}): Promise<string> {
  const contact = await getOrCreateSharedWebContact(pool, team.teamId);
  const id = randomUUID();
  const simulated = opts.provider === 'simulator';
  await insertCall(pool, {
    id,
    teamId: team.teamId,
    contactId: contact.id,
    scriptId: team.scriptId,
    type: simulated ? 'outbound' : 'web',
    fromNumber: simulated ? team.fromNumber : null,
    toNumber: simulated ? '+14155550123' : null,
    scheduledTime: new Date(),
    progress: 'waiting_for_connection',
  });
  if (opts.provider) await setProviderCall(pool, id, opts.provider, `${opts.provider}-${id}`);
  const started = new Date(Date.now() - 5000);
  if (opts.connected !== false) await markCallInProgress(pool, id, started, 'in_conversation');
  if (opts.turns) await appendConversationTurns(pool, id, 0, opts.turns);
  const answered = opts.connected !== false;
  await completeCall(pool, id, {
    status: opts.status ?? (answered ? 'completed' : 'rang-out'),
    endReason: answered ? 'agent_hangup' : 'no_answer',
    endTime: new Date(),
    progress: 'analysing',
  });
  return id;
}

/** A small stereo WAV standing in for what the media edge writes. */
function sampleWav(seconds = 0.25): Buffer {
  const samples = new Int16Array(Math.round(seconds * 16_000) * 2);
  for (let i = 0; i < samples.length; i++) samples[i] = (i * 37) % 2000;
  return encodeWav(samples, { sampleRate: 16_000, channels: 2 });
}

async function recordedCall(team: TestTeam, target: RecordingStore = store): Promise<{ callId: string; wav: Buffer }> {
  const callId = await endedCall(team);
  const wav = sampleWav();
  await target.put(recordingKey(team.teamId, callId), wav, 'audio/wav');
  return { callId, wav };
}

const analyse = (callId: string, recordings: RecordingStore = store) =>
  createActivities({ config: app.config, pool, logger: createLogger('silent'), temporal, recordings }).analyseCall({ callId });

const NOT_FOUND = { success: false, message: 'Recording not found' };

describe('GET /api/v1/recordings/{call_id}', () => {
  test('200 with the WAV bytes for the owner team, streamed with its length', async () => {
    const team = await createTestTeam(pool);
    const { callId, wav } = await recordedCall(team);
    const res = await request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'audio/wav');
    assert.equal(res.headers.get('content-length'), String(wav.length));
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.ok(res.body.equals(wav), 'the stored bytes');
    // Upper-case ids name the same call.
    assert.equal((await request('GET', `/api/v1/recordings/${callId.toUpperCase()}`, { key: team.apiKey })).status, 200);
  });

  test('404 Recording not found for another team’s call, an unknown call and a call without a recording', async () => {
    const team = await createTestTeam(pool);
    const other = await createTestTeam(pool);
    const { callId: othersCall } = await recordedCall(other);
    const unrecorded = await endedCall(team);
    for (const id of [othersCall, randomUUID(), unrecorded]) {
      const res = await request('GET', `/api/v1/recordings/${id}`, { key: team.apiKey });
      assert.equal(res.status, 404, id);
      assert.deepEqual(res.json, NOT_FOUND);
    }
    assert.equal((await request('GET', `/api/v1/recordings/${othersCall}`, { key: other.apiKey })).status, 200, 'the owner still reads it');
  });

  test('400 naming call_id when it is not a UUID; 401 without the key', async () => {
    const team = await createTestTeam(pool);
    for (const id of ['nope', '123', `${randomUUID()}x`]) {
      for (const [method, suffix] of [['GET', ''], ['POST', '/link'], ['GET', '/audio?expires=1&signature=abc']]) {
        const res = await request(method, `/api/v1/recordings/${id}${suffix}`, { key: team.apiKey });
        assert.equal(res.status, 400, `${method} ${id}${suffix}`);
        assert.deepEqual(res.json, { success: false, message: 'Invalid request: call_id must be a UUID' });
      }
    }
    const res = await request('GET', `/api/v1/recordings/${randomUUID()}`);
    assert.equal(res.status, 401);
    assert.equal(res.json.success, false);
  });

  test('Range: 206 with Content-Range for start-end, start- and -suffix; 416 outside the recording', async () => {
    const team = await createTestTeam(pool);
    const { callId, wav } = await recordedCall(team);
    const size = wav.length;
    for (const [range, start, end] of [
      ['bytes=0-43', 0, 43],
      [`bytes=${size - 100}-`, size - 100, size - 1],
      ['bytes=-10', size - 10, size - 1],
      ['bytes=100-999999999', 100, size - 1],
    ] as const) {
      const res = await request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey, headers: { Range: range } });
      assert.equal(res.status, 206, range);
      assert.equal(res.headers.get('content-range'), `bytes ${start}-${end}/${size}`, range);
      assert.equal(res.headers.get('content-length'), String(end - start + 1), range);
      assert.ok(res.body.equals(wav.subarray(start, end + 1)), range);
    }
    const beyond = await request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey, headers: { Range: `bytes=${size}-` } });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers.get('content-range'), `bytes */${size}`);
    assert.deepEqual(beyond.json, { success: false, message: `Range not satisfiable: the recording has ${size} bytes` });
    // Several ranges, or another unit: the whole recording (HTTP lets a server ignore Range).
    for (const range of ['bytes=0-1,5-6', 'items=0-1', 'bytes=9-2']) {
      const res = await request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey, headers: { Range: range } });
      assert.equal(res.status, 200, range);
      assert.equal(res.body.length, size, range);
    }
  });

  test('the same endpoints over the S3 store (fake S3, signatures checked)', async () => {
    const credentials = { accessKeyId: 'AKIARECORDINGS01', secretAccessKey: 'recordings-s3-secret-0123456789', region: 'us-east-1' };
    const s3: FakeS3 = await startFakeS3({ ...credentials, buckets: ['voice-recordings'] });
    const s3Store = s3RecordingStore({ ...credentials, endpoint: s3.url, bucket: 'voice-recordings', forcePathStyle: true });
    const s3App = await startRecordingsApi({ recordings: s3Store });
    try {
      const team = await createTestTeam(pool);
      const { callId, wav } = await recordedCall(team, s3Store);
      assert.ok(s3.objects.has(`voice-recordings/${team.teamId}/${callId}.wav`), 'stored under <team_id>/<call_id>.wav');
      const whole = await request('GET', `${s3App.url}/api/v1/recordings/${callId}`, { key: team.apiKey });
      assert.equal(whole.status, 200);
      assert.ok(whole.body.equals(wav));
      const part = await request('GET', `${s3App.url}/api/v1/recordings/${callId}`, { key: team.apiKey, headers: { Range: 'bytes=4-7' } });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 4-7/${wav.length}`);
      assert.equal(part.body.toString('ascii'), wav.subarray(4, 8).toString('ascii'));
      const missing = await request('GET', `${s3App.url}/api/v1/recordings/${await endedCall(team)}`, { key: team.apiKey });
      assert.deepEqual([missing.status, missing.json], [404, NOT_FOUND]);
    } finally {
      await s3App.api.close();
      await s3.close();
    }
  });
});

describe('recording links', () => {
  test('POST link answers a URL on PUBLIC_API_URL that plays without the key for 15 minutes, ranges included', async () => {
    const team = await createTestTeam(pool);
    const { callId, wav } = await recordedCall(team);
    const before = Math.floor(Date.now() / 1000);
    const res = await request('POST', `/api/v1/recordings/${callId}/link`, { key: team.apiKey });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.json).sort(), ['expires_at', 'success', 'url']);
    const url = new URL(res.json.url);
    assert.equal(url.origin + url.pathname, `${app.url}/api/v1/recordings/${callId}/audio`);
    const expires = Number(url.searchParams.get('expires'));
    assert.ok(expires >= before + 900 && expires <= before + 901, `expires in 15 minutes (${expires - before} s)`);
    assert.equal(res.json.expires_at, new Date(expires * 1000).toISOString());
    assert.match(url.searchParams.get('signature')!, /^[A-Za-z0-9_-]{43}$/);

    const played = await request('GET', res.json.url);
    assert.equal(played.status, 200);
    assert.equal(played.headers.get('content-type'), 'audio/wav');
    assert.ok(played.body.equals(wav));
    assert.match(played.headers.get('cache-control')!, /^private, max-age=(899|900)$/);
    const part = await request('GET', res.json.url, { headers: { Range: 'bytes=0-3' } });
    assert.equal(part.status, 206);
    assert.equal(part.body.toString('ascii'), 'RIFF');
  });

  test('a tampered signature, another call’s id, a changed expiry and an expired link answer 403', async () => {
    const team = await createTestTeam(pool);
    const { callId } = await recordedCall(team);
    const { callId: otherCall } = await recordedCall(team);
    const link = new URL((await request('POST', `/api/v1/recordings/${callId}/link`, { key: team.apiKey })).json.url);
    const expires = link.searchParams.get('expires')!;
    const signature = link.searchParams.get('signature')!;
    const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
    const invalid = [
      `/api/v1/recordings/${callId}/audio?expires=${expires}&signature=${flipped}`,
      `/api/v1/recordings/${callId}/audio?expires=${expires}&signature=${signature.slice(0, -2)}`,
      `/api/v1/recordings/${otherCall}/audio?expires=${expires}&signature=${signature}`,
      `/api/v1/recordings/${callId}/audio?expires=${Number(expires) + 3600}&signature=${signature}`,
    ];
    for (const path of invalid) {
      const res = await request('GET', path);
      assert.equal(res.status, 403, path);
      assert.deepEqual(res.json, { success: false, message: 'Recording link is invalid' }, path);
    }
    // A genuine signature whose time has passed.
    const past = Math.floor(Date.now() / 1000) - 1;
    const expired = await request('GET', `/api/v1/recordings/${callId}/audio?expires=${past}&signature=${recordingLinkSignature(LINK_SECRET, callId, past)}`);
    assert.equal(expired.status, 403);
    assert.deepEqual(expired.json, { success: false, message: 'Recording link has expired' });
    // The API key is no substitute for the signature on this path.
    const keyOnly = await request('GET', `/api/v1/recordings/${callId}/audio?expires=${expires}&signature=${flipped}`, { key: team.apiKey });
    assert.equal(keyOnly.status, 403);
  });

  test('400 naming expires or signature when missing or malformed', async () => {
    const callId = randomUUID();
    for (const [query, field] of [
      ['signature=abc', 'expires is required'],
      ['expires=123', 'signature is required'],
      ['expires=soon&signature=abc', 'expires must be a Unix time in seconds'],
      ['expires=123&signature=a%2Bb', 'signature must be base64url'],
    ]) {
      const res = await request('GET', `/api/v1/recordings/${callId}/audio?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(res.json.success, false);
      assert.ok(res.json.message.includes(field), `${query}: ${res.json.message}`);
    }
  });

  test('no link for another team’s call, an unknown call or a call without a recording (404)', async () => {
    const team = await createTestTeam(pool);
    const other = await createTestTeam(pool);
    const { callId: othersCall } = await recordedCall(other);
    for (const id of [othersCall, randomUUID(), await endedCall(team)]) {
      const res = await request('POST', `/api/v1/recordings/${id}/link`, { key: team.apiKey });
      assert.deepEqual([res.status, res.json], [404, NOT_FOUND], id);
    }
  });

  test('without RECORDING_LINK_SECRET links answer 500 not configured; the keyed endpoint still works', async () => {
    const bare = await startRecordingsApi({ recordings: store, config: { RECORDING_LINK_SECRET: '' } });
    try {
      const team = await createTestTeam(pool);
      const { callId } = await recordedCall(team);
      const message = 'Recording links are not configured for this environment';
      const link = await request('POST', `${bare.url}/api/v1/recordings/${callId}/link`, { key: team.apiKey });
      assert.deepEqual([link.status, link.json], [500, { success: false, message }]);
      const audio = await request('GET', `${bare.url}/api/v1/recordings/${callId}/audio?expires=9999999999&signature=abc`);
      assert.deepEqual([audio.status, audio.json], [500, { success: false, message }]);
      assert.equal((await request('GET', `${bare.url}/api/v1/recordings/${callId}`, { key: team.apiKey })).status, 200);
    } finally {
      await bare.api.close();
    }
  });
});

describe('recording_url', () => {
  test('analysis sets it to the recording endpoint on PUBLIC_API_URL when the recording exists, and that URL serves it', async () => {
    const team = await createTestTeam(pool);
    const { callId, wav } = await recordedCall(team);
    await analyse(callId);
    const result = await request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
    assert.equal(result.status, 200);
    assert.equal(result.json.call.recording_url, `${app.url}/api/v1/recordings/${callId}`);
    const res = await request('GET', result.json.call.recording_url, { key: team.apiKey });
    assert.equal(res.status, 200);
    assert.ok(res.body.equals(wav));
  });

  test('analysis finds a recording the edge writes a moment after it starts looking', async () => {
    const team = await createTestTeam(pool);
    const callId = await endedCall(team);
    const writing = new Promise<void>((resolve, reject) => {
      setTimeout(() => store.put(recordingKey(team.teamId, callId), sampleWav(), 'audio/wav').then(resolve, reject), 400);
    });
    await analyse(callId);
    await writing;
    const result = await request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
    assert.equal(result.json.call.recording_url, `${app.url}/api/v1/recordings/${callId}`);
  });

  test('null for a connected call whose recording never came, and for a call that never connected', async () => {
    const team = await createTestTeam(pool);
    const unrecorded = await endedCall(team);
    const neverConnected = await endedCall(team, { connected: false });
    await analyse(unrecorded);
    await analyse(neverConnected);
    for (const id of [unrecorded, neverConnected]) {
      const result = await request('GET', `/api/v1/get-call-result/${id}`, { key: team.apiKey });
      assert.equal(result.json.call.progress, 'done', id);
      assert.equal(result.json.call.recording_url, null, id);
    }
  });
});

describe('simulated calls', () => {
  const TURNS: ConversationTurn[] = [
    { role: 'agent', text: 'Hello, this is the agent.' },
    { role: 'user', text: 'Hi there.' },
    { role: 'agent', text: 'Goodbye from the agent.' },
  ];

  test('an answered one gets the real endpoint as recording_url; the first read speaks its transcript (caller left, agent right) and stores it', async () => {
    const team = await createTestTeam(pool);
    const callId = await endedCall(team, { provider: 'simulator', turns: TURNS });
    await analyse(callId);
    const result = await request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
    assert.equal(result.json.call.recording_url, `${app.url}/api/v1/recordings/${callId}`);
    assert.equal(await store.exists(recordingKey(team.teamId, callId)), false, 'nothing is made before it is asked for');

    app.speechCalls.length = 0;
    // Two first reads at once make one recording.
    const [first, second] = await Promise.all([
      request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey }),
      request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey }),
    ]);
    assert.deepEqual([first.status, second.status], [200, 200]);
    assert.ok(first.body.equals(second.body));
    assert.deepEqual(app.speechCalls, TURNS.map((t) => t.text), 'each turn spoken once');
    assert.equal(await store.exists(recordingKey(team.teamId, callId)), true, 'stored');

    const wav = decodeWav(first.body);
    assert.deepEqual([wav.sampleRate, wav.channels], [16_000, 2]);
    const frames = wav.samples.length / 2;
    const spoken = TURNS.reduce((sum, t) => sum + t.text.length * 160, 0);
    assert.equal(frames, Math.round(0.3 * 16_000) + spoken + TURNS.length * Math.round(0.4 * 16_000), 'lead-in, turns and the gaps between them');
    // The caller's turn is on the left only, the agent's on the right only.
    const userFrom = Math.round(0.3 * 16_000) + TURNS[0].text.length * 160 + Math.round(0.4 * 16_000);
    const at = (frame: number, channel: number) => wav.samples[frame * 2 + channel];
    const loud = (from: number, count: number, channel: number) => {
      let peak = 0;
      for (let f = from; f < from + count; f++) peak = Math.max(peak, Math.abs(at(f, channel)));
      return peak;
    };
    assert.ok(loud(Math.round(0.3 * 16_000), 1600, 1) > 3000 && loud(Math.round(0.3 * 16_000), 1600, 0) === 0, 'agent first, right channel');
    assert.ok(loud(userFrom, 1000, 0) > 3000 && loud(userFrom, 1000, 1) === 0, 'then the caller, left channel');

    app.speechCalls.length = 0;
    const again = await request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey, headers: { Range: 'bytes=0-11' } });
    assert.equal(again.status, 206);
    assert.deepEqual(app.speechCalls, [], 'later reads come from the store');
    const link = await request('POST', `/api/v1/recordings/${callId}/link`, { key: team.apiKey });
    assert.equal(link.status, 200);
    assert.ok((await request('GET', link.json.url)).body.equals(first.body));
  });

  test('many first reads at once: at most RECORDING_SYNTHESIS_CONCURRENCY syntheses run, MAX_QUEUED wait, the rest answer 503 with Retry-After; later reads succeed', async () => {
    // The synthesiser holds every turn until released, counting how many run at once.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const speaking = { now: 0, peak: 0, started: 0 };
    const tones = toneSpeech([]);
    const gatedSpeech: SpeechSynthesis = async (text) => {
      speaking.now++;
      speaking.started++;
      speaking.peak = Math.max(speaking.peak, speaking.now);
      try {
        await released;
        return await tones(text);
      } finally {
        speaking.now--;
      }
    };
    const bounded = await startRecordingsApi({ recordings: store, speech: gatedSpeech, config: { RECORDING_SYNTHESIS_CONCURRENCY: '2', RECORDING_SYNTHESIS_MAX_QUEUED: '2' } });
    try {
      const team = await createTestTeam(pool);
      const calls = await Promise.all(Array.from({ length: 8 }, () => endedCall(team, { provider: 'simulator', turns: TURNS })));
      await Promise.all(calls.map((id) => analyse(id)));
      const answers: Awaited<ReturnType<typeof request>>[] = [];
      const reads = calls.map((id) =>
        request('GET', `${bounded.url}/api/v1/recordings/${id}`, { key: team.apiKey }).then((res) => {
          answers.push(res);
          return { id, res };
        }),
      );
      // Two run and two wait, held by the synthesiser; the other four are answered at once.
      // (Without a bound all eight would be speaking.)
      while (answers.length + speaking.started < 6) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(speaking.peak, 2, 'two syntheses at once');
      assert.equal(answers.length, 4, 'four answered while the others are held');
      for (const busy of answers) {
        assert.equal(busy.status, 503);
        assert.equal(busy.headers.get('retry-after'), '5');
        assert.deepEqual(busy.json, { success: false, message: 'Too many recordings of simulated calls are being synthesised right now; retry in 5 seconds' });
      }
      release();
      const settled = await Promise.all(reads);
      const refused = settled.filter(({ res }) => res.status === 503).map(({ id }) => id);
      assert.equal(refused.length, 4);
      assert.deepEqual(settled.filter(({ res }) => res.status === 200).length, 4, 'the ones that waited are served');
      for (const id of refused) assert.equal(await store.exists(recordingKey(team.teamId, id)), false, 'a refused read makes nothing');
      // Retried later, each is made and served.
      for (const id of refused) {
        const again = await request('GET', `${bounded.url}/api/v1/recordings/${id}`, { key: team.apiKey });
        assert.equal(again.status, 200, id);
        assert.deepEqual([decodeWav(again.body).channels, decodeWav(again.body).sampleRate], [2, 16_000]);
      }
      assert.equal(speaking.peak, 2, 'never more than two, the retries included');
    } finally {
      release(); // held reads would keep the server from closing
      await bounded.api.close();
    }
  });

  test('an unanswered one has recording_url null and no recording', async () => {
    const team = await createTestTeam(pool);
    const callId = await endedCall(team, { provider: 'simulator', connected: false });
    await analyse(callId);
    const result = await request('GET', `/api/v1/get-call-result/${callId}`, { key: team.apiKey });
    assert.equal(result.json.call.recording_url, null);
    assert.deepEqual((await request('GET', `/api/v1/recordings/${callId}`, { key: team.apiKey })).json, NOT_FOUND);
    assert.equal((await request('POST', `/api/v1/recordings/${callId}/link`, { key: team.apiKey })).status, 404);
  });
});

test('the three recording endpoints are in the OpenAPI document', async () => {
  const doc = (await request('GET', '/api/v1/openapi.json')).json;
  assert.ok(doc.paths['/api/v1/recordings/{call_id}'].get.responses['200'].content['audio/wav']);
  assert.ok(doc.paths['/api/v1/recordings/{call_id}/link'].post.responses['200']);
  const audio = doc.paths['/api/v1/recordings/{call_id}/audio'].get;
  assert.deepEqual(audio.security, []);
  assert.ok(audio.responses['403']);
  // Both reads may synthesise a simulated call's recording: 503 with Retry-After when that is at capacity.
  for (const read of [doc.paths['/api/v1/recordings/{call_id}'].get, audio]) {
    const busy = read.responses['503'];
    assert.match(busy.description, /RECORDING_SYNTHESIS_CONCURRENCY/);
    assert.deepEqual(busy.headers['Retry-After'].schema, { type: 'integer', minimum: 1 });
    assert.ok(busy.content['application/json'].schema);
  }
});
