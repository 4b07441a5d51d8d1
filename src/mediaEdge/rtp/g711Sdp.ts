/**
 * SDP offer/answer (RFC 3264) for a phone call's media: plain RTP (RTP/AVP) with G.711 μ-law
 * (PCMU, payload type 0) or A-law (PCMA, 8) at 20 ms, and RFC 4733 telephone-event (a dynamic
 * payload type, 101 in our offers) for keypad digits. Nothing else is offered or accepted: a
 * trunk or PBX that offers no G.711 is answered `488 Not Acceptable Here` by the SIP side.
 *
 * Interface shared with the SIP side (docs/telephony.md): g711Offer, g711Answer, parseG711Answer.
 */
import { isIP } from 'node:net';
import type { RemoteMedia } from './rtpSession.js';

export type { RemoteMedia } from './rtpSession.js';

export interface LocalMedia {
  /** The address the far end sends to (SIP_PUBLIC_ADDRESS). */
  address: string;
  /** The session's RTP port. */
  port: number;
  /** The SDP session id (o= line); any whole number, the same for the call. */
  sessionId: string | number;
}

/** The telephone-event payload type of our offers. */
export const OFFER_TELEPHONE_EVENT_PT = 101;

const PCMU = 0;
const PCMA = 8;

interface MediaSection {
  kind: string;
  port: number;
  protocol: string;
  formats: string[];
  lines: string[];
}

interface ParsedSdp {
  sessionLines: string[];
  media: MediaSection[];
}

function parse(sdp: string): ParsedSdp | undefined {
  if (typeof sdp !== 'string' || !/^v=0\s*$/m.test(sdp)) return undefined;
  const sessionLines: string[] = [];
  const media: MediaSection[] = [];
  for (const raw of sdp.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('m=')) {
      const [kind = '', port = '', protocol = '', ...formats] = line.slice(2).split(/\s+/);
      media.push({ kind, port: /^\d{1,5}$/.test(port) ? Number(port) : -1, protocol, formats, lines: [] });
    } else {
      (media.length ? media[media.length - 1].lines : sessionLines).push(line);
    }
  }
  return { sessionLines, media };
}

const valueOf = (lines: string[], prefix: string) => lines.find((l) => l.startsWith(prefix))?.slice(prefix.length).trim();

function connectionAddress(lines: string[]): string | undefined {
  const c = valueOf(lines, 'c=');
  const m = c ? /^IN\s+IP[46]\s+([^\s/]+)/.exec(c) : null;
  return m && isIP(m[1]) ? m[1] : undefined;
}

/** What the media section offers: G.711 in the sender's order of preference, and telephone-event's payload type. */
function g711Of(section: MediaSection): { audio: (0 | 8)[]; telephoneEvent?: number } {
  const names = new Map<string, string>();
  for (const line of section.lines) {
    const m = /^a=rtpmap:(\d+)\s+([^/\s]+)\/(\d+)/.exec(line);
    if (m) names.set(m[1], `${m[2].toLowerCase()}/${m[3]}`);
  }
  const audio: (0 | 8)[] = [];
  let telephoneEvent: number | undefined;
  for (const format of section.formats) {
    const name = names.get(format) ?? (format === '0' ? 'pcmu/8000' : format === '8' ? 'pcma/8000' : '');
    if (format === '0' && name === 'pcmu/8000') audio.push(PCMU);
    else if (format === '8' && name === 'pcma/8000') audio.push(PCMA);
    else if (name === 'telephone-event/8000' && telephoneEvent === undefined) telephoneEvent = Number(format);
  }
  return { audio, telephoneEvent };
}

