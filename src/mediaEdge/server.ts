/**
 * The media edge: the WebSocket server browsers reach at MEDIA_EDGE_WS_URL (SIP over
 * WebSocket, subprotocol `sip`), one SIP user agent per socket, WebRTC audio per call.
 * Whoever runs the conversation gets each established call through `onCall` (voiceEdge.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { ConfigError } from '../config/index.js';
import type { Logger } from '../logging/logger.js';
import { isRejection, ServiceCallAdmission, type AdmittedCall, type CallAdmission } from './admission.js';
import { callerAddress, CallerLimits, DEFAULT_CALLER_LIMITS, type CallerLimitsOptions } from './callerLimits.js';
import type { ChannelCloseReason } from './media/channel.js';
import { DEFAULT_RECORDING_RETRY } from './recording/recordingUpload.js';
import type { DigestCredentials } from './sip/digest.js';
import { DEFAULT_SIP_MESSAGE_LIMITS, type SipMessageLimits } from './sip/message.js';
import { SipUserAgentServer, type EstablishedCall, type MediaAnswerer } from './sip/userAgentServer.js';
import { parseTrunkSettings } from './sip/trunk/trunkSettings.js';
import { DEFAULT_DIGIT_TIMEOUT_MS } from './conversation/digitEntry.js';
import { DEFAULT_RTP_INACTIVITY_MS } from './rtp/rtpSession.js';
import { FrameClock } from './webrtc/frameClock.js';
import { admissionRefusals, refusalReason, socketServers } from '../metrics/edgeMetrics.js';
import { WebRtcEndpoint, type WebRtcOptions } from './webrtc/peer.js';
import { checkAudioOffer } from './webrtc/sdp.js';

export type { EstablishedCall } from './sip/userAgentServer.js';

export interface MediaEdgeOptions {
  /** The URL browsers are given (MEDIA_EDGE_WS_URL): its path is served, its host and port are the defaults to listen on. */
  wsUrl: string;
  /** Listen address and port when they differ from the URL's (behind a proxy; port 0 = any free port). */
  listenHost?: string;
  listenPort?: number;
  admission: CallAdmission;
  /** Receives every established call; the call's channel carries its audio until it closes. */
  onCall?: (call: EstablishedCall) => void;
  /**
   * Every admitted call's end, established or not (an admitted call whose media never came up
   * is one the service will otherwise only time out).
   */
  onCallEnded?: (callId: string, reason: ChannelCloseReason, established: boolean) => void;
  logger: Logger;
  rtc?: WebRtcOptions;
  /** The media of each call (default: WebRTC with werift); tests of the SIP layer inject a fake. */
  media?: MediaAnswerer;
  /** Answer INVITEs only after a Digest challenge with these credentials (optional; the token decides admission). */
  digest?: DigestCredentials;
  /** Largest WebSocket message accepted, bytes (default 64 KiB; larger ones close the socket with 1009). */
  maxMessageBytes?: number;
  /** Header and Via caps of one SIP message (defaults: DEFAULT_SIP_MESSAGE_LIMITS); past them a request is answered 513. */
  messageLimits?: Partial<SipMessageLimits>;
  /**
   * Bytes one socket may have waiting to be sent (default 128 KiB): a client that does not read
   * its answers has its socket dropped rather than the edge holding them.
   */
  sendBudgetBytes?: number;
  /** Sockets per address and in total, admissions per address (defaults: DEFAULT_CALLER_LIMITS). */
  callerLimits?: Partial<CallerLimitsOptions>;
  /** Count callers by the last X-Forwarded-For address (only behind a proxy that sets it; default false). */
  trustProxy?: boolean;
  /** Calls one socket may carry at once (default 4). */
  maxCallsPerSocket?: number;
  /** Refused INVITEs after which a socket is closed with 1008 (default 10). */
  maxRefusalsPerSocket?: number;
  /** Ping interval; a socket that misses a pong is closed and its calls end with media_lost (default 30 s). */
  heartbeatMs?: number;
  /** SIP T1 (tests shorten it). */
  sipT1Ms?: number;
}

export interface MediaEdge {
  /** ws://host:port/path actually listened on (the port resolved when 0 was asked). */
  readonly url: string;
  readonly port: number;
  /** Established calls by call id. */
  readonly calls: ReadonlyMap<string, EstablishedCall>;
  /** Open WebSocket connections. */
  readonly connections: number;
  /** Sockets dropped because their client left more than the send budget unread. */
  readonly sendBudgetClosures: number;
  /** WebSocket handshakes refused 503 at a socket cap (per address or in total). */
  readonly refusedConnections: number;
  /** Hangs up every call (BYE), closes every socket and the server. */
  close(): Promise<void>;
}

