/**
 * What the edge needs to know of a browser's SDP offer before it spends anything on it: is
 * there a WebRTC audio stream (DTLS-SRTP, ICE credentials) in a codec we can decode, and which.
 */
import type { CodecName } from './codecs.js';

export interface AudioOffer {
  codec: CodecName;
  /** ICE credentials and DTLS fingerprint: what an ICE restart or a new peer would change. */
  transportKey: string;
}

export type OfferCheck = AudioOffer | { reject: string };

interface Section {
  media: string;
  port: number;
  protocol: string;
  formats: string[];
  attributes: string[];
}

function sections(sdp: string): { session: string[]; media: Section[] } {
  const session: string[] = [];
  const media: Section[] = [];
  for (const raw of sdp.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith('m=')) {
      const [kind, port, protocol, ...formats] = line.slice(2).split(/\s+/);
      media.push({ media: kind ?? '', port: Number.parseInt(port ?? '', 10), protocol: protocol ?? '', formats, attributes: [] });
    } else if (line.startsWith('a=')) {
      (media.length ? media[media.length - 1].attributes : session).push(line.slice(2));
    }
  }
  return { session, media };
}

const attribute = (lines: string[], name: string): string | undefined =>
  lines.find((a) => a.startsWith(`${name}:`))?.slice(name.length + 1).trim();

/** Picks the codec of a WebRTC audio offer: Opus if offered, else PCMU; or why the offer is unusable. */
export function checkAudioOffer(sdp: string): OfferCheck {
  if (!/^v=0/m.test(sdp)) return { reject: 'no SDP offer' };
  const { session, media } = sections(sdp);
  const audio = media.find((m) => m.media === 'audio' && m.port > 0 && !m.attributes.includes('inactive'));
  if (!audio) return { reject: 'no active audio stream' };
  if (!/^UDP\/TLS\/RTP\/SAVPF?$/i.test(audio.protocol)) return { reject: `audio transport ${audio.protocol} is not DTLS-SRTP` };
  const ufrag = attribute(audio.attributes, 'ice-ufrag') ?? attribute(session, 'ice-ufrag');
  const pwd = attribute(audio.attributes, 'ice-pwd') ?? attribute(session, 'ice-pwd');
  const fingerprint = attribute(audio.attributes, 'fingerprint') ?? attribute(session, 'fingerprint');
  if (!ufrag || !pwd || !fingerprint) return { reject: 'no ICE credentials or DTLS fingerprint' };

  const names = new Map<string, string>();
  for (const a of audio.attributes) {
    const m = /^rtpmap:(\d+)\s+([^/\s]+)\/(\d+)/.exec(a);
    if (m) names.set(m[1], `${m[2].toLowerCase()}/${m[3]}`);
  }
  const offered = audio.formats.map((pt) => names.get(pt) ?? (pt === '0' ? 'pcmu/8000' : ''));
  const codec: CodecName | undefined = offered.includes('opus/48000') ? 'opus' : offered.includes('pcmu/8000') ? 'PCMU' : undefined;
  if (!codec) return { reject: 'no Opus or PCMU audio offered' };
  return { codec, transportKey: `${ufrag}:${pwd}:${fingerprint.toLowerCase()}` };
}
