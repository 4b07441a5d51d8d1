/**
 * SIP messages as text (RFC 3261 §7, carried one per WebSocket message by RFC 7118): a pure
 * parser and serializer, and readers for the header values the user agent needs (name-addr
 * with tag, Via, CSeq). Nothing here touches a socket.
 */

export interface SipHeader {
  /** The full name (compact forms expanded), in its usual spelling for known headers, else as sent. */
  name: string;
  value: string;
}

export interface SipRequest {
  kind: 'request';
  method: string;
  uri: string;
  headers: SipHeader[];
  body: string;
}

export interface SipResponse {
  kind: 'response';
  status: number;
  reason: string;
  headers: SipHeader[];
  body: string;
}

export type SipMessage = SipRequest | SipResponse;

/**
 * A message that could not be parsed; `request` is set when enough of a request was read to
 * answer it, with `status`: 400 for malformed syntax, 513 (Message Too Large) for a message
 * past the edge's limits.
 */
export class SipParseError extends Error {
  constructor(
    message: string,
    readonly request?: SipRequest,
    readonly status: 400 | 513 = 400,
  ) {
    super(message);
    this.name = 'SipParseError';
  }
}

/** What one message may hold: a request past either limit is answered 513 (Message Too Large). */
export interface SipMessageLimits {
  /** Header fields, a folded header counting once (default 128). */
  maxHeaders: number;
  /** Via entries, over every Via header and each comma-separated value (default 70, the hops Max-Forwards allows). */
  maxViaEntries: number;
}

export const DEFAULT_SIP_MESSAGE_LIMITS: SipMessageLimits = { maxHeaders: 128, maxViaEntries: 70 };

const COMPACT_FORMS: Record<string, string> = {
  a: 'Accept-Contact',
  b: 'Referred-By',
  c: 'Content-Type',
  d: 'Request-Disposition',
  e: 'Content-Encoding',
  f: 'From',
  i: 'Call-ID',
  j: 'Reject-Contact',
  k: 'Supported',
  l: 'Content-Length',
  m: 'Contact',
  o: 'Event',
  r: 'Refer-To',
  s: 'Subject',
  t: 'To',
  u: 'Allow-Events',
  v: 'Via',
  x: 'Session-Expires',
  y: 'Identity',
};

const KNOWN_NAMES = [
  'Accept',
  'Accept-Contact',
  'Accept-Encoding',
  'Accept-Language',
  'Allow',
  'Allow-Events',
  'Authorization',
  'Call-ID',
  'Contact',
  'Content-Disposition',
  'Content-Encoding',
  'Content-Length',
  'Content-Type',
  'CSeq',
  'Event',
  'Expires',
  'From',
  'Identity',
  'Max-Forwards',
  'Min-SE',
  'Proxy-Authenticate',
  'Proxy-Authorization',
  'Reason',
  'Record-Route',
  'Refer-To',
  'Referred-By',
  'Reject-Contact',
  'Request-Disposition',
  'Require',
  'Retry-After',
  'Route',
  'Server',
  'Session-Expires',
  'Subject',
  'Supported',
  'Timestamp',
  'To',
  'Unsupported',
  'User-Agent',
  'Via',
  'Warning',
  'WWW-Authenticate',
];
const CANONICAL = new Map(KNOWN_NAMES.map((n) => [n.toLowerCase(), n]));

/** Headers whose value may be a comma-separated list of several values (RFC 3261 §7.3.1). */
const LIST_HEADERS = new Set(['via', 'route', 'record-route', 'contact', 'allow', 'supported', 'require', 'unsupported', 'accept', 'allow-events']);

/** The full, canonical spelling of a header name (`v` → `Via`, `call-id` → `Call-ID`); unknown names as given. */
export function canonicalHeaderName(name: string): string {
  const lower = name.toLowerCase();
  const full = name.length === 1 ? COMPACT_FORMS[lower] : undefined;
  return full ?? CANONICAL.get(lower) ?? name;
}