/** Starts the media edge; resolves once it listens. */
export async function startMediaEdge(options: MediaEdgeOptions): Promise<MediaEdge> {
  const url = new URL(options.wsUrl);
  const secure = url.protocol === 'wss:';
  const path = url.pathname || '/';
  const host = options.listenHost ?? url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = options.listenPort ?? (url.port ? Number(url.port) : secure ? 443 : 80);
  const logger = options.logger;

  const sendBudget = options.sendBudgetBytes ?? DEFAULT_SEND_BUDGET_BYTES;
  const messageLimits: SipMessageLimits = { ...DEFAULT_SIP_MESSAGE_LIMITS, ...options.messageLimits };
  const limits = new CallerLimits({ ...DEFAULT_CALLER_LIMITS, ...options.callerLimits });
  /** The caller address of each accepted handshake, for its connection. */
  const addresses = new WeakMap<IncomingMessage, string>();
  let sendBudgetClosures = 0;
  let refusedConnections = 0;

  const media = options.media ?? webRtcAnswerer(new WebRtcEndpoint(new FrameClock((err) => logger.error({ err }, 'media tick failed')), options.rtc));

  // One live media session per call id on this edge; across edges the service's claim of the
  // call decides (admission.ts), and a claim whose media never came up is handed back at its end.
  const reserved = new Map<string, AdmittedCall>();
  const admission: CallAdmission = {
    async admit(invite) {
      const result = await options.admission.admit(invite);
      if (isRejection(result)) return result;
      if (reserved.has(result.callId)) {
        await options.admission.ended?.(result, false);
        return { reject: 409, reason: 'Call already connected' };
      }
      reserved.set(result.callId, result);
      return result;
    },
  };
  const calls = new Map<string, EstablishedCall>();
  const agents = new Map<WebSocket, SipUserAgentServer>();
  /** Whether each socket answered the last ping. */
  const answeredPing = new Map<WebSocket, boolean>();

  const server = new WebSocketServer({
    host,
    port,
    path,
    maxPayload: options.maxMessageBytes ?? 64 * 1024,
    perMessageDeflate: false,
    // RFC 7118: only the `sip` subprotocol.
    handleProtocols: (protocols) => (protocols.has('sip') ? 'sip' : false),
    // Answered synchronously, so no other handshake is counted between the check and the slot taken.
    verifyClient: (info: { req: IncomingMessage }, done: (ok: boolean, status?: number, message?: string, headers?: Record<string, string>) => void) => {
      if (!/(^|,)\s*sip\s*(,|$)/i.test(String(info.req.headers['sec-websocket-protocol'] ?? ''))) return done(false, 401);
      const address = callerAddress(info.req, options.trustProxy);
      const slot = limits.openSocket(address);
      if (typeof slot !== 'function') {
        refusedConnections++;
        admissionRefusals.inc({ reason: 'socket_limit' });
        logger.warn({ address, reason: slot.reason, sockets: limits.openSockets }, 'WebSocket refused: 503');
        return done(false, 503, slot.reason, { 'Retry-After': String(slot.retryAfterSeconds) });
      }
      if (info.req.socket.destroyed) slot();
      else info.req.socket.once('close', slot);
      addresses.set(info.req, address);
      done(true);
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.on('error', (err) => logger.error({ err }, 'media edge server error'));

  let connectionSeq = 0;
  server.on('connection', (socket, req) => {
    const remote = `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? '?'}`;
    const log = logger.child({ connection: ++connectionSeq, remote });
    const address = addresses.get(req) ?? callerAddress(req, options.trustProxy);
    // INVITEs reach admission at the address's rate, and every refusal counts against the address, whichever socket it came on.
    const callerAdmission: CallAdmission = {
      async admit(invite) {
        const refusal = await limits.beforeAdmission(address);
        if (refusal) {
          admissionRefusals.inc({ reason: 'caller_limit' });
          log.warn({ address, reason: refusal.reason }, 'INVITE refused before admission: 503');
          return { reject: 503, reason: refusal.reason, retryAfterSeconds: refusal.retryAfterSeconds };
        }
        let result;
        try {
          result = await admission.admit(invite);
        } catch (err) {
          await limits.admissionFailed(address);
          throw err;
        }
        if (isRejection(result)) {
          admissionRefusals.inc({ reason: refusalReason(result.reject) });
          await limits.admissionFailed(address);
        }
        return result;
      },
    };
    const agent = new SipUserAgentServer({
      transport: {
        send: (text) => {
          if (socket.readyState !== socket.OPEN) return;
          const waiting = socket.bufferedAmount;
          if (waiting > 0 && waiting + Buffer.byteLength(text) > sendBudget) {
            // The client does not read: drop the socket (a close frame would wait behind the rest).
            sendBudgetClosures++;
            log.warn({ address, waiting, sendBudget }, 'WebSocket over its send budget: dropped');
            socket.terminate();
            return;
          }
          socket.send(text);
        },
        close: (code, reason) => socket.close(code, reason),
      },
      admission: callerAdmission,
      media,
      messageLimits,
      logger: log,
      localHost: url.host,
      secure,
      maxDialogs: options.maxCallsPerSocket,
      maxRefusals: options.maxRefusalsPerSocket,
      digest: options.digest,
      t1Ms: options.sipT1Ms,
      onCall: (call) => {
        calls.set(call.callId, call);
        if (!options.onCall) {
          log.info({ callId: call.callId }, 'call established (no conversation attached)');
          return;
        }
        options.onCall(call);
      },
      onCallEnded: (callId: string, reason: ChannelCloseReason, established: boolean) => {
        const admitted = reserved.get(callId);
        reserved.delete(callId);
        if (admitted) void options.admission.ended?.(admitted, established);
        calls.delete(callId);
        options.onCallEnded?.(callId, reason, established);
      },
    });
    agents.set(socket, agent);
    log.debug('WebSocket connected');
    socket.on('message', (data, isBinary) => {
      try {
        const text = Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
        if (isBinary && !text) return;
        agent.handleMessage(text);
      } catch (err) {
        log.error({ err }, 'WebSocket message handling failed');
      }
    });
    answeredPing.set(socket, true);
    socket.on('pong', () => answeredPing.set(socket, true));
    socket.on('error', (err) => log.warn({ err }, 'WebSocket error'));
    socket.on('close', (code) => {
      agents.delete(socket);
      answeredPing.delete(socket);
      log.debug({ code }, 'WebSocket closed');
      agent.handleTransportClosed();
    });
  });

  const heartbeat = setInterval(() => {
    for (const socket of server.clients) {
      if (answeredPing.get(socket) === false) {
        logger.warn('WebSocket missed a heartbeat: closing');
        socket.terminate();
        continue;
      }
      answeredPing.set(socket, false);
      socket.ping();
    }
  }, options.heartbeatMs ?? 30_000);
  heartbeat.unref();

  const actualPort = (server.address() as AddressInfo).port;
  const actualUrl = `${secure ? 'wss' : 'ws'}://${host.includes(':') ? `[${host}]` : host}:${actualPort}${path}`;
  logger.info({ url: actualUrl }, 'media edge listening');

  let closing: Promise<void> | undefined;
  const edge: MediaEdge = {
    url: actualUrl,
    port: actualPort,
    calls,
    get connections() {
      return server.clients.size;
    },
    get sendBudgetClosures() {
      return sendBudgetClosures;
    },
    get refusedConnections() {
      return refusedConnections;
    },
    close() {
      closing ??= (async () => {
        clearInterval(heartbeat);
        await Promise.allSettled([...calls.values()].map((call) => call.hangUp()));
        for (const socket of server.clients) socket.close(1001, 'media edge shutting down');
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => {
            for (const socket of server.clients) socket.terminate();
          }, 1000);
          server.close(() => {
            clearTimeout(force);
            resolve();
          });
        });
        for (const agent of agents.values()) agent.handleTransportClosed();
      })();
      return closing;
    },
  };
  socketServers.add(edge);
  return edge;
}

