/**
 * SIP over UDP and TCP (RFC 3261 §18) on one address and port: datagrams and TCP streams in,
 * parsed SIP messages out, each with where it came from; messages out to a peer, over a TCP
 * connection of the peer's when one is open. Hostile input never crashes anything: a request
 * that can be answered gets 400 (malformed) or 513 (past the size caps), the rest is dropped
 * and counted, and a TCP stream that breaks its framing is answered if it can be and closed.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, connect, isIP, type Server, type Socket } from 'node:net';
import type { Logger } from '../../../logging/logger.js';
import {
  createResponse,
  DEFAULT_SIP_MESSAGE_LIMITS,
  getHeaderValues,
  parseSipMessage,
  parseVia,
  reasonPhrase,
  serializeSipMessage,
  SipParseError,
  type SipMessage,
  type SipMessageLimits,
  type SipRequest,
  type SipResponse,
} from '../message.js';
import type { SipTransportName } from './trunkSettings.js';

/** Where a message came from or goes to; `connection` names the TCP connection it arrived on. */
export interface SipPeer {
  transport: SipTransportName;
  address: string;
  port: number;
  connection?: number;
}

export interface SipTransportOptions {
  host: string;
  /** 0: any free port (tests); UDP and TCP then share the port UDP got. */
  port: number;
  logger: Logger;
  onMessage: (message: SipMessage, from: SipPeer) => void;
  /** Largest message, bytes (default 32 KiB): a larger request is answered 513 when it can be, else dropped. */
  maxMessageBytes?: number;
  messageLimits?: SipMessageLimits;
  /** Inbound TCP connections one address may hold (default 8); more are closed at once and counted. */
  maxTcpConnectionsPerAddress?: number;
  /** TCP connections in total (default 512). */
  maxTcpConnections?: number;
  /** A TCP connection with no traffic this long is closed (default 10 minutes; dialogs outlive it: a new one is opened when needed). */
  tcpIdleMs?: number;
  /** How long a TCP connect may take (default 5 s). */
  tcpConnectTimeoutMs?: number;
  /**
   * UDP requests one source address may send per second (SIP_SOURCE_REQUESTS_PER_SECOND);
   * more are dropped unanswered and counted. Undefined: no limit.
   */
  maxUdpRequestsPerSourcePerSecond?: number;
  /** Sources the limit does not apply to (the trunk's own addresses). */
  rateLimitExempt?: (address: string) => boolean;
}

/** What the transport refused, by kind (the counters docs/telephony.md lists). */
export interface SipTransportStats {
  /** Requests answered 400 for their syntax. */
  answeredMalformed: number;
  /** Requests answered 513 for their size. */
  answeredTooLarge: number;
  /** Messages dropped unanswered (not SIP, a response that did not parse, an oversized datagram that did not parse). */
  dropped: number;
  /** TCP connections closed at once for the per-address or total cap. */
  refusedTcpConnections: number;
  /** TCP connections closed for broken framing (no Content-Length, a header section past the cap). */
  closedTcpConnections: number;
  /** UDP requests dropped unanswered: their source was past its requests per second. */
  rateLimited: number;
}

export class SipTransportError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'SipTransportError';
  }
}

interface TcpConnection {
  id: number;
  socket: Socket;
  /** address:port of the far end. */
  key: string;
  address: string;
  inbound: boolean;
  buffer: Buffer;
  /** Resolves once connected (outbound); sends wait for it. */
  ready: Promise<void>;
}

const CRLF2 = Buffer.from('\r\n\r\n');

export class SipTransport {
  readonly stats: SipTransportStats = { answeredMalformed: 0, answeredTooLarge: 0, dropped: 0, refusedTcpConnections: 0, closedTcpConnections: 0, rateLimited: 0 };
  private readonly connections = new Map<number, TcpConnection>();
  /** Open connections by the far end's address:port (the latest wins). */
  private readonly connectionsByPeer = new Map<string, TcpConnection>();
  private readonly inboundPerAddress = new Map<string, number>();
  private readonly maxMessageBytes: number;
  private readonly limits: SipMessageLimits;
  private nextConnectionId = 1;
  private closed = false;
  /** UDP requests per source address in the current one-second window (cleared each window, so it holds only this second's sources). */
  private readonly requestsThisSecond = new Map<string, number>();
  private rateWindowStart = 0;

  private constructor(
    private readonly options: SipTransportOptions,
    private readonly udp: UdpSocket,
    private readonly tcp: Server,
    readonly port: number,
  ) {
    this.maxMessageBytes = options.maxMessageBytes ?? 32 * 1024;
    this.limits = options.messageLimits ?? DEFAULT_SIP_MESSAGE_LIMITS;
  }

