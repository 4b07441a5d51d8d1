/**
 * Keypad digits as RTP telephone events (RFC 4733 §2.3): each event is a series of packets
 * sharing one RTP timestamp (the key's press), its duration growing, the last ones with the end
 * bit set and sent three times, since nothing retransmits them. A digit is one event, however
 * many packets carry it.
 */

/** Event codes 0-15 (RFC 4733 §3.2): the digits, *, #, and A-D. */
const EVENT_KEYS = '0123456789*#ABCD';

export const TELEPHONE_EVENT_BYTES = 4;

export interface TelephoneEvent {
  /** The key: 0-9, *, #, A-D. */
  digit: string;
  end: boolean;
  /** Volume as -dBm0 (0-63). */
  volume: number;
  /** Duration so far, in RTP clock ticks. */
  duration: number;
}

/** The event a payload carries, or undefined when it is not a keypad event (malformed, or a tone such as flash). */
export function parseTelephoneEvent(payload: Uint8Array): TelephoneEvent | undefined {
  if (payload.length < TELEPHONE_EVENT_BYTES) return undefined;
  const digit = EVENT_KEYS[payload[0]];
  if (digit === undefined) return undefined;
  return { digit, end: (payload[1] & 0x80) !== 0, volume: payload[1] & 0x3f, duration: (payload[2] << 8) | payload[3] };
}

export function buildTelephoneEvent(event: TelephoneEvent): Uint8Array {
  const code = EVENT_KEYS.indexOf(event.digit.toUpperCase());
  if (code < 0 || event.digit.length !== 1) throw new RangeError(`not a keypad digit: ${JSON.stringify(event.digit)}`);
  return Uint8Array.of(code, (event.end ? 0x80 : 0) | (event.volume & 0x3f), (event.duration >> 8) & 0xff, event.duration & 0xff);
}

/** Whether `digit` is one a telephone event can carry. */
export function isKeypadDigit(digit: string): boolean {
  return digit.length === 1 && EVENT_KEYS.includes(digit.toUpperCase());
}

/**
 * The key a SIP INFO carries, for far ends that send digits in signalling instead of RTP:
 * `application/dtmf-relay` (a `Signal=5` line, the common form) or `application/dtmf` (the
 * key alone). Anything else, or a signal that is not a keypad key, is no digit.
 */
export function digitFromSipInfo(contentType: string, body: string): string | undefined {
  const type = contentType.split(';')[0].trim().toLowerCase();
  let signal: string | undefined;
  if (type === 'application/dtmf-relay') signal = /^\s*signal\s*=\s*(\S+)\s*$/im.exec(body)?.[1];
  else if (type === 'application/dtmf') signal = body.trim();
  if (signal === undefined) return undefined;
  // Some senders write the event code (10 = *, 11 = #) instead of the key.
  const key = signal === '10' ? '*' : signal === '11' ? '#' : signal.toUpperCase();
  return isKeypadDigit(key) ? key : undefined;
}

/** Events remembered to tell a repeated or late packet of an old event from a new one. */
const REMEMBERED_EVENTS = 16;

/**
 * Turns a stream's telephone-event packets into digits: one per event (told apart by their RTP
 * timestamp), reported at its first packet so the engine hears the key at once; the event's
 * later packets, its end packets and their redundant copies are not digits again.
 */
export class TelephoneEventReceiver {
  private readonly seen: string[] = [];

  /** The digit this packet starts, if it starts one. */
  receive(ssrc: number, timestamp: number, payload: Uint8Array): string | undefined {
    const event = parseTelephoneEvent(payload);
    if (!event) return undefined;
    const key = `${ssrc}:${timestamp}`;
    if (this.seen.includes(key)) return undefined;
    this.seen.push(key);
    if (this.seen.length > REMEMBERED_EVENTS) this.seen.shift();
    return event.digit;
  }
}

/**
 * The payloads that send one key press of `durationMs`: one per 20 ms with the duration so far,
 * then the end packet three times (RFC 4733 §2.5.1.4). All go with the same RTP timestamp.
 */
export function telephoneEventPayloads(digit: string, options: { durationMs?: number; clockRate?: number; volume?: number } = {}): Uint8Array[] {
  const clockRate = options.clockRate ?? 8000;
  const volume = options.volume ?? 10;
  const step = (clockRate * 20) / 1000;
  const total = Math.max(step, Math.round(((options.durationMs ?? 100) * clockRate) / 1000));
  const payloads: Uint8Array[] = [];
  for (let duration = step; duration < total; duration += step) payloads.push(buildTelephoneEvent({ digit, end: false, volume, duration }));
  for (let i = 0; i < 3; i++) payloads.push(buildTelephoneEvent({ digit, end: true, volume, duration: total }));
  return payloads;
}
