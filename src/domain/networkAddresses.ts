/**
 * Which IP addresses an event webhook may be sent to (docs/event-webhooks.md, "Addresses"):
 * only public unicast ones. Everything in the IANA special-purpose registries that is not
 * globally reachable (loopback, private, shared, link-local, documentation, benchmarking,
 * multicast, reserved) is refused, as are IPv6 addresses outside 2000::/3. IPv6 forms that
 * embed an IPv4 address (mapped ::ffff:a.b.c.d, 6to4 2002::/16) are judged by that address.
 * Pure: parses the text itself.
 */

/** Why an address is not public, or undefined when it is. */
export type NonPublicKind = 'unspecified' | 'loopback' | 'private' | 'shared' | 'link-local' | 'documentation' | 'benchmarking' | 'multicast' | 'reserved';

const V4_RANGES: [string, number, NonPublicKind][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

/** The 32-bit value of a dotted-quad IPv4 address, or undefined. */
export function parseIpv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return undefined;
    value = value * 256 + Number(part);
  }
  return value;
}

/** The eight 16-bit groups of an IPv6 address (zone index dropped), or undefined. */
export function parseIpv6(text: string): number[] | undefined {
  let s = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '').toLowerCase();
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.', lastColon)) {
    const v4 = parseIpv4(s.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [Math.floor(v4 / 65536), v4 % 65536];
    // Two placeholder groups, replaced by the IPv4 address once the groups are known.
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  if ([...head, ...rest].some(Number.isNaN)) return undefined;
  let groups: number[];
  if (halves.length === 2) {
    const missing = 8 - head.length - rest.length;
    if (missing < 1) return undefined;
    groups = [...head, ...new Array<number>(missing).fill(0), ...rest];
  } else {
    groups = head;
  }
  if (groups.length !== 8) return undefined;
  if (tail.length) groups.splice(6, 2, ...tail);
  return groups;
}

function v4Kind(value: number): NonPublicKind | undefined {
  for (const [base, bits, kind] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    const start = parseIpv4(base)!;
    if (value >= start && value < start + size) return kind;
  }
  return undefined;
}

function v6Kind(g: number[]): NonPublicKind | undefined {
  const embeddedV4 = (hi: number, lo: number) => hi * 65536 + lo;
  if (g.every((x) => x === 0)) return 'unspecified';
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return 'loopback';
  // ::ffff:a.b.c.d, an IPv4 address written as IPv6.
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return v4Kind(embeddedV4(g[6], g[7]));
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local';
  if ((g[0] & 0xfe00) === 0xfc00) return 'private';
  if ((g[0] & 0xff00) === 0xff00) return 'multicast';
  // Global unicast is 2000::/3; everything else is unassigned or special.
  if ((g[0] & 0xe000) !== 0x2000) return 'reserved';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'documentation';
  if (g[0] === 0x3fff && (g[1] & 0xf000) === 0) return 'documentation';
  // 2001::/23: IETF protocol assignments (Teredo, benchmarking, ORCHID, ...).
  if (g[0] === 0x2001 && g[1] < 0x0200) return 'reserved';
  // 6to4 carries an IPv4 address in its second and third groups.
  if (g[0] === 0x2002) return v4Kind(embeddedV4(g[1], g[2]));
  return undefined;
}

/**
 * Why `address` (an IPv4 or IPv6 literal) is not a public unicast address, or undefined when
 * it is. Text that is no IP address at all counts as `reserved`.
 */
export function nonPublicKind(address: string): NonPublicKind | undefined {
  const v4 = parseIpv4(address);
  if (v4 !== undefined) return v4Kind(v4);
  const v6 = parseIpv6(address);
  if (v6 !== undefined) return v6Kind(v6);
  return 'reserved';
}

/** True when `address` is an IP literal (v4 dotted quad or v6, brackets allowed). */
export function isIpLiteral(address: string): boolean {
  return parseIpv4(address) !== undefined || parseIpv6(address) !== undefined;
}