const TOKEN = /^[A-Za-z0-9\-.!%*_+`'~]+$/;

/** Whether `text` is a SIP token (method names, header names). */
export function isToken(text: string): boolean {
  return TOKEN.test(text);
}

const byteLength = (text: string): number => Buffer.byteLength(text, 'utf8');

/** Parses one SIP message. Throws SipParseError, with the partial request when it can be answered. */
export function parseSipMessage(text: string, limits: SipMessageLimits = DEFAULT_SIP_MESSAGE_LIMITS): SipMessage {
  let split = text.indexOf('\r\n\r\n');
  let separator = 4;
  if (split === -1 && !text.includes('\r\n')) {
    // Tolerate bare LF line ends (hand-written test clients); real stacks send CRLF.
    split = text.indexOf('\n\n');
    separator = 2;
  }
  if (split === -1) throw new SipParseError('no blank line after the headers');
  const head = text.slice(0, split);
  const rest = text.slice(split + separator);
  const lines = head.split(/\r?\n/);
  const startLine = lines.shift() ?? '';

  const headers: SipHeader[] = [];
  // The parts of the last header while it is folded, joined once at its end: appending to the
  // value line by line copied the whole value each time (quadratic in the continuation lines).
  let folded: string[] | undefined;
  const unfold = () => {
    if (!folded) return;
    headers[headers.length - 1].value = folded.filter(Boolean).join(' ');
    folded = undefined;
  };
  for (const line of lines) {
    if (line.startsWith(' ') || line.startsWith('\t')) {
      // A folded continuation line belongs to the header before it.
      const previous = headers[headers.length - 1];
      if (!previous) throw new SipParseError('continuation line before any header');
      (folded ??= [previous.value]).push(line.trim());
      continue;
    }
    unfold();
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim() : '';
    if (!name || !isToken(name)) throw new SipParseError(`malformed header line: ${JSON.stringify(line.slice(0, 80))}`);
    headers.push({ name: canonicalHeaderName(name), value: line.slice(colon + 1).trim() });
  }
  unfold();

  const request = /^([A-Za-z0-9\-.!%*_+`'~]+) (\S+) SIP\/2\.0$/.exec(startLine);
  const response = /^SIP\/2\.0 ([1-6]\d\d) ?(.*)$/.exec(startLine);
  if (!request && !response) throw new SipParseError(`malformed start line: ${JSON.stringify(startLine.slice(0, 80))}`);

  const message: SipMessage = request
    ? { kind: 'request', method: request[1], uri: request[2], headers, body: '' }
    : { kind: 'response', status: Number(response![1]), reason: response![2], headers, body: '' };
  const fail = (reason: string): never => {
    throw new SipParseError(reason, message.kind === 'request' && canAnswer(message) ? message : undefined);
  };
  const tooLarge = checkLimits(headers, limits);
  if (tooLarge) {
    throw new SipParseError(tooLarge, message.kind === 'request' && canAnswer(message) ? answerableCore(message, limits) : undefined, 513);
  }

  const lengths = headers.filter((h) => h.name === 'Content-Length');
  if (lengths.length > 1 && new Set(lengths.map((h) => h.value)).size > 1) fail('conflicting Content-Length headers');
  if (lengths.length > 0) {
    if (!/^\d{1,9}$/.test(lengths[0].value)) fail('malformed Content-Length');
    const length = Number(lengths[0].value);
    const bytes = Buffer.from(rest, 'utf8');
    if (bytes.length < length) fail(`body shorter than Content-Length (${bytes.length} < ${length})`);
    message.body = bytes.subarray(0, length).toString('utf8');
  } else {
    // RFC 7118: the WebSocket message frames the SIP message, so Content-Length is optional.
    message.body = rest;
  }

  for (const required of ['Via', 'From', 'To', 'Call-ID', 'CSeq']) {
    if (!headers.some((h) => h.name === required)) fail(`missing ${required}`);
  }
  const cseq = parseCSeq(getHeader(message, 'CSeq')!);
  if (!cseq) fail('malformed CSeq');
  if (message.kind === 'request' && cseq!.method !== message.method) fail('CSeq method differs from the request method');
  return message;
}

