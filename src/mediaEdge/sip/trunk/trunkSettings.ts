/**
 * The SIP trunk's settings (docs/telephony.md, "Settings"): read once at start-up, each bad
 * value named. Without SIP_TRUNK_URI the edge has no trunk and starts no SIP user agent.
 */
import { BlockList, isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import { z } from 'zod';
import { ConfigError } from '../../../config/index.js';

export type SipTransportName = 'udp' | 'tcp';

export interface HostPort {
  host: string;
  port: number;
}

export interface TrunkSettings {
  /** Where INVITEs go: the trunk's host and port, and the transport it speaks. */
  trunk: HostPort & { uri: string; transport: SipTransportName };
  /** Digest credentials answering the trunk's 401/407 (both or neither). */
  credentials?: { username: string; password: string };
  /** Where the agent listens, on UDP and TCP alike. */
  listen: HostPort;
  /** The address (and port) others reach the agent at: Via, Contact, From's host and SDP c=. */
  publicAddress: HostPort;
  /** RTP ports of the calls (even start, min < max). */
  rtpPortRange: { min: number; max: number };
  /** CIDRs that may send INVITEs; undefined: the addresses SIP_TRUNK_URI's host resolves to at start-up. */
  allowedSources?: string[];
  /**
   * SIP_SOURCE_REQUESTS_PER_SECOND: requests one source address may send over UDP per second,
   * the allowed sources exempt; undefined: DEFAULT_SOURCE_REQUESTS_PER_SECOND.
   */
  sourceRequestsPerSecond?: number;
}

/** Default of SIP_SOURCE_REQUESTS_PER_SECOND: far above what a phone or a monitor sends, far below a flood. */
export const DEFAULT_SOURCE_REQUESTS_PER_SECOND = 20;

const TRUNK_URI = /^sips?:(?:[^@;]+@)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?((?:;[^;]*)*)$/;

/** `sip:host[:port][;transport=udp|tcp]`, a user part allowed and ignored. */
export function parseTrunkUri(uri: string): TrunkSettings['trunk'] | string {
  if (uri.startsWith('sips:')) return 'sips (TLS) is not supported: use sip: with transport=udp or tcp';
  const match = TRUNK_URI.exec(uri.trim());
  if (!match) return 'must be a SIP URI such as sip:sip.carrier.example:5060;transport=udp';
  const host = match[1].replace(/^\[(.*)\]$/, '$1');
  const port = match[2] ? Number(match[2]) : 5060;
  if (port < 1 || port > 65535) return 'has a port outside 1-65535';
  let transport: SipTransportName = 'udp';
  for (const param of match[3].split(';').filter(Boolean)) {
    const [name, value = ''] = param.split('=');
    if (name.toLowerCase() !== 'transport') continue;
    const lower = value.toLowerCase();
    if (lower !== 'udp' && lower !== 'tcp') return `has transport=${value}: only udp and tcp are supported`;
    transport = lower;
  }
  return { uri: uri.trim(), host, port, transport };
}

/** `host:port`, `[v6]:port` or (with a default port) a bare host. */
export function parseHostPort(text: string, defaultPort?: number): HostPort | string {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/.exec(text.trim());
  if (!match) return 'must be host:port';
  const host = match[1] ?? match[2];
  if (!match[3] && defaultPort === undefined) return 'must be host:port (the port is missing)';
  const port = match[3] ? Number(match[3]) : defaultPort!;
  if (port > 65535) return 'has a port above 65535';
  return { host, port };
}

/** `40000-40999`: even start (RTP on even ports, RTCP beside it), min < max. */
export function parsePortRange(text: string): { min: number; max: number } | string {
  const match = /^(\d{1,5})\s*-\s*(\d{1,5})$/.exec(text.trim());
  if (!match) return 'must be min-max, for example 40000-40999';
  const min = Number(match[1]);
  const max = Number(match[2]);
  if (min < 1024 || max > 65535) return 'must lie within 1024-65535';
  if (min % 2 !== 0) return 'must start on an even port';
  if (min >= max) return 'must have min below max';
  return { min, max };
}

/** Whether `cidr` is an address or address/prefix that BlockList takes. */
function validCidr(cidr: string): boolean {
  const [address, prefix, extra] = cidr.split('/');
  const family = isIP(address);
  if (!family || extra !== undefined) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const schema = z.object({
  SIP_TRUNK_URI: optionalText,
  SIP_TRUNK_USERNAME: optionalText,
  SIP_TRUNK_PASSWORD: optionalText,
  SIP_LISTEN: z.string().default('127.0.0.1:5060'),
  SIP_PUBLIC_ADDRESS: optionalText,
  RTP_PORT_RANGE: z.string().default('40000-40999'),
  SIP_TRUNK_ALLOWED_SOURCES: optionalText,
  SIP_SOURCE_REQUESTS_PER_SECOND: optionalText,
});

export const TRUNK_SETTING_NAMES = Object.keys(schema.shape) as (keyof z.infer<typeof schema>)[];

/**
 * The trunk's settings from the environment, or undefined when SIP_TRUNK_URI is not set (no
 * trunk). Throws ConfigError naming the first bad variable. The others are checked even
 * without a trunk, so a typo shows at start-up rather than when a trunk is added.
 */
export function parseTrunkSettings(env: NodeJS.ProcessEnv = process.env): TrunkSettings | undefined {
  const raw = schema.parse(Object.fromEntries(TRUNK_SETTING_NAMES.map((k) => [k, env[k] === '' ? undefined : env[k]])));
  const fail = (name: string, detail: string): never => {
    throw new ConfigError(name, detail);
  };
  const listen = parseHostPort(raw.SIP_LISTEN);
  if (typeof listen === 'string') return fail('SIP_LISTEN', listen);
  if (!isIP(listen.host)) fail('SIP_LISTEN', 'must be an IP address and port, for example 0.0.0.0:5060');
  if (listen.port === 0) fail('SIP_LISTEN', 'must name a port (not 0): the trunk sends to it');
  const publicAddress = raw.SIP_PUBLIC_ADDRESS === undefined ? { host: listen.host === '0.0.0.0' || listen.host === '::' ? '' : listen.host, port: listen.port } : parseHostPort(raw.SIP_PUBLIC_ADDRESS, listen.port);
  if (typeof publicAddress === 'string') return fail('SIP_PUBLIC_ADDRESS', publicAddress);
  const rtpPortRange = parsePortRange(raw.RTP_PORT_RANGE);
  if (typeof rtpPortRange === 'string') return fail('RTP_PORT_RANGE', rtpPortRange);
  let allowedSources: string[] | undefined;
  if (raw.SIP_TRUNK_ALLOWED_SOURCES !== undefined) {
    allowedSources = raw.SIP_TRUNK_ALLOWED_SOURCES.split(',').map((s) => s.trim()).filter(Boolean);
    const bad = allowedSources.find((cidr) => !validCidr(cidr));
    if (bad !== undefined) fail('SIP_TRUNK_ALLOWED_SOURCES', `has ${JSON.stringify(bad)}, which is not an IP address or CIDR (a.b.c.d/n)`);
  }
  let sourceRequestsPerSecond: number | undefined;
  if (raw.SIP_SOURCE_REQUESTS_PER_SECOND !== undefined) {
    sourceRequestsPerSecond = Number(raw.SIP_SOURCE_REQUESTS_PER_SECOND);
    if (!/^\d+$/.test(raw.SIP_SOURCE_REQUESTS_PER_SECOND) || sourceRequestsPerSecond < 1 || sourceRequestsPerSecond > 100_000) {
      fail('SIP_SOURCE_REQUESTS_PER_SECOND', 'must be a whole number from 1 to 100000');
    }
  }
  if ((raw.SIP_TRUNK_USERNAME === undefined) !== (raw.SIP_TRUNK_PASSWORD === undefined)) {
    fail(raw.SIP_TRUNK_USERNAME === undefined ? 'SIP_TRUNK_USERNAME' : 'SIP_TRUNK_PASSWORD', 'must be set together with the other of SIP_TRUNK_USERNAME and SIP_TRUNK_PASSWORD');
  }
  if (raw.SIP_TRUNK_URI === undefined) return undefined;
  const trunk = parseTrunkUri(raw.SIP_TRUNK_URI);
  if (typeof trunk === 'string') return fail('SIP_TRUNK_URI', trunk);
  if (publicAddress.host === '') fail('SIP_PUBLIC_ADDRESS', `must be set when SIP_LISTEN listens on every address (${raw.SIP_LISTEN}): the trunk needs one address to reach`);
  return {
    trunk,
    ...(raw.SIP_TRUNK_USERNAME !== undefined ? { credentials: { username: raw.SIP_TRUNK_USERNAME, password: raw.SIP_TRUNK_PASSWORD! } } : {}),
    listen,
    publicAddress,
    rtpPortRange,
    ...(allowedSources ? { allowedSources } : {}),
    ...(sourceRequestsPerSecond !== undefined ? { sourceRequestsPerSecond } : {}),
  };
}

/**
 * The sources INVITEs may come from: SIP_TRUNK_ALLOWED_SOURCES, or else every address the
 * trunk's host resolves to now (at start-up; a carrier that moves needs a restart or the list).
 */
export async function allowedSourcesOf(settings: TrunkSettings): Promise<{ list: BlockList; described: string[] }> {
  const list = new BlockList();
  let cidrs = settings.allowedSources;
  if (!cidrs) {
    const host = settings.trunk.host;
    try {
      cidrs = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
    } catch (err) {
      throw new ConfigError('SIP_TRUNK_URI', `has a host, ${host}, that does not resolve (${(err as NodeJS.ErrnoException).code ?? String(err)}), so the default SIP_TRUNK_ALLOWED_SOURCES cannot be known: fix the host or set SIP_TRUNK_ALLOWED_SOURCES`);
    }
  }
  for (const cidr of cidrs) {
    const [address, prefix] = cidr.split('/');
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return { list, described: cidrs };
}