  /** Binds UDP, then TCP on the same port. */
  static async start(options: SipTransportOptions): Promise<SipTransport> {
    const udp = createSocket({ type: isIP(options.host) === 6 ? 'udp6' : 'udp4' });
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(options.port, options.host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    const port = udp.address().port;
    const tcp = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(port, options.host, () => {
          tcp.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      udp.close();
      throw err;
    }
    const transport = new SipTransport(options, udp, tcp, port);
    udp.on('message', (data, rinfo) => transport.onDatagram(data, { transport: 'udp', address: rinfo.address, port: rinfo.port }));
    udp.on('error', (err) => options.logger.warn({ err }, 'SIP UDP socket error'));
    tcp.on('connection', (socket) => transport.onInboundConnection(socket));
    tcp.on('error', (err) => options.logger.warn({ err }, 'SIP TCP server error'));
    return transport;
  }

  /** Open TCP connections (both directions). */
  get tcpConnections(): number {
    return this.connections.size;
  }

  /**
   * Sends one message. Over TCP: on the connection `to.connection` names when it is still open,
   * else on any open connection to the peer, else a new one; rejects with SipTransportError when
   * the peer cannot be reached (connection refused, connect timeout). UDP never rejects for the
   * peer (an unreachable one shows as silence).
   */
  async send(message: SipMessage, to: SipPeer): Promise<void> {
    if (this.closed) throw new SipTransportError('the SIP transport is closed');
    const bytes = Buffer.from(serializeSipMessage(message), 'utf8');
    if (to.transport === 'udp') {
      await new Promise<void>((resolve, reject) => this.udp.send(bytes, to.port, to.address, (err) => (err ? reject(new SipTransportError(err.message, (err as NodeJS.ErrnoException).code)) : resolve())));
      return;
    }
    let connection = to.connection !== undefined ? this.connections.get(to.connection) : undefined;
    connection ??= this.connectionsByPeer.get(`${to.address}:${to.port}`) ?? this.openConnection(to);
    await connection.ready;
    if (connection.socket.destroyed) throw new SipTransportError(`the TCP connection to ${connection.key} closed`);
    connection.socket.write(bytes);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const connection of this.connections.values()) connection.socket.destroy();
    await Promise.all([new Promise<void>((resolve) => this.udp.close(() => resolve())), new Promise<void>((resolve) => this.tcp.close(() => resolve()))]);
  }

  // ------------------------------------------------------------------ UDP

  private onDatagram(data: Buffer, from: SipPeer): void {
    if (this.closed) return;
    // A CRLF keep-alive (RFC 5626 §4.4.1) is no message.
    if (data.length <= 4 && /^[\r\n]*$/.test(data.toString('latin1'))) return;
    if (this.overRequestRate(data, from.address)) {
      this.stats.rateLimited++;
      return;
    }
    this.deliver(data, from, data.length > this.maxMessageBytes);
  }

  /**
   * Whether a datagram is a request past its source's rate. Checked before parsing: a flood of
   * distinct requests would otherwise each cost a parse and hold a transaction for 64×T1.
   * Responses (to our own requests) are never limited; dropping rather than answering 503
   * sends nothing back to a possibly forged source, and a real client retransmits.
   */
  private overRequestRate(data: Buffer, address: string): boolean {
    const limit = this.options.maxUdpRequestsPerSourcePerSecond;
    if (limit === undefined || data.subarray(0, 8).toString('latin1') === 'SIP/2.0 ') return false;
    const now = performance.now();
    if (now - this.rateWindowStart >= 1000) {
      this.rateWindowStart = now;
      this.requestsThisSecond.clear();
    }
    const count = (this.requestsThisSecond.get(address) ?? 0) + 1;
    this.requestsThisSecond.set(address, count);
    if (count <= limit || this.options.rateLimitExempt?.(address)) return false;
    if (count === limit + 1) this.options.logger.warn({ address, limit }, 'SIP requests over UDP past the per-source rate: dropping the rest of this second');
    return true;
  }

  // ------------------------------------------------------------------ TCP

  private onInboundConnection(socket: Socket): void {
    const address = socket.remoteAddress ?? '?';
    const perAddress = this.inboundPerAddress.get(address) ?? 0;
    if (this.closed || perAddress >= (this.options.maxTcpConnectionsPerAddress ?? 8) || this.connections.size >= (this.options.maxTcpConnections ?? 512)) {
      this.stats.refusedTcpConnections++;
      this.options.logger.warn({ address, connections: perAddress }, 'SIP TCP connection refused: too many connections');
      socket.destroy();
      return;
    }
    this.inboundPerAddress.set(address, perAddress + 1);
    socket.once('close', () => {
      const left = (this.inboundPerAddress.get(address) ?? 1) - 1;
      if (left <= 0) this.inboundPerAddress.delete(address);
      else this.inboundPerAddress.set(address, left);
    });
    this.adopt(socket, address, socket.remotePort ?? 0, true, Promise.resolve());
  }

  private openConnection(to: SipPeer): TcpConnection {
    const socket = connect({ host: to.address, port: to.port });
    const timeoutMs = this.options.tcpConnectTimeoutMs ?? 5000;
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new SipTransportError(`TCP connect to ${to.address}:${to.port} timed out after ${timeoutMs} ms`, 'ETIMEDOUT'));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(new SipTransportError(`TCP connect to ${to.address}:${to.port} failed (${err.code ?? err.message})`, err.code));
      });
    });
    // Every sender awaits `ready`; this keeps a failure nobody awaits from being unhandled.
    ready.catch(() => undefined);
    return this.adopt(socket, to.address, to.port, false, ready);
  }

  private adopt(socket: Socket, address: string, port: number, inbound: boolean, ready: Promise<void>): TcpConnection {
    const connection: TcpConnection = { id: this.nextConnectionId++, socket, key: `${address}:${port}`, address, inbound, buffer: Buffer.alloc(0), ready };
    this.connections.set(connection.id, connection);
    this.connectionsByPeer.set(connection.key, connection);
    socket.setTimeout(this.options.tcpIdleMs ?? 600_000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      try {
        this.onStreamData(connection, chunk);
      } catch (err) {
        this.options.logger.error({ err }, 'SIP TCP data handling failed: closing the connection');
        socket.destroy();
      }
    });
    socket.on('error', (err) => this.options.logger.debug({ err, peer: connection.key }, 'SIP TCP connection error'));
    socket.on('close', () => {
      this.connections.delete(connection.id);
      if (this.connectionsByPeer.get(connection.key) === connection) this.connectionsByPeer.delete(connection.key);
    });
    return connection;
  }

  /** RFC 3261 §18.3: messages on a stream are framed by their Content-Length, which is mandatory there. */
  private onStreamData(connection: TcpConnection, chunk: Buffer): void {
    connection.buffer = connection.buffer.length === 0 ? chunk : Buffer.concat([connection.buffer, chunk]);
    const from: SipPeer = { transport: 'tcp', address: connection.address, port: Number(connection.key.slice(connection.key.lastIndexOf(':') + 1)), connection: connection.id };
    while (connection.buffer.length > 0 && !connection.socket.destroyed) {
      // CRLFs between messages are keep-alives (RFC 5626 §3.5.1).
      let start = 0;
      while (start < connection.buffer.length && (connection.buffer[start] === 0x0d || connection.buffer[start] === 0x0a)) start++;
      if (start > 0) connection.buffer = connection.buffer.subarray(start);
      if (connection.buffer.length === 0) return;
      const headEnd = connection.buffer.indexOf(CRLF2);
      if (headEnd === -1) {
        if (connection.buffer.length > this.maxMessageBytes) this.breakStream(connection, connection.buffer.subarray(0, this.maxMessageBytes), 'header section past the size cap', 513);
        return;
      }
      const head = connection.buffer.subarray(0, headEnd).toString('utf8');
      const lengthLine = /^(?:content-length|l)[ \t]*:[ \t]*(\d{1,9})[ \t]*$/im.exec(head);
      if (!lengthLine) {
        this.breakStream(connection, connection.buffer.subarray(0, headEnd + 4), 'no Content-Length on a stream', 400);
        return;
      }
      const total = headEnd + 4 + Number(lengthLine[1]);
      if (total > this.maxMessageBytes) {
        this.breakStream(connection, connection.buffer.subarray(0, headEnd + 4), `a ${total}-byte message is past the size cap`, 513);
        return;
      }
      if (connection.buffer.length < total) return;
      const message = connection.buffer.subarray(0, total);
      connection.buffer = connection.buffer.subarray(total);
      this.deliver(message, from, false);
    }
  }

  /** The stream's framing is lost: answer what can be answered, then close the connection. */
  private breakStream(connection: TcpConnection, head: Buffer, why: string, status: 400 | 513): void {
    this.stats.closedTcpConnections++;
    this.options.logger.warn({ peer: connection.key, why }, 'SIP TCP stream unusable: closing the connection');
    const from: SipPeer = { transport: 'tcp', address: connection.address, port: 0, connection: connection.id };
    const request = this.answerableRequest(head.toString('utf8'));
    const response = request ? this.errorResponse(request, from, status, why) : undefined;
    if (!response) this.stats.dropped++;
    connection.buffer = Buffer.alloc(0);
    // Written with the end, on this connection: the answer goes out before the close.
    if (response) connection.socket.end(serializeSipMessage(response));
    else connection.socket.end();
    setTimeout(() => connection.socket.destroy(), 1000).unref();
  }

  // ------------------------------------------------------------------ parsing

  private deliver(data: Buffer, from: SipPeer, tooLarge: boolean): void {
    const text = data.toString('utf8');
    if (tooLarge) {
      const request = this.answerableRequest(text);
      if (request) this.answerError(request, from, 513, `a ${data.length}-byte message is past the size cap`);
      else this.stats.dropped++;
      return;
    }
    let message: SipMessage;
    try {
      message = parseSipMessage(text, this.limits);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (err instanceof SipParseError && err.request && err.request.method.toUpperCase() !== 'ACK') {
        this.answerError(err.request, from, err.status, reason);
      } else {
        this.stats.dropped++;
        this.options.logger.debug({ reason, peer: `${from.address}:${from.port}` }, 'unparseable SIP message dropped');
      }
      return;
    }
    if (message.kind === 'request') stampVia(message, from);
    try {
      this.options.onMessage(message, from);
    } catch (err) {
      this.options.logger.error({ err }, 'SIP message handling failed');
    }
  }

  /** The start line and the headers a response echoes of a message too large or too broken to parse whole. */
  private answerableRequest(text: string): SipRequest | undefined {
    const headEnd = text.indexOf('\r\n\r\n');
    const head = headEnd === -1 ? text.slice(0, Math.max(0, text.lastIndexOf('\r\n'))) : text.slice(0, headEnd);
    const lines = head.split('\r\n').filter((line) => !/^(?:content-length|l)[ \t]*:/i.test(line));
    try {
      const parsed = parseSipMessage(`${lines.join('\r\n')}\r\nContent-Length: 0\r\n\r\n`, this.limits);
      return parsed.kind === 'request' && parsed.method.toUpperCase() !== 'ACK' ? parsed : undefined;
    } catch (err) {
      return err instanceof SipParseError && err.request && err.request.method.toUpperCase() !== 'ACK' ? err.request : undefined;
    }
  }

  private answerError(request: SipRequest, from: SipPeer, status: 400 | 513, why: string): void {
    const response = this.errorResponse(request, from, status, why);
    this.send(response, responseDestination(request, from)).catch((err: unknown) => this.options.logger.debug({ err }, 'could not send the error response'));
  }

  /** The 400 or 513 to a request, counted and logged. */
  private errorResponse(request: SipRequest, from: SipPeer, status: 400 | 513, why: string): SipResponse {
    if (status === 513) this.stats.answeredTooLarge++;
    else this.stats.answeredMalformed++;
    this.options.logger.warn({ peer: `${from.address}:${from.port}`, method: request.method, status, why }, `SIP request refused: ${status}`);
    stampVia(request, from);
    return createResponse(request, status, { reason: `${reasonPhrase(status)} (${why})`.slice(0, 120), toTag: 'refused' });
  }
}