/** The far end's audio: the first active RTP/AVP audio section with G.711, with its address and choices. */
function remoteAudio(sdp: string): { index: number; section: MediaSection; address: string; audio: (0 | 8)[]; telephoneEvent?: number } | { error: string } {
  const parsed = parse(sdp);
  if (!parsed) return { error: 'not an SDP body' };
  const audioSections = parsed.media.map((section, index) => ({ section, index })).filter(({ section }) => section.kind === 'audio');
  if (audioSections.length === 0) return { error: 'no audio stream' };
  const plain = audioSections.filter(({ section }) => /^RTP\/AVPF?$/i.test(section.protocol) && section.port > 0 && section.port <= 65_535);
  if (plain.length === 0) return { error: `no plain RTP audio stream (offered ${audioSections.map(({ section }) => section.protocol).join(', ')})` };
  for (const { section, index } of plain) {
    const { audio, telephoneEvent } = g711Of(section);
    if (audio.length === 0) continue;
    const address = connectionAddress(section.lines) ?? connectionAddress(parsed.sessionLines);
    if (!address) return { error: 'no connection address (c=) for the audio stream' };
    return { index, section, address, audio, telephoneEvent };
  }
  return { error: 'no G.711 (PCMU or PCMA) audio offered' };
}

function header(local: LocalMedia): string[] {
  const ipVersion = local.address.includes(':') ? 'IP6' : 'IP4';
  return ['v=0', `o=- ${local.sessionId} ${local.sessionId} IN ${ipVersion} ${local.address}`, 's=-', `c=IN ${ipVersion} ${local.address}`, 't=0 0'];
}

function audioLines(port: number, audio: (0 | 8)[], telephoneEvent: number | undefined, direction: string): string[] {
  const formats = [...audio, ...(telephoneEvent !== undefined ? [telephoneEvent] : [])];
  return [
    `m=audio ${port} RTP/AVP ${formats.join(' ')}`,
    ...audio.map((pt) => (pt === PCMU ? 'a=rtpmap:0 PCMU/8000' : 'a=rtpmap:8 PCMA/8000')),
    ...(telephoneEvent !== undefined ? [`a=rtpmap:${telephoneEvent} telephone-event/8000`, `a=fmtp:${telephoneEvent} 0-15`] : []),
    'a=ptime:20',
    `a=${direction}`,
  ];
}

const sdpText = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

/** Our offer: PCMU, PCMA and telephone-event at 20 ms. */
export function g711Offer(local: LocalMedia): string {
  return sdpText([...header(local), ...audioLines(local.port, [PCMU, PCMA], OFFER_TELEPHONE_EVENT_PT, 'sendrecv')]);
}

const ANSWER_DIRECTION: Record<string, string> = { sendrecv: 'sendrecv', sendonly: 'recvonly', recvonly: 'sendonly', inactive: 'inactive' };

/**
 * Our answer to the far end's offer: the first G.711 law it lists, and telephone-event when it
 * offers it (with its payload type); other streams are declined with port 0, as RFC 3264 wants.
 * `{ error }` when nothing in the offer is usable (the SIP side answers 488).
 */
export function g711Answer(offer: string, local: LocalMedia): { sdp: string; remote: RemoteMedia } | { error: string } {
  const found = remoteAudio(offer);
  if ('error' in found) return found;
  const parsed = parse(offer)!;
  const payloadType = found.audio[0];
  const directionLine = found.section.lines.find((l) => /^a=(sendrecv|sendonly|recvonly|inactive)$/.test(l));
  const direction = ANSWER_DIRECTION[directionLine?.slice(2) ?? 'sendrecv'];
  const lines = header(local);
  parsed.media.forEach((section, index) => {
    if (index === found.index) lines.push(...audioLines(local.port, [payloadType], found.telephoneEvent, direction));
    else lines.push(`m=${section.kind} 0 ${section.protocol} ${section.formats[0] ?? '0'}`);
  });
  return {
    sdp: sdpText(lines),
    remote: { address: found.address, port: found.section.port, payloadType, ...(found.telephoneEvent !== undefined ? { telephoneEventPayloadType: found.telephoneEvent } : {}) },
  };
}

/** The far end's media from its answer to our offer. */
export function parseG711Answer(sdp: string): RemoteMedia | { error: string } {
  const found = remoteAudio(sdp);
  if ('error' in found) return found;
  return {
    address: found.address,
    port: found.section.port,
    payloadType: found.audio[0],
    ...(found.telephoneEvent !== undefined ? { telephoneEventPayloadType: found.telephoneEvent } : {}),
  };
}
