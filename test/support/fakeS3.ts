// A fake S3 for tests: a local HTTP server that speaks the part of the S3 REST API the
// recording store uses (PUT, conditional with If-None-Match: *, GET with Range, HEAD and
// DELETE Object) the way S3 does. It checks every request's AWS Signature Version 4 by
// recomputing it from the secret with its own implementation, written from the
// specification and independent of the SDK the store uses (test/recordings/stores.test.ts
// holds it to the signed examples of the S3 documentation). It answers S3's XML errors
// (SignatureDoesNotMatch, NoSuchKey, NoSuchBucket, InvalidRange, PreconditionFailed, ...)
// and keeps objects in memory. Path-style and virtual-hosted-style addressing both work.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';

export interface FakeS3Object {
  body: Buffer;
  contentType: string;
  etag: string;
  lastModified: Date;
}

export interface FakeS3Request {
  method: string;
  host: string;
  /** The URL's path, as sent (percent-encoded). */
  path: string;
  /** The URL's query, as sent ('' when none). */
  query: string;
  status: number;
  /** The S3 error code, when the answer was an error. */
  code?: string;
  /** x-amz-content-sha256 as sent. */
  payloadHash?: string;
}

export interface FakeS3 {
  /** http://127.0.0.1:<port> (path-style endpoint). */
  url: string;
  /** http://<virtualHostBase>:<port>: the endpoint for virtual-hosted-style addressing (use with `lookup`). */
  virtualHostUrl: string;
  /** Resolves every name to 127.0.0.1, so `<bucket>.<virtualHostBase>` reaches this server. */
  lookup: LookupFunction;
  /** Objects by `<bucket>/<key>`. */
  objects: Map<string, FakeS3Object>;
  requests: FakeS3Request[];
  close(): Promise<void>;
}

export interface FakeS3Options {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  buckets: string[];
  /** Host names `<bucket>.<virtualHostBase>` address a bucket; default s3.localhost. */
  virtualHostBase?: string;
  /** The clock request times are checked against (the documented examples are of 2013); default Date.now. */
  now?: () => number;
}

const MAX_SKEW_MS = 15 * 60_000;

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** SigV4's URI encoding: every byte except A-Z a-z 0-9 - . _ ~ as %XX (upper case). */
function awsEncode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

class S3Failure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The request's headers, names lower-cased, repeated ones joined with commas (as SigV4 does). */
function headerMap(req: IncomingMessage): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i].toLowerCase();
    const value = req.rawHeaders[i + 1].trim().replace(/\s+/g, ' ');
    map.set(name, map.has(name) ? `${map.get(name)},${value}` : value);
  }
  return map;
}

function verifySignature(req: IncomingMessage, headers: Map<string, string>, opts: FakeS3Options): void {
  const auth = headers.get('authorization');
  if (!auth) throw new S3Failure(403, 'AccessDenied', 'Access Denied');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/s3\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) throw new S3Failure(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed.');
  const [, accessKeyId, day, region, signedHeaderList, provided] = m;
  if (accessKeyId !== opts.accessKeyId) throw new S3Failure(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  if (region !== opts.region) throw new S3Failure(400, 'AuthorizationHeaderMalformed', `The authorization header is malformed; the region '${region}' is wrong; expecting '${opts.region}'`);
  const date = headers.get('x-amz-date');
  if (!date || !/^\d{8}T\d{6}Z$/.test(date)) throw new S3Failure(403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  if (date.slice(0, 8) !== day) throw new S3Failure(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed; the date does not match x-amz-date');
  const when = Date.parse(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`);
  if (Math.abs((opts.now ?? Date.now)() - when) > MAX_SKEW_MS) throw new S3Failure(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
  const payloadHash = headers.get('x-amz-content-sha256');
  if (!payloadHash) throw new S3Failure(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');

  const signed = signedHeaderList.split(';');
  const sorted = [...signed].sort();
  if (signed.join(';') !== sorted.join(';')) throw new S3Failure(403, 'SignatureDoesNotMatch', 'SignedHeaders are not sorted');
  if (!signed.includes('host')) throw new S3Failure(403, 'AccessDenied', 'host must be a signed header');
  for (const name of headers.keys()) {
    if (name.startsWith('x-amz-') && !signed.includes(name)) throw new S3Failure(403, 'AccessDenied', `There were headers present in the request which were not signed: ${name}`);
  }

  const [rawPath, rawQuery = ''] = (req.url ?? '/').split('?', 2);
  const canonicalUri = rawPath
    .split('/')
    .map((segment) => awsEncode(decodeURIComponent(segment)))
    .join('/');
  const canonicalQuery = rawQuery
    .split('&')
    .filter(Boolean)
    .map((pair) => {
      const [k, v = ''] = pair.split('=', 2);
      return [awsEncode(decodeURIComponent(k)), awsEncode(decodeURIComponent(v))];
    })
    .sort(([a, av], [b, bv]) => (a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonicalHeaders = signed.map((name) => `${name}:${headers.get(name) ?? ''}\n`).join('');
  const canonicalRequest = [req.method, canonicalUri, canonicalQuery, canonicalHeaders, signedHeaderList, payloadHash].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${opts.secretAccessKey}`, day), region), 's3'), 'aws4_request');
  const expected = createHmac('sha256', signingKey).update(stringToSign, 'utf8').digest();
  if (!timingSafeEqual(expected, Buffer.from(provided, 'hex'))) {
    throw new S3Failure(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.', {
      AWSAccessKeyId: accessKeyId,
      StringToSign: stringToSign,
      SignatureProvided: provided,
      CanonicalRequest: canonicalRequest,
    });
  }
}

