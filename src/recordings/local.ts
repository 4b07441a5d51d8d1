/**
 * Recordings as files under one folder (RECORDINGS_DIR, default <DATA_DIR>/recordings):
 * `<dir>/<team_id>/<call_id>.wav`. A write goes to a temporary file beside the target,
 * is flushed, then renamed over it, so readers see the old file or the new one, never a
 * part; a write that must not replace a file (ifAbsent) is linked to the target instead,
 * which fails if the target exists. The content type comes from the key's extension; no
 * metadata is kept.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { link, mkdir, open, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertRecordingKey, contentTypeOfKey, InvalidRecordingKeyError } from './keys.js';
import { RecordingExistsError, resolveRange, type ByteRange, type RecordingStore, type StoredObject } from './store.js';

const TEMP_SUFFIX = '.partial';

export function localRecordingStore(dir: string): RecordingStore {
  const root = path.resolve(dir);

  /** The file of a key, checked to lie inside the root even after resolution. */
  function fileOf(key: string): string {
    assertRecordingKey(key);
    const file = path.resolve(root, ...key.split('/'));
    if (!file.startsWith(root + path.sep) || file.endsWith(TEMP_SUFFIX)) throw new InvalidRecordingKeyError(key);
    return file;
  }

  async function exists(key: string): Promise<boolean> {
    try {
      return (await stat(fileOf(key))).isFile();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  return {
    kind: 'local',

    async put(key, body, _contentType, size, options) {
      const file = fileOf(key);
      await mkdir(path.dirname(file), { recursive: true });
      // Refused before the body is read; the link below is what makes it hold under a race.
      if (options?.ifAbsent && (await exists(key))) throw new RecordingExistsError(key);
      const temp = `${file}.${randomUUID()}${TEMP_SUFFIX}`;
      try {
        const out = createWriteStream(temp, { flags: 'wx' });
        await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, out);
        const handle = await open(temp, 'r+');
        try {
          const written = (await handle.stat()).size;
          if (size !== undefined && written !== size) throw new Error(`recording ${key}: expected ${size} bytes, got ${written}`);
          await handle.sync();
        } finally {
          await handle.close();
        }
        if (!options?.ifAbsent) {
          await rename(temp, file);
          return;
        }
        try {
          await link(temp, file);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new RecordingExistsError(key);
          throw err;
        }
        await rm(temp, { force: true });
      } catch (err) {
        await rm(temp, { force: true });
        throw err;
      }
    },

    async get(key, range?: ByteRange): Promise<StoredObject | undefined> {
      const file = fileOf(key);
      let handle: FileHandle;
      try {
        handle = await open(file, 'r');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
      try {
        // The size of the file this handle has open, even if a new version is renamed in meanwhile.
        const { size } = await handle.stat();
        const { start, end } = range ? resolveRange(range, size) : { start: 0, end: size - 1 };
        const stream = size === 0 ? Readable.from([]) : handle.createReadStream({ start, end });
        if (size === 0) await handle.close();
        return { stream, size, start, end, partial: range !== undefined, contentType: contentTypeOfKey(key) };
      } catch (err) {
        await handle.close();
        throw err;
      }
    },

    exists,

    async delete(key) {
      await rm(fileOf(key), { force: true });
    },
  };
}
