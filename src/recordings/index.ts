import { recordingsDir, type Config } from '../config/index.js';
import { localRecordingStore } from './local.js';
import { s3RecordingStore } from './s3.js';
import type { RecordingStore } from './store.js';

export { assertRecordingKey, InvalidRecordingKeyError, recordingKey } from './keys.js';
export { localRecordingStore } from './local.js';
export { S3Error, s3RecordingStore, type S3StoreOptions } from './s3.js';
export { RangeNotSatisfiableError, RecordingExistsError, resolveRange, type ByteRange, type PutOptions, type RecordingStore, type StoredObject } from './store.js';
export { SynthesisUnavailableError, text2waveSynthesis, type SpeechSynthesis } from './synthesis.js';

type StoreConfig = Pick<
  Config,
  'RECORDINGS_STORE' | 'RECORDINGS_DIR' | 'DATA_DIR' | 'S3_ENDPOINT' | 'S3_BUCKET' | 'S3_REGION' | 'S3_ACCESS_KEY_ID' | 'S3_SECRET_ACCESS_KEY' | 'S3_FORCE_PATH_STYLE'
>;

/** The store RECORDINGS_STORE names (loadConfig has checked the S3 settings it needs). */
export function createRecordingStore(config: StoreConfig): RecordingStore {
  if (config.RECORDINGS_STORE === 's3') {
    return s3RecordingStore({
      endpoint: config.S3_ENDPOINT,
      bucket: config.S3_BUCKET!,
      region: config.S3_REGION,
      accessKeyId: config.S3_ACCESS_KEY_ID!,
      secretAccessKey: config.S3_SECRET_ACCESS_KEY!,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
    });
  }
  return localRecordingStore(recordingsDir(config));
}
