/**
 * Recordings in an S3-compatible object store (AWS S3, MinIO, ...), over the S3 REST API:
 * PUT, GET (with Range), HEAD and DELETE Object, signed with AWS Signature Version 4.
 * Path-style (`<endpoint>/<bucket>/<key>`, what MinIO wants) or virtual-hosted-style
 * (`<bucket>.<endpoint host>/<key>`, the AWS default) addressing.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertRecordingKey } from './keys.js';
import { signRequest, sha256Hex, uriEncode, UNSIGNED_PAYLOAD, type SigningCredentials } from './sigv4.js';
import { RangeNotSatisfiableError, rangeHeader, type ByteRange, type RecordingStore, type StoredObject } from './store.js';

export interface S3StoreOptions {
  /** e.g. http://minio:9000; default https://s3.<region>.amazonaws.com. */
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

/** An error answer of S3: its status and XML Code (SignatureDoesNotMatch, NoSuchBucket, ...). */
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`S3 ${status} ${code}: ${message}`);
    this.name = 'S3Error';
  }
}

/** The text of the first <tag> element of an S3 XML body. */
function xmlField(xml: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m?.[1].replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}

async function readAll(stream: Readable, limit = 64 * 1024 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += (chunk as Buffer).length;
    if (total > limit) throw new Error('body too large to buffer');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

interface S3Response {
  status: number;
  headers: IncomingMessage['headers'];
  body: IncomingMessage;
}

export function s3RecordingStore(options: S3StoreOptions): RecordingStore {
  const endpoint = new URL(options.endpoint ?? `https://s3.${options.region}.amazonaws.com`);
  const credentials: SigningCredentials = {
    accessKeyId: options.accessKeyId,
    secretAccessKey: options.secretAccessKey,
    region: options.region,
    service: 's3',
  };
  const timeoutMs = options.timeoutMs ?? 30_000;

  function objectUrl(key: string): URL {
    assertRecordingKey(key);
    const path = uriEncode(key, true);
    if (options.forcePathStyle) return new URL(`${endpoint.protocol}//${endpoint.host}/${uriEncode(options.bucket)}/${path}`);
    return new URL(`${endpoint.protocol}//${options.bucket}.${endpoint.host}/${path}`);
  }

  /** One signed request; resolves with the response once its headers arrive. */
  function send(method: string, key: string, headers: Record<string, string>, payloadHash: string, body?: Buffer | Readable): Promise<S3Response> {
    const url = objectUrl(key);
    const signed = signRequest({ method, url, headers, payloadHash }, credentials);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<S3Response>((resolve, reject) => {
      const req = client.request(url, { method, headers: signed, lookup: options.lookup });
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`S3 ${method} ${key}: no answer within ${timeoutMs} ms`)));
      // After the answer has come, a late error (the body upload cut short) has nothing left to fail.
      req.on('error', reject);
      req.once('response', (res) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res }));
      if (body === undefined) req.end();
      else if (Buffer.isBuffer(body)) req.end(body);
      else pipeline(body, req).catch((err: Error) => req.destroy(err));
    });
  }

  /** Throws the S3 error of a failed answer (reading its XML body when there is one). */
  async function failure(res: S3Response, what: string): Promise<never> {
    const xml = (await readAll(res.body, 1024 * 1024).catch(() => Buffer.alloc(0))).toString('utf8');
    throw new S3Error(res.status, xmlField(xml, 'Code') ?? `HTTP${res.status}`, xmlField(xml, 'Message') ?? what);
  }

  /** Discards an answer's body (a connection reset while doing so is of no interest). */
  const drain = (res: S3Response) => {
    res.body.on('error', () => undefined);
    res.body.resume();
  };

  return {
    kind: 's3',

    async put(key, body, contentType, size) {
      let res: S3Response;
      if (Buffer.isBuffer(body) || size === undefined) {
        const bytes = Buffer.isBuffer(body) ? body : await readAll(body);
        res = await send('PUT', key, { 'content-type': contentType, 'content-length': String(bytes.length) }, sha256Hex(bytes), bytes);
      } else {
        // S3 wants the length up front and takes no chunked body; the payload is sent unhashed
        // rather than read twice (TLS protects it on the wire).
        res = await send('PUT', key, { 'content-type': contentType, 'content-length': String(size) }, UNSIGNED_PAYLOAD, body);
      }
      if (res.status !== 200) return failure(res, `PUT ${key}`);
      drain(res);
    },

    async get(key, range?: ByteRange): Promise<StoredObject | undefined> {
      const res = await send('GET', key, range ? { range: rangeHeader(range) } : {}, sha256Hex(''));
      if (res.status === 404) {
        const err = await failure(res, `GET ${key}`).catch((e: S3Error) => e);
        if (err.code === 'NoSuchKey') return undefined;
        throw err;
      }
      if (res.status === 416) {
        const xml = (await readAll(res.body, 1024 * 1024)).toString('utf8');
        const total = /\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''))?.[1] ?? xmlField(xml, 'ActualObjectSize');
        throw new RangeNotSatisfiableError(Number(total ?? 0));
      }
      if (res.status !== 200 && res.status !== 206) return failure(res, `GET ${key}`);
      const length = Number(res.headers['content-length'] ?? 0);
      const contentType = String(res.headers['content-type'] ?? 'application/octet-stream');
      if (res.status === 206) {
        const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(res.headers['content-range'] ?? ''));
        if (!m) {
          res.body.destroy();
          throw new S3Error(206, 'InvalidContentRange', `GET ${key}: unreadable Content-Range ${String(res.headers['content-range'])}`);
        }
        return { stream: res.body, size: Number(m[3]), start: Number(m[1]), end: Number(m[2]), partial: true, contentType };
      }
      // 200: no range asked, or the store ignored it (then the whole object is the answer).
      return { stream: res.body, size: length, start: 0, end: length - 1, partial: false, contentType };
    },

    async exists(key) {
      const res = await send('HEAD', key, {}, sha256Hex(''));
      drain(res);
      if (res.status === 200) return true;
      if (res.status === 404) return false;
      // A HEAD answer has no body to read the code from.
      throw new S3Error(res.status, `HTTP${res.status}`, `HEAD ${key}`);
    },

    async delete(key) {
      const res = await send('DELETE', key, {}, sha256Hex(''));
      if (res.status !== 204 && res.status !== 200) return failure(res, `DELETE ${key}`);
      drain(res);
    },
  };
}