/** Whether a request carries what a response must echo (Via, From, To, Call-ID, CSeq). */
function canAnswer(request: SipRequest): boolean {
  return ['Via', 'From', 'To', 'Call-ID', 'CSeq'].every((name) => request.headers.some((h) => h.name === name));
}

/** Why the headers are past the limits, or undefined. */
function checkLimits(headers: SipHeader[], limits: SipMessageLimits): string | undefined {
  if (headers.length > limits.maxHeaders) return `more than ${limits.maxHeaders} headers`;
  let vias = 0;
  for (const header of headers) {
    if (header.name === 'Via') vias += splitHeaderList(header.value).length;
  }
  return vias > limits.maxViaEntries ? `more than ${limits.maxViaEntries} Via entries` : undefined;
}

/**
 * Only what a response echoes, the Via entries cut at the limit: the answer to an oversized
 * request stays small (the top Via, the sender's own, is the one its transaction matches).
 */
function answerableCore(request: SipRequest, limits: SipMessageLimits): SipRequest {
  const vias = getHeaderValues(request, 'Via').slice(0, limits.maxViaEntries);
  const echoed = ['From', 'To', 'Call-ID', 'CSeq'].map((name) => ({ name, value: getHeader(request, name)! }));
  return { ...request, headers: [...vias.map((value) => ({ name: 'Via', value })), ...echoed], body: '' };
}

/** The text of a message; Content-Length is always written, from the body's UTF-8 length. */
export function serializeSipMessage(message: SipMessage): string {
  const start = message.kind === 'request' ? `${message.method} ${message.uri} SIP/2.0` : `SIP/2.0 ${message.status} ${message.reason}`;
  const lines = [start];
  for (const header of message.headers) {
    if (header.name === 'Content-Length') continue;
    lines.push(`${header.name}: ${header.value}`);
  }
  lines.push(`Content-Length: ${byteLength(message.body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${message.body}`;
}

/** The first value of a header (case-insensitive, compact forms accepted), or undefined. */
export function getHeader(message: SipMessage, name: string): string | undefined {
  const full = canonicalHeaderName(name).toLowerCase();
  return message.headers.find((h) => h.name.toLowerCase() === full)?.value;
}

/** Every value of a header, comma-separated lists split into their elements. */
export function getHeaderValues(message: SipMessage, name: string): string[] {
  const full = canonicalHeaderName(name).toLowerCase();
  const values = message.headers.filter((h) => h.name.toLowerCase() === full).map((h) => h.value);
  return LIST_HEADERS.has(full) ? values.flatMap(splitHeaderList) : values;
}

/** Splits a header value at commas that are outside quotes and angle brackets. */
export function splitHeaderList(value: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  let angle = 0;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (quoted) {
      current += ch;
      if (ch === '\\' && i + 1 < value.length) current += value[++i];
      else if (ch === '"') quoted = false;
      continue;
    }
    if (ch === '"') quoted = true;
    else if (ch === '<') angle++;
    else if (ch === '>') angle = Math.max(0, angle - 1);
    else if (ch === ',' && angle === 0) {
      if (current.trim()) parts.push(current.trim());
      current = '';
      continue;
    }
    current += ch;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

export type SipParams = Record<string, string | null>;

/** `;a=b;c` → { a: 'b', c: null } (names lower-cased). */
export function parseParams(text: string): SipParams {
  const params: SipParams = {};
  for (const part of splitOutsideQuotes(text, ';')) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const eq = trimmed.indexOf('=');
    if (eq === -1) params[trimmed.toLowerCase()] = null;
    else params[trimmed.slice(0, eq).trim().toLowerCase()] = trimmed.slice(eq + 1).trim();
  }
  return params;
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    if (ch === separator && !quoted) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts;
}

export interface NameAddr {
  displayName?: string;
  uri: string;
  /** Header parameters (tag, expires, …), not the URI's own. */
  params: SipParams;
}

/** From, To, Contact: `"Name" <sip:a@b;transport=ws>;tag=x` or `sip:a@b;tag=x`. */
export function parseNameAddr(value: string): NameAddr | undefined {
  const text = value.trim();
  const open = text.indexOf('<');
  if (open !== -1) {
    const close = text.indexOf('>', open);
    if (close === -1) return undefined;
    const display = text.slice(0, open).trim().replace(/^"(.*)"$/, '$1');
    const uri = text.slice(open + 1, close).trim();
    if (!/^[a-z][a-z0-9+.-]*:\S+$/i.test(uri)) return undefined;
    return { ...(display ? { displayName: display } : {}), uri, params: parseParams(text.slice(close + 1)) };
  }
  // Without angle brackets, parameters after the URI belong to the header (RFC 3261 §20.10).
  const semi = text.indexOf(';');
  const uri = semi === -1 ? text : text.slice(0, semi);
  if (!/^[a-z][a-z0-9+.-]*:\S+$/i.test(uri)) return undefined;
  return { uri, params: semi === -1 ? {} : parseParams(text.slice(semi)) };
}

/** The `tag` parameter of a From or To value. */
export function tagOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  return parseNameAddr(value)?.params.tag ?? undefined;
}

