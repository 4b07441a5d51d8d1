/**
 * Recordings in an S3-compatible object store (AWS S3, MinIO, ...) through the official
 * client, `@aws-sdk/client-s3`: PutObject, GetObject (with Range), HeadObject and
 * DeleteObject, signed with AWS Signature Version 4 by the SDK. Path-style
 * (`<endpoint>/<bucket>/<key>`, what MinIO wants) or virtual-hosted-style
 * (`<bucket>.<endpoint host>/<key>`, the AWS default) addressing.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import type { GetObjectCommandOutput, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { assertRecordingKey } from './keys.js';
import { RangeNotSatisfiableError, rangeHeader, RecordingExistsError, type ByteRange, type RecordingStore, type StoredObject } from './store.js';

export interface S3StoreOptions {
  /** e.g. http://minio:9000; default: AWS's S3 endpoint of `region`. */
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** true: <endpoint>/<bucket>/<key>; false: <bucket>.<endpoint host>/<key>. */
  forcePathStyle: boolean;
  /** Idle time after which a request fails; default 30 s. */
  timeoutMs?: number;
  /** Name resolution of the endpoint host (tests map virtual-hosted names to 127.0.0.1). */
  lookup?: LookupFunction;
}

/** An error answer of S3: its status and code (SignatureDoesNotMatch, NoSuchBucket, PreconditionFailed, ...). */
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`S3 ${status} ${code}: ${message}`, options);
    this.name = 'S3Error';
  }
}

type S3Sdk = typeof import('@aws-sdk/client-s3');
let sdk: Promise<S3Sdk> | undefined;
/**
 * The SDK is loaded when the first S3 store is made, not when this module is imported: it
 * takes about a quarter of a second and 20 MB to load, which processes on the local store
 * (the default) never pay.
 */
const loadSdk = (): Promise<S3Sdk> => (sdk ??= import('@aws-sdk/client-s3'));

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The SDK's warnings (e.g. "a streaming request is not retried") are dropped: the caller gets the error itself. */
const quietLogger = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };

export function s3RecordingStore(options: S3StoreOptions): RecordingStore {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const loaded = loadSdk().then((s3) => ({
    s3,
    client: new s3.S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      // These keys only: the SDK's default chain (AWS_* variables, ~/.aws, instance roles) is not consulted.
      credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
      // Checksums only where S3 requires them: otherwise the SDK sends stream bodies as aws-chunked
      // with a CRC trailer, which several S3-compatible stores refuse. A Buffer is signed with its
      // SHA-256 and a stream goes as UNSIGNED-PAYLOAD (TLS protects it), as S3 has always taken.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: {
        requestTimeout: timeoutMs,
        httpAgent: new http.Agent({ keepAlive: true, maxSockets: 50, lookup: options.lookup }),
        httpsAgent: new https.Agent({ keepAlive: true, maxSockets: 50, lookup: options.lookup }),
      },
      logger: quietLogger,
    }),
  }));
  // A failed load is reported by the first request; it must not end the process as an unhandled rejection.
  loaded.catch(() => undefined);

  /** Runs commands on the client; an error answer of S3 becomes an S3Error, anything else (network, timeout) is thrown as it is. */
  async function call<T>(what: string, run: (sdk: { s3: S3Sdk; client: S3Client }) => Promise<T>): Promise<T> {
    const ready = await loaded;
    try {
      return await run(ready);
    } catch (err) {
      if (err instanceof ready.s3.S3ServiceException) throw toS3Error(err, what);
      throw err;
    }
  }

  function toS3Error(err: S3ServiceException, what: string): S3Error {
    const status = err.$metadata.httpStatusCode ?? 0;
    // A HEAD answer has no body, so the SDK names its error after the status ("NotFound", "Forbidden").
    const code = err.name && err.name !== 'Unknown' ? err.name : `HTTP${status}`;
    return new S3Error(status, code, err.message || what, { cause: err });
  }

  return {
    kind: 's3',

    async put(key, body, contentType, size, putOptions) {
      assertRecordingKey(key);
      // S3 wants the length up front and takes no chunked body: a stream without a size is read first.
      const bytes = Buffer.isBuffer(body) ? body : size === undefined ? await readAll(body) : undefined;
      const input = {
        Bucket: options.bucket,
        Key: key,
        Body: bytes ?? body,
        ContentLength: bytes ? bytes.length : size,
        ContentType: contentType,
        IfNoneMatch: putOptions?.ifAbsent ? '*' : undefined,
      };
      try {
        await call(`PUT ${key}`, ({ s3, client }) => client.send(new s3.PutObjectCommand(input)));
      } catch (err) {
        // S3's answer to If-None-Match: * on a taken key; the same error as the local store's.
        if (putOptions?.ifAbsent && err instanceof S3Error && err.status === 412) throw new RecordingExistsError(key);
        throw err;
      }
    },

    async get(key, range?: ByteRange): Promise<StoredObject | undefined> {
      assertRecordingKey(key);
      let output: GetObjectCommandOutput;
      try {
        output = await call(`GET ${key}`, ({ s3, client }) => client.send(new s3.GetObjectCommand({ Bucket: options.bucket, Key: key, Range: range ? rangeHeader(range) : undefined })));
      } catch (err) {
        if (err instanceof S3Error && err.code === 'NoSuchKey') return undefined;
        if (err instanceof S3Error && err.status === 416) throw new RangeNotSatisfiableError(objectSizeOf416(err));
        throw err;
      }
      const stream = output.Body as Readable;
      const contentType = output.ContentType ?? 'application/octet-stream';
      const length = output.ContentLength ?? 0;
      if (output.ContentRange !== undefined) {
        const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(output.ContentRange);
        if (!m) {
          stream.destroy();
          throw new S3Error(206, 'InvalidContentRange', `GET ${key}: unreadable Content-Range ${output.ContentRange}`);
        }
        return { stream, size: Number(m[3]), start: Number(m[1]), end: Number(m[2]), partial: true, contentType };
      }
      // No range asked, or the store ignored it (then the whole object is the answer).
      return { stream, size: length, start: 0, end: length - 1, partial: false, contentType };
    },

    async exists(key) {
      assertRecordingKey(key);
      try {
        await call(`HEAD ${key}`, ({ s3, client }) => client.send(new s3.HeadObjectCommand({ Bucket: options.bucket, Key: key })));
        return true;
      } catch (err) {
        if (err instanceof S3Error && err.status === 404) return false;
        throw err;
      }
    },

    async delete(key) {
      assertRecordingKey(key);
      await call(`DELETE ${key}`, ({ s3, client }) => client.send(new s3.DeleteObjectCommand({ Bucket: options.bucket, Key: key })));
    },
  };
}

/** The object's size from a 416 answer: its Content-Range (`bytes *\/<size>`) or S3's ActualObjectSize field. */
function objectSizeOf416(err: S3Error): number {
  const cause = err.cause as S3ServiceException & { ActualObjectSize?: string };
  const contentRange = cause.$response?.headers['content-range'] ?? '';
  const total = /\/(\d+)$/.exec(contentRange)?.[1] ?? cause.ActualObjectSize;
  return Number(total ?? 0);
}