/**
 * RFC 3261 §18.2.1 and RFC 3581: the top Via gets `received` when the sender is not where it
 * says, and `rport` filled with the source port when asked for; responses then go back there.
 */
export function stampVia(request: SipRequest, from: SipPeer): void {
  const index = request.headers.findIndex((h) => h.name === 'Via');
  if (index === -1) return;
  const values = getHeaderValues({ ...request, headers: [request.headers[index]] }, 'Via');
  const top = values[0];
  const via = top ? parseVia(top) : undefined;
  if (!via) return;
  let stamped = top;
  const sentHost = via.sentBy.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  if (sentHost !== from.address && !('received' in via.params)) stamped += `;received=${from.address}`;
  if ('rport' in via.params && via.params.rport === null) stamped = stamped.replace(/;\s*rport(?=;|$)/i, `;rport=${from.port}`);
  values[0] = stamped;
  request.headers[index] = { name: 'Via', value: values.join(', ') };
}

/**
 * Where the responses to a request go (RFC 3261 §18.2.2, RFC 3581 §4): over TCP the
 * connection it came on; over UDP the source address, and the source port when the sender
 * asked for rport, else the port its Via names.
 */
export function responseDestination(request: SipRequest, from: SipPeer): SipPeer {
  const top = getHeaderValues(request, 'Via')[0];
  const via = top ? parseVia(top) : undefined;
  const sentByPort = via ? Number(/:(\d+)$/.exec(via.sentBy)?.[1] ?? 5060) : 5060;
  // Over TCP the connection it came on; should that close, a new one to the port its Via names (§18.2.2).
  if (from.transport === 'tcp') return { ...from, port: sentByPort };
  if (!via || 'rport' in via.params) return from;
  return { ...from, port: sentByPort };
}
