// The recording settings are checked at start-up like every other variable: a bad or
// missing one stops start-up with a message naming it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig, publicApiUrl, recordingsDir } from '../../src/config/index.js';
import { createRecordingStore } from '../../src/recordings/index.js';
import { configError } from '../support/configErrors.js';

const S3 = { RECORDINGS_STORE: 's3', S3_BUCKET: 'recordings', S3_ACCESS_KEY_ID: 'key', S3_SECRET_ACCESS_KEY: 'secret' };

test('a bad or missing recording setting stops start-up naming the variable', () => {
  for (const [env, message] of [
    [{ RECORDINGS_STORE: 'ftp' }, 'Invalid configuration: RECORDINGS_STORE must be local or s3'],
    [{ ...S3, S3_BUCKET: '' }, 'Invalid configuration: S3_BUCKET is required when RECORDINGS_STORE is s3'],
    [{ ...S3, S3_ACCESS_KEY_ID: '' }, 'Invalid configuration: S3_ACCESS_KEY_ID is required when RECORDINGS_STORE is s3'],
    [{ ...S3, S3_SECRET_ACCESS_KEY: '' }, 'Invalid configuration: S3_SECRET_ACCESS_KEY is required when RECORDINGS_STORE is s3'],
    [{ ...S3, S3_BUCKET: 'Not_A_Bucket' }, 'Invalid configuration: S3_BUCKET must be an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)'],
    [{ ...S3, S3_ENDPOINT: 'minio:9000' }, 'Invalid configuration: S3_ENDPOINT must be a URL (http: or https:)'],
    [{ ...S3, S3_FORCE_PATH_STYLE: 'maybe' }, 'Invalid configuration: S3_FORCE_PATH_STYLE must be true or false'],
    [{ PUBLIC_API_URL: 'api.example.com' }, 'Invalid configuration: PUBLIC_API_URL must be a URL (http: or https:)'],
    [{ RECORDING_LINK_SECRET: 'short' }, 'Invalid configuration: RECORDING_LINK_SECRET must be at least 16 characters'],
    [{ RECORDING_LINK_TTL_SECONDS: '0' }, 'Invalid configuration: RECORDING_LINK_TTL_SECONDS must be positive'],
    [{ RECORDING_LINK_TTL_SECONDS: '700000' }, 'Invalid configuration: RECORDING_LINK_TTL_SECONDS must be at most 604800 (7 days)'],
    [{ RECORDING_SYNTHESIS_CONCURRENCY: '0' }, 'Invalid configuration: RECORDING_SYNTHESIS_CONCURRENCY must be positive'],
    [{ RECORDING_SYNTHESIS_CONCURRENCY: 'many' }, 'Invalid configuration: RECORDING_SYNTHESIS_CONCURRENCY must be a number'],
    [{ RECORDING_SYNTHESIS_CONCURRENCY: '65' }, 'Invalid configuration: RECORDING_SYNTHESIS_CONCURRENCY must be at most 64'],
    [{ RECORDING_SYNTHESIS_MAX_QUEUED: '-1' }, 'Invalid configuration: RECORDING_SYNTHESIS_MAX_QUEUED must not be negative'],
    [{ RECORDING_SYNTHESIS_MAX_QUEUED: '2.5' }, 'Invalid configuration: RECORDING_SYNTHESIS_MAX_QUEUED must be a whole number'],
  ] as const) {
    assert.equal(configError(env), message, JSON.stringify(env));
  }
});

test('defaults: local files under <DATA_DIR>/recordings, links for 15 minutes, URLs on 127.0.0.1:<PORT>, two syntheses at once and 20 waiting', () => {
  const config = loadConfig({ DATA_DIR: '/srv/voice', PORT: '8080' });
  assert.equal(config.RECORDINGS_STORE, 'local');
  assert.equal(recordingsDir(config), path.join('/srv/voice', 'recordings'));
  assert.equal(createRecordingStore(config).kind, 'local');
  assert.equal(config.RECORDING_LINK_TTL_SECONDS, 900);
  assert.equal(config.RECORDING_LINK_SECRET, undefined);
  assert.deepEqual([config.RECORDING_SYNTHESIS_CONCURRENCY, config.RECORDING_SYNTHESIS_MAX_QUEUED], [2, 20]);
  assert.equal(loadConfig({ RECORDING_SYNTHESIS_MAX_QUEUED: '0' }).RECORDING_SYNTHESIS_MAX_QUEUED, 0);
  assert.equal(publicApiUrl(config), 'http://127.0.0.1:8080');
  assert.equal(publicApiUrl(loadConfig({ PUBLIC_API_URL: 'https://api.example.com/voice/' })), 'https://api.example.com/voice');
  const s3 = loadConfig(S3);
  assert.equal(createRecordingStore(s3).kind, 's3');
  assert.equal(s3.S3_REGION, 'us-east-1');
  assert.equal(s3.S3_FORCE_PATH_STYLE, false);
});
