// A fake OpenTelemetry collector for tests: OTLP over HTTP with protobuf bodies
// (POST /v1/traces, Content-Type application/x-protobuf, optionally gzip), as the OTLP
// specification defines it. It decodes each ExportTraceServiceRequest with a small protobuf
// wire reader (opentelemetry-proto's trace.proto field numbers) and keeps the spans with
// their resource's service.name, answering 200 with an empty ExportTraceServiceResponse.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export type AttributeValue = string | boolean | number | bigint | AttributeValue[] | undefined;

export interface ReceivedSpan {
  serviceName: string | undefined;
  scope: string | undefined;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNanos: bigint;
  endNanos: bigint;
  attributes: Record<string, AttributeValue>;
}

export interface ReceivedExport {
  path: string;
  headers: http.IncomingHttpHeaders;
  spans: ReceivedSpan[];
}

/** Protobuf wire types. */
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

type Field = { number: number; wire: number; varint?: bigint; bytes?: Buffer };

/** The fields of one message, in order (repeated fields appear once per element). */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++];
      if (byte === undefined) throw new Error('protobuf: truncated varint');
      value |= BigInt(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const field: Field = { number: key >>> 3, wire: key & 7 };
    if (field.wire === VARINT) field.varint = varint();
    else if (field.wire === FIXED64 || field.wire === FIXED32) {
      const size = field.wire === FIXED64 ? 8 : 4;
      field.bytes = buf.subarray(at, at + size);
      at += size;
    } else if (field.wire === LENGTH_DELIMITED) {
      const size = Number(varint());
      field.bytes = buf.subarray(at, at + size);
      at += size;
    } else throw new Error(`protobuf: unsupported wire type ${field.wire}`);
    if (at > buf.length) throw new Error('protobuf: truncated field');
    out.push(field);
  }
  return out;
}

const all = (msg: Field[], n: number) => msg.filter((f) => f.number === n);
const one = (msg: Field[], n: number) => msg.find((f) => f.number === n);
const text = (f: Field | undefined) => f?.bytes?.toString('utf8');

/** common.proto AnyValue: string 1, bool 2, int 3, double 4, array 5 (ArrayValue: values 1), bytes 7. */
function anyValue(buf: Buffer): AttributeValue {
  const [f] = fields(buf);
  if (!f) return undefined;
  switch (f.number) {
    case 1:
      return text(f);
    case 2:
      return f.varint === 1n;
    case 3:
      return BigInt.asIntN(64, f.varint!);
    case 4:
      return f.bytes!.readDoubleLE(0);
    case 5:
      return all(fields(f.bytes!), 1).map((v) => anyValue(v.bytes!));
    default:
      return f.bytes?.toString('hex');
  }
}

/** KeyValue: key 1, value 2. */
function attributes(list: Field[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list) {
    const msg = fields(kv.bytes!);
    out[text(one(msg, 1)) ?? ''] = one(msg, 2) ? anyValue(one(msg, 2)!.bytes!) : undefined;
  }
  return out;
}

/** ExportTraceServiceRequest: resource_spans 1 → ResourceSpans: resource 1, scope_spans 2 → ScopeSpans: scope 1, spans 2. */
export function decodeTraceRequest(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of all(fields(body), 1)) {
    const rs = fields(resourceSpans.bytes!);
    const resource = one(rs, 1);
    const resourceAttributes = resource ? attributes(all(fields(resource.bytes!), 1)) : {};
    for (const scopeSpans of all(rs, 2)) {
      const ss = fields(scopeSpans.bytes!);
      const scope = one(ss, 1);
      for (const spanField of all(ss, 2)) {
        // Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9.
        const s = fields(spanField.bytes!);
        spans.push({
          serviceName: resourceAttributes['service.name'] as string | undefined,
          scope: scope ? text(one(fields(scope.bytes!), 1)) : undefined,
          traceId: one(s, 1)?.bytes?.toString('hex') ?? '',
          spanId: one(s, 2)?.bytes?.toString('hex') ?? '',
          parentSpanId: one(s, 4)?.bytes?.toString('hex') ?? '',
          name: text(one(s, 5)) ?? '',
          kind: Number(one(s, 6)?.varint ?? 0n),
          startNanos: one(s, 7)?.bytes?.readBigUInt64LE(0) ?? 0n,
          endNanos: one(s, 8)?.bytes?.readBigUInt64LE(0) ?? 0n,
          attributes: attributes(all(s, 9)),
        });
      }
    }
  }
  return spans;
}

export class OtlpReceiver {
  readonly exports: ReceivedExport[] = [];
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly server: http.Server,
    /** The base URL: what OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
    readonly endpoint: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        if (req.method !== 'POST' || req.headers['content-type'] !== 'application/x-protobuf') {
          res.writeHead(415).end();
          return;
        }
        const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
        receiver!.exports.push({ path: req.url ?? '', headers: req.headers, spans: decodeTraceRequest(body) });
        res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
        for (const wake of receiver!.waiters) wake();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  get spans(): ReceivedSpan[] {
    return this.exports.flatMap((e) => e.spans);
  }

  /** Resolves once a received span matches (rejects after `timeoutMs`). */
  async waitForSpan(match: (span: ReceivedSpan) => boolean, timeoutMs = 10_000): Promise<ReceivedSpan> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.spans.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching span among ${this.spans.map((s) => s.name).join(', ') || 'none'}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, 200);
        this.waiters.add(wake);
      });
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