/** Bucket and key of the request: virtual-hosted (`<bucket>.<virtualHostBase>`) or path-style (`/<bucket>/<key>`). */
function address(req: IncomingMessage, virtualHostBase: string): { bucket: string; key: string } {
  const host = (req.headers.host ?? '').replace(/:\d+$/, '');
  const path = (req.url ?? '/').split('?', 1)[0];
  const segments = path.split('/').slice(1).map((s) => decodeURIComponent(s));
  if (host.endsWith(`.${virtualHostBase}`)) return { bucket: host.slice(0, -virtualHostBase.length - 1), key: segments.join('/') };
  return { bucket: segments[0] ?? '', key: segments.slice(1).join('/') };
}

/** The inclusive range of a `Range: bytes=...` header, undefined when absent or unreadable (S3 then ignores it). */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startFakeS3(opts: FakeS3Options): Promise<FakeS3> {
  const virtualHostBase = opts.virtualHostBase ?? 's3.localhost';
  const objects = new Map<string, FakeS3Object>();
  const requests: FakeS3Request[] = [];

  async function handle(req: IncomingMessage, res: ServerResponse, log: FakeS3Request): Promise<void> {
    const headers = headerMap(req);
    log.payloadHash = headers.get('x-amz-content-sha256');
    const body = await readBody(req);
    verifySignature(req, headers, opts);
    const { bucket, key } = address(req, virtualHostBase);
    if (!opts.buckets.includes(bucket)) throw new S3Failure(404, 'NoSuchBucket', 'The specified bucket does not exist', { BucketName: bucket });
    if (!key) throw new S3Failure(501, 'NotImplemented', 'Only object operations are implemented');
    const payloadHash = headers.get('x-amz-content-sha256')!;
    if (payloadHash !== 'UNSIGNED-PAYLOAD') {
      if (!/^[0-9a-f]{64}$/.test(payloadHash)) throw new S3Failure(400, 'InvalidArgument', 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a SHA-256 hex digest');
      if (sha256(body) !== payloadHash) throw new S3Failure(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
    }
    const id = `${bucket}/${key}`;
    switch (req.method) {
      case 'PUT': {
        if (req.headers['content-length'] === undefined) throw new S3Failure(411, 'MissingContentLength', 'You must provide the Content-Length HTTP header.');
        // A conditional write (If-None-Match: *) fails when the key is taken, as S3 does since 2024.
        if (headers.get('if-none-match') === '*' && objects.has(id)) {
          throw new S3Failure(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', { Condition: 'If-None-Match' });
        }
        const etag = `"${createHash('md5').update(body).digest('hex')}"`;
        objects.set(id, { body, contentType: headers.get('content-type') ?? 'binary/octet-stream', etag, lastModified: new Date() });
        res.writeHead(200, { ETag: etag, 'Content-Length': '0' });
        res.end();
        return;
      }
      case 'GET':
      case 'HEAD': {
        const object = objects.get(id);
        if (!object) {
          if (req.method === 'HEAD') {
            res.writeHead(404, { 'Content-Type': 'application/xml' });
            res.end();
            log.code = 'NoSuchKey';
            return;
          }
          throw new S3Failure(404, 'NoSuchKey', 'The specified key does not exist.', { Key: key });
        }
        const size = object.body.length;
        const common = { 'Content-Type': object.contentType, ETag: object.etag, 'Last-Modified': object.lastModified.toUTCString(), 'Accept-Ranges': 'bytes' };
        const range = req.method === 'GET' ? parseRange(headers.get('range'), size) : undefined;
        if (range === 'unsatisfiable') {
          throw new S3Failure(416, 'InvalidRange', 'The requested range is not satisfiable', { RangeRequested: headers.get('range') ?? '', ActualObjectSize: String(size) });
        }
        if (range) {
          res.writeHead(206, { ...common, 'Content-Length': String(range.end - range.start + 1), 'Content-Range': `bytes ${range.start}-${range.end}/${size}` });
          res.end(object.body.subarray(range.start, range.end + 1));
          return;
        }
        res.writeHead(200, { ...common, 'Content-Length': String(size) });
        res.end(req.method === 'HEAD' ? undefined : object.body);
        return;
      }
      case 'DELETE':
        objects.delete(id);
        res.writeHead(204);
        res.end();
        return;
      default:
        throw new S3Failure(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
    }
  }

  const server = http.createServer((req, res) => {
    const [path, query = ''] = (req.url ?? '/').split('?', 2);
    const log: FakeS3Request = { method: req.method ?? '', host: req.headers.host ?? '', path, query, status: 0 };
    requests.push(log);
    handle(req, res, log)
      .catch((err: unknown) => {
        const failure = err instanceof S3Failure ? err : new S3Failure(500, 'InternalError', String((err as Error)?.message ?? err));
        log.code = failure.code;
        const extra = Object.entries(failure.fields).map(([k, v]) => `<${k}>${xmlEscape(v)}</${k}>`).join('');
        const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${failure.code}</Code><Message>${xmlEscape(failure.message)}</Message>${extra}<Resource>${xmlEscape(log.path)}</Resource><RequestId>${randomBytes(8).toString('hex').toUpperCase()}</RequestId></Error>`;
        if (res.headersSent) return void res.destroy();
        res.writeHead(failure.status, { 'Content-Type': 'application/xml', 'Content-Length': String(req.method === 'HEAD' ? 0 : Buffer.byteLength(xml)) });
        res.end(req.method === 'HEAD' ? undefined : xml);
      })
      .finally(() => {
        log.status = res.statusCode;
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const lookup = ((_host: string, options: unknown, callback: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    if (all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
    else cb(null, '127.0.0.1', 4);
  }) as LookupFunction;
  return {
    url: `http://127.0.0.1:${port}`,
    virtualHostUrl: `http://${virtualHostBase}:${port}`,
    lookup,
    objects,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
