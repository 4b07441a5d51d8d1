/**
 * Where an event webhook may go: an http: or https: URL whose host resolves only to public
 * addresses (docs/event-webhooks.md, "Addresses"). Checked when an endpoint is created or its
 * URL changed, and again before every attempt, whose connection is then pinned to the address
 * checked (so a DNS answer that changes in between cannot send it to an internal host).
 */
import { lookup } from 'node:dns/promises';
import { isIpLiteral, nonPublicKind } from '../domain/networkAddresses.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Every address a host name resolves to (dns.lookup with all: true); injectable for tests. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Why a URL may not be used; the message completes "url ..." (docs/api.md validation messages). */
export class WebhookUrlRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookUrlRefused';
  }
}

/** Parses `text` as an http: or https: URL without credentials; throws WebhookUrlRefused. */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new WebhookUrlRefused('must be an absolute URL such as https://example.com/webhooks');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new WebhookUrlRefused('must use https: or http:');
  if (!url.hostname) throw new WebhookUrlRefused('must name a host');
  return url;
}

/** The host of a URL as a resolver or a socket wants it: IPv6 literals without brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Resolves the URL's host (an IP literal is its own answer) and, unless `allowPrivate`,
 * refuses it when any address is not public. Returns the addresses, the first one to connect to.
 */
export async function resolveWebhookHost(url: URL, opts: { resolver: HostResolver; allowPrivate: boolean }): Promise<ResolvedAddress[]> {
  const host = hostOf(url);
  let addresses: ResolvedAddress[];
  if (isIpLiteral(host)) {
    addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    try {
      addresses = await opts.resolver(host);
    } catch (err) {
      throw new WebhookUrlRefused(`host ${host} could not be resolved (${(err as { code?: string }).code ?? (err as Error).message})`);
    }
    if (addresses.length === 0) throw new WebhookUrlRefused(`host ${host} could not be resolved`);
  }
  if (!opts.allowPrivate) {
    for (const { address } of addresses) {
      const kind = nonPublicKind(address);
      if (!kind) continue;
      const which = address === host ? `${address} is ${kind}` : `${host} resolves to ${address}, ${kind}`;
      throw new WebhookUrlRefused(`must not point to a loopback, private, link-local or other non-public address (${which})`);
    }
  }
  return addresses;
}