const DEFAULT_SEND_BUDGET_BYTES = 128 * 1024;

/** Browsers' offers answered with WebRTC: Opus when offered, else PCMU, else 488. */
export function webRtcAnswerer(endpoint: WebRtcEndpoint): MediaAnswerer {
  return {
    check: (sdp) => checkAudioOffer(sdp),
    answer: (sdp, log) => {
      const check = checkAudioOffer(sdp);
      if ('reject' in check) return Promise.reject(new Error(check.reject));
      return endpoint.answer(sdp, check.codec, log);
    },
  };
}

const port = z.coerce.number({ message: 'must be a port number' }).int('must be a whole number').min(0).max(65535);
const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const positiveInt = z.coerce.number({ message: 'must be a number' }).int('must be a whole number').positive('must be positive');

/** The media edge's environment (names shared with the service where they mean the same). */
export const mediaEdgeConfigSchema = z.object({
  MEDIA_EDGE_WS_URL: z
    .string()
    .refine((v) => /^wss?:\/\/[^/]+/.test(v) && URL.canParse(v), 'must be a ws:// or wss:// URL')
    .default('ws://127.0.0.1:5070/ws'),
  MEDIA_EDGE_LISTEN_HOST: z.string().min(1).optional(),
  MEDIA_EDGE_LISTEN_PORT: port.optional(),
  MEDIA_EDGE_SECRET: z.string().min(16, 'must be at least 16 characters'),
  API_URL: z.string().refine((v) => /^https?:\/\//.test(v) && URL.canParse(v), 'must be an http(s) URL').default('http://127.0.0.1:3000'),
  MEDIA_EDGE_SIP_DOMAIN: z.string().min(1).default('media-edge.localhost'),
  MEDIA_EDGE_SIP_USERNAME: z.string().min(1).default('web-caller'),
  MEDIA_EDGE_SIP_PASSWORD: z.string().min(1).default('web-caller'),
  MEDIA_EDGE_SIP_DIGEST: booleanFlag.default(false),
  /** Comma-separated addresses advertised as ICE host candidates first (the public address in production). */
  MEDIA_EDGE_RTC_HOST: z
    .string()
    .transform((v) => v.split(',').map((a) => a.trim()).filter(Boolean))
    .optional(),
  MEDIA_EDGE_RTC_PORT_MIN: port.optional(),
  MEDIA_EDGE_RTC_PORT_MAX: port.optional(),
  MEDIA_EDGE_MAX_CALLS_PER_SOCKET: z.coerce.number().int().positive().default(4),
  // Limits on what strangers can make the edge hold (docs/media-edge.md, "Limits").
  MEDIA_EDGE_MAX_SOCKETS: positiveInt.default(DEFAULT_CALLER_LIMITS.maxSockets),
  MEDIA_EDGE_MAX_SOCKETS_PER_ADDRESS: positiveInt.default(DEFAULT_CALLER_LIMITS.maxSocketsPerAddress),
  MEDIA_EDGE_ADMISSIONS_PER_ADDRESS_PER_MINUTE: positiveInt.default(DEFAULT_CALLER_LIMITS.admissionsPerMinute),
  MEDIA_EDGE_MAX_FAILED_ADMISSIONS_PER_ADDRESS: positiveInt.default(DEFAULT_CALLER_LIMITS.maxFailedAdmissions),
  MEDIA_EDGE_FAILED_ADMISSIONS_WINDOW_SECONDS: positiveInt.default(DEFAULT_CALLER_LIMITS.failedAdmissionsWindowSeconds),
  MEDIA_EDGE_SEND_BUDGET_BYTES: positiveInt.default(DEFAULT_SEND_BUDGET_BYTES),
  MEDIA_EDGE_SIP_MAX_HEADERS: positiveInt.default(DEFAULT_SIP_MESSAGE_LIMITS.maxHeaders),
  MEDIA_EDGE_SIP_MAX_VIA: positiveInt.default(DEFAULT_SIP_MESSAGE_LIMITS.maxViaEntries),
  MEDIA_EDGE_TRUST_PROXY: booleanFlag.default(false),
  // A call's recording while the store fails: attempts, then the spool is discarded (recording/recordingUpload.ts).
  MEDIA_EDGE_RECORDING_UPLOAD_ATTEMPTS: positiveInt.max(100, 'must be at most 100').default(DEFAULT_RECORDING_RETRY.attempts),
  MEDIA_EDGE_RECORDING_RETRY_FIRST_MS: positiveInt.default(DEFAULT_RECORDING_RETRY.firstDelayMs),
  MEDIA_EDGE_RECORDING_RETRY_MAX_MS: positiveInt.max(3_600_000, 'must be at most 3600000 (an hour)').default(DEFAULT_RECORDING_RETRY.maxDelayMs),
  // Phone calls' media and keypad (docs/telephony.md, "Media: RTP and G.711").
  RTP_INACTIVITY_SECONDS: positiveInt.max(3600, 'must be at most 3600 (an hour)').default(DEFAULT_RTP_INACTIVITY_MS / 1000),
  DTMF_DIGIT_TIMEOUT_MS: positiveInt.min(200, 'must be at least 200').max(30_000, 'must be at most 30000').default(DEFAULT_DIGIT_TIMEOUT_MS),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type MediaEdgeConfig = z.infer<typeof mediaEdgeConfigSchema>;

export function loadMediaEdgeConfig(env: NodeJS.ProcessEnv = process.env): MediaEdgeConfig {
  const raw = Object.fromEntries(Object.keys(mediaEdgeConfigSchema.shape).map((k) => [k, env[k] === '' ? undefined : env[k]]));
  const parsed = mediaEdgeConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(String(issue.path[0] ?? 'environment'), issue.message.replace(/^Invalid input: /, ''));
  }
  const config = parsed.data;
  // The SIP trunk's settings (SIP_*, RTP_PORT_RANGE) fail here, before anything starts; voiceEdge.ts reads them again.
  parseTrunkSettings(env);
  if ((config.MEDIA_EDGE_RTC_PORT_MIN === undefined) !== (config.MEDIA_EDGE_RTC_PORT_MAX === undefined)) {
    throw new ConfigError('MEDIA_EDGE_RTC_PORT_MAX', 'must be set together with MEDIA_EDGE_RTC_PORT_MIN');
  }
  if (config.MEDIA_EDGE_RECORDING_RETRY_MAX_MS < config.MEDIA_EDGE_RECORDING_RETRY_FIRST_MS) {
    throw new ConfigError('MEDIA_EDGE_RECORDING_RETRY_MAX_MS', 'must not be below MEDIA_EDGE_RECORDING_RETRY_FIRST_MS');
  }
  if (config.MEDIA_EDGE_RTC_PORT_MIN !== undefined && config.MEDIA_EDGE_RTC_PORT_MIN > config.MEDIA_EDGE_RTC_PORT_MAX!) {
    throw new ConfigError('MEDIA_EDGE_RTC_PORT_MAX', 'must not be below MEDIA_EDGE_RTC_PORT_MIN');
  }
  return config;
}

/** The edge as configured by the environment, with admission through the service. */
export function startConfiguredMediaEdge(config: MediaEdgeConfig, logger: Logger, onCall?: (call: EstablishedCall) => void): Promise<MediaEdge> {
  return startMediaEdge({
    wsUrl: config.MEDIA_EDGE_WS_URL,
    listenHost: config.MEDIA_EDGE_LISTEN_HOST,
    listenPort: config.MEDIA_EDGE_LISTEN_PORT,
    admission: new ServiceCallAdmission({ apiUrl: config.API_URL, secret: config.MEDIA_EDGE_SECRET, logger }),
    onCall,
    logger,
    maxCallsPerSocket: config.MEDIA_EDGE_MAX_CALLS_PER_SOCKET,
    sendBudgetBytes: config.MEDIA_EDGE_SEND_BUDGET_BYTES,
    messageLimits: { maxHeaders: config.MEDIA_EDGE_SIP_MAX_HEADERS, maxViaEntries: config.MEDIA_EDGE_SIP_MAX_VIA },
    callerLimits: {
      maxSockets: config.MEDIA_EDGE_MAX_SOCKETS,
      maxSocketsPerAddress: config.MEDIA_EDGE_MAX_SOCKETS_PER_ADDRESS,
      admissionsPerMinute: config.MEDIA_EDGE_ADMISSIONS_PER_ADDRESS_PER_MINUTE,
      maxFailedAdmissions: config.MEDIA_EDGE_MAX_FAILED_ADMISSIONS_PER_ADDRESS,
      failedAdmissionsWindowSeconds: config.MEDIA_EDGE_FAILED_ADMISSIONS_WINDOW_SECONDS,
    },
    trustProxy: config.MEDIA_EDGE_TRUST_PROXY,
    rtc: {
      advertisedAddresses: config.MEDIA_EDGE_RTC_HOST,
      ...(config.MEDIA_EDGE_RTC_PORT_MIN !== undefined ? { portRange: [config.MEDIA_EDGE_RTC_PORT_MIN, config.MEDIA_EDGE_RTC_PORT_MAX!] } : {}),
    },
    ...(config.MEDIA_EDGE_SIP_DIGEST
      ? { digest: { username: config.MEDIA_EDGE_SIP_USERNAME, password: config.MEDIA_EDGE_SIP_PASSWORD, realm: config.MEDIA_EDGE_SIP_DOMAIN } }
      : {}),
  });
}