export interface Via {
  /** e.g. SIP/2.0/WSS */
  protocol: string;
  /** host[:port] as sent (JsSIP sends a random `.invalid` host). */
  sentBy: string;
  params: SipParams;
}

export function parseVia(value: string): Via | undefined {
  const match = /^(SIP\s*\/\s*2\.0\s*\/\s*[A-Za-z]+)\s+([^;\s]+)\s*(.*)$/i.exec(value.trim());
  if (!match) return undefined;
  return { protocol: match[1].replace(/\s+/g, '').toUpperCase(), sentBy: match[2], params: parseParams(match[3]) };
}

export interface CSeq {
  seq: number;
  method: string;
}

export function parseCSeq(value: string): CSeq | undefined {
  const match = /^(\d{1,10})\s+([A-Za-z0-9\-.!%*_+`'~]+)$/.exec(value.trim());
  if (!match) return undefined;
  const seq = Number(match[1]);
  return seq < 2 ** 31 ? { seq, method: match[2] } : undefined;
}

/** The branch of the top Via: the key of the transaction (RFC 3261 §17.2.3). */
export function topViaBranch(message: SipMessage): string | undefined {
  const top = getHeaderValues(message, 'Via')[0];
  return top ? (parseVia(top)?.params.branch ?? undefined) : undefined;
}

const REASONS: Record<number, string> = {
  100: 'Trying',
  180: 'Ringing',
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Request Entity Too Large',
  415: 'Unsupported Media Type',
  420: 'Bad Extension',
  481: 'Call/Transaction Does Not Exist',
  486: 'Busy Here',
  487: 'Request Terminated',
  488: 'Not Acceptable Here',
  491: 'Request Pending',
  500: 'Server Internal Error',
  503: 'Service Unavailable',
  513: 'Message Too Large',
};

/** The usual reason phrase of a status code. */
export function reasonPhrase(status: number): string {
  return REASONS[status] ?? (status < 300 ? 'OK' : 'Error');
}

export interface ResponseOptions {
  reason?: string;
  /** Added to the To header when it has none (every response but 100). */
  toTag?: string;
  headers?: SipHeader[];
  body?: string;
}

/** A response to `request` (RFC 3261 §8.2.6): Via, From, To, Call-ID and CSeq copied, To tagged. */
export function createResponse(request: SipRequest, status: number, options: ResponseOptions = {}): SipResponse {
  const headers: SipHeader[] = [];
  for (const via of getHeaderValues(request, 'Via')) headers.push({ name: 'Via', value: via });
  headers.push({ name: 'From', value: getHeader(request, 'From') ?? '' });
  let to = getHeader(request, 'To') ?? '';
  if (status > 100 && options.toTag && !tagOf(to)) to = `${to};tag=${options.toTag}`;
  headers.push({ name: 'To', value: to });
  headers.push({ name: 'Call-ID', value: getHeader(request, 'Call-ID') ?? '' });
  headers.push({ name: 'CSeq', value: getHeader(request, 'CSeq') ?? '' });
  headers.push(...(options.headers ?? []));
  return { kind: 'response', status, reason: options.reason ?? reasonPhrase(status), headers, body: options.body ?? '' };
}
